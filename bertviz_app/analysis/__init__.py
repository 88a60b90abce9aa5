"""Pure functions from the arrays of a `Run` to the numbers the views show. No plotting, no model: every function
takes numpy arrays (or an `Encoding`) and returns numpy arrays, dataclasses or pandas tables."""

from .attention import (HEAD_STATISTICS, SEGMENT_FILTERS, HeadStatistics, QueryKey, attention_rollout, check_index,
                        head_statistics, query_key, segment_block, tidy_frame, token_attention,
                        write_tidy_csv)
from .compare import AttentionDifference, compare_attentions, paired_layer
from .embeddings import (embedding_parts, first_positions, pca_2d, position_path, position_similarity,
                         segment_comparison)
from .flow import FLOW_MAX_TOKENS, attention_flow, mixed_attention
from .faithfulness import aopc, average_ranks, curve_inputs, faithfulness_table, removal_order, spearman
from .hidden import hidden_norms, hidden_projection, layer_similarity, token_similarity
from .tokens import token_table
from .value_weighted import value_norms, value_weighted_attention, value_weighted_shares
from .words import Words, group_words, word_attention

__all__ = ["aopc", "curve_inputs", "removal_order", "AttentionDifference", "FLOW_MAX_TOKENS", "attention_flow", "mixed_attention", "HEAD_STATISTICS", "HeadStatistics", "QueryKey", "SEGMENT_FILTERS", "Words",
           "attention_rollout", "average_ranks", "check_index", "compare_attentions",
           "embedding_parts", "faithfulness_table", "paired_layer", "first_positions", "group_words", "head_statistics",
           "hidden_norms", "hidden_projection", "layer_similarity", "pca_2d", "position_path",
           "position_similarity", "query_key", "segment_block", "segment_comparison", "spearman",
           "tidy_frame",
           "token_attention", "token_similarity", "token_table", "value_norms", "value_weighted_attention",
           "value_weighted_shares", "word_attention", "write_tidy_csv"]
