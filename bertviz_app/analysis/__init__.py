"""Pure functions from the arrays of a `Run` to the numbers the views show. No plotting, no model: every function
takes numpy arrays (or an `Encoding`) and returns numpy arrays, dataclasses or pandas tables."""

from .attention import (HEAD_STATISTICS, SEGMENT_FILTERS, HeadStatistics, QueryKey, attention_frame,
                        attention_rollout, check_index, head_statistics, query_key, segment_block, token_attention)
from .embeddings import (embedding_parts, first_positions, pca_2d, position_path, position_similarity,
                         segment_comparison)
from .hidden import hidden_norms, hidden_projection, layer_similarity, token_similarity
from .tokens import token_table

__all__ = ["HEAD_STATISTICS", "HeadStatistics", "QueryKey", "SEGMENT_FILTERS", "attention_frame",
           "attention_rollout", "check_index", "embedding_parts", "first_positions", "head_statistics",
           "hidden_norms", "hidden_projection", "layer_similarity", "pca_2d", "position_path",
           "position_similarity", "query_key", "segment_block", "segment_comparison", "token_attention",
           "token_similarity", "token_table"]
