"""Pretraining BERT with its two original objectives, masked language modeling and next-sentence prediction.

data (documents -> sentence pairs -> masked batches) -> objective (the model and its loss) -> training (the loop,
checkpoints, resume, `torchrun` DDP) -> evaluation (held-out accuracies against the unigram baseline). The masking
rule itself lives in `bertviz_app.masking`, shared with the app's "what pretraining sees" view.
"""

from .data import (IS_NEXT, NOT_NEXT, PairExample, PretrainingBatch, SentencePairDataset, collate, load_token_corpus,
                   read_documents, save_token_corpus, tokenize_documents)
from .evaluation import Evaluation, add_evaluate_arguments, evaluate, run_evaluate
from .objective import PretrainingObjective, build_model, init_mlm_head, token_counts, unigram_log_prior
from .settings import PretrainSettings
from .training import (TRAINER_STATE, add_pretrain_arguments, configure_optimizer, latest_checkpoint,
                       linear_schedule, main, run_pretrain, setup_distributed)

__all__ = ["IS_NEXT", "NOT_NEXT", "TRAINER_STATE", "Evaluation", "PairExample", "PretrainSettings",
           "PretrainingBatch", "PretrainingObjective", "SentencePairDataset", "add_evaluate_arguments",
           "add_pretrain_arguments", "build_model", "collate", "configure_optimizer", "evaluate", "init_mlm_head", "latest_checkpoint",
           "linear_schedule", "load_token_corpus", "main", "read_documents", "run_evaluate", "run_pretrain", "save_token_corpus", "setup_distributed",
           "token_counts", "tokenize_documents", "unigram_log_prior"]
