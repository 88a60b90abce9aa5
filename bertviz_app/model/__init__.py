"""BERT in PyTorch (`bert.py`, top to bottom as data flows: embeddings, attention, layers, encoder, pooler, the
pretraining heads), what it returns (`outputs.py`), and the fine-tuning heads on the same encoder
(`finetuning_heads.py`), and its named points (`points.py`). Everything above imports from here."""

from .bert import (ACTIVATIONS, BertAttention, BertEmbeddings, BertEncoder, BertForPreTraining, BertIntermediate,
                   BertLayer, BertLMPredictionHead, BertModel, BertOutput, BertPooler, BertPredictionHeadTransform,
                   BertPreTrainedModel, BertPreTrainingHeads, BertSelfAttention, BertSelfOutput, RelativePositions,
                   ReplacedTokenHead, relative_position_index)
from .finetuning_heads import BertForQuestionAnswering, BertForSequenceClassification, BertForTokenClassification
from .outputs import BertModelOutput, BertPreTrainingOutput, ClassifierOutput, QuestionAnsweringOutput
from .points import POINTS, Edit, Points

__all__ = ["ACTIVATIONS", "BertAttention", "BertEmbeddings", "BertEncoder", "BertForPreTraining",
           "BertForQuestionAnswering", "BertForSequenceClassification", "BertForTokenClassification",
           "BertIntermediate", "BertLayer", "BertLMPredictionHead", "BertModel", "BertModelOutput", "BertOutput",
           "BertPooler", "BertPredictionHeadTransform", "BertPreTrainedModel", "BertPreTrainingHeads",
           "BertPreTrainingOutput", "BertSelfAttention", "BertSelfOutput", "ClassifierOutput", "Edit",
           "POINTS", "Points", "QuestionAnsweringOutput", "RelativePositions", "ReplacedTokenHead", "relative_position_index"]
