"""Fine-tuning BERT for a task: text classification (one text or a pair), token classification, extractive question
answering.

data (strict readers of CSV/TSV/JSONL, CoNLL, SQuAD; the built-in recipes fetched on first use) -> tasks (features,
loss, held-out metrics, one input's answer) -> training (`finetune()`: the shared loop of bertviz_app.training, the
best epoch kept, a Hugging Face folder with metrics.json written all at once).
"""

from .data import DataError, QAExample, TaggedExample, TextExample, read_squad, read_tagged_examples, read_text_examples
from .recipes import RECIPES, RecipeError, cache_dir, load_recipe
from .settings import FinetuneSettings
from .tasks import (TASKS, AnswerPrediction, ClassPrediction, TagPrediction, Task, WordTag, answer_f1,
                    entity_scores, normalize_answer)
from .training import FineTuneResult, add_finetune_arguments, finetune, main, run_finetune, seed_summary

__all__ = ["RECIPES", "TASKS", "AnswerPrediction", "ClassPrediction", "DataError", "FineTuneResult", "FinetuneSettings",
           "QAExample", "RecipeError", "TagPrediction", "Task", "TaggedExample", "TextExample", "WordTag", "add_finetune_arguments",
           "answer_f1", "cache_dir", "entity_scores", "finetune", "load_recipe", "main", "normalize_answer",
           "read_squad", "read_tagged_examples", "read_text_examples", "run_finetune", "seed_summary"]
