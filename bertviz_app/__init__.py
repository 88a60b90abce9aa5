"""bertviz-app: see inside BERT. `bertviz_app.load().run("The cat sat on the mat.")` is the way in."""

from .checkpoint import CheckpointError, load_model, save_pretrained
from .config import BertConfig, ConfigError
from .corpus import Corpus, CorpusError, build_corpus, open_corpus
from .explorer import Explorer, load
from .finetuning import finetune
from .model import (BertForPreTraining, BertForQuestionAnswering, BertForSequenceClassification,
                    BertForTokenClassification, BertModel)
from .run import Run
from .timeline import open_timeline
from .tokenizer import Encoding, Tokenizer

__version__ = "0.1.0"
__all__ = ["BertConfig", "Corpus", "CorpusError", "build_corpus", "open_corpus", "BertForPreTraining", "BertForQuestionAnswering", "BertForSequenceClassification",
           "BertForTokenClassification", "BertModel", "CheckpointError", "ConfigError", "Encoding", "Explorer",
           "Run", "Tokenizer", "finetune", "load", "load_model", "open_timeline", "save_pretrained"]
