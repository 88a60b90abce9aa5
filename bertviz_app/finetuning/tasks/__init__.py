"""The fine-tuning tasks, one object each (base.py says what a task is made of), registered here by name. A new task
is one file beside these and one line in TASKS (docs/ARCHITECTURE.md, "ways in")."""

from .base import IGNORE, NO_PIECES, PAST_LENGTH, Batch, Feature, Task, TaskObjective
from .question_answering import QA_WINDOW, AnswerPrediction, QuestionAnswering, answer_f1, best_span, normalize_answer
from .text_classification import ClassPrediction, TextClassification, class_scores
from .token_classification import TagPrediction, TokenClassification, WordTag, entity_scores, is_bio

TASKS: dict[str, Task] = {task.name: task for task in (
    TextClassification(),
    TokenClassification(),
    QuestionAnswering(),
)}

__all__ = ["IGNORE", "NO_PIECES", "PAST_LENGTH", "QA_WINDOW", "TASKS", "AnswerPrediction", "Batch", "ClassPrediction",
           "Feature", "QuestionAnswering", "TagPrediction", "Task", "TaskObjective", "TextClassification",
           "TokenClassification", "WordTag", "answer_f1", "best_span", "class_scores", "entity_scores", "is_bio",
           "normalize_answer"]
