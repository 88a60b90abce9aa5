"""The fine-tuning heads on the same encoder: a sentence (or pair) classifier, a tagger, and a question-answering span head,
named and laid out as transformers' BertFor* classes so that their checkpoints load as they are."""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor, nn

from ..config import BertConfig
from .bert import BertModel, BertPreTrainedModel
from .outputs import ClassifierOutput, QuestionAnsweringOutput

# ------------------------------------------------------------------------------------------------------------------
# Fine-tuning heads
# ------------------------------------------------------------------------------------------------------------------
def _classifier_dropout(config: BertConfig) -> nn.Dropout:
    p = config.classifier_dropout if config.classifier_dropout is not None else config.hidden_dropout_prob
    return nn.Dropout(p)


class _LinearClassifier(BertPreTrainedModel):
    """The encoder, dropout and one linear layer scoring `num_labels` classes (named as transformers' checkpoints
    name them): of the whole input (on the pooler) or of each token (no pooler)."""

    labelled = True  # config.json's id2label names its classes

    def __init__(self, config: BertConfig, add_pooling_layer: bool):
        super().__init__()
        self.config = config
        self.num_labels = config.num_labels
        self.bert = BertModel(config, add_pooling_layer=add_pooling_layer)
        self.dropout = _classifier_dropout(config)
        self.classifier = nn.Linear(config.hidden_size, config.num_labels)
        self.init_weights()


class BertForSequenceClassification(_LinearClassifier):
    """A linear layer on the pooler output. The loss follows config.problem_type as transformers does: by default
    num_labels == 1 is regression (mean squared error), integer labels are single-label classification (cross
    entropy) and float labels of shape (B, num_labels) are multi-label classification (binary cross entropy)."""

    def __init__(self, config: BertConfig):
        super().__init__(config, add_pooling_layer=True)

    def forward(self, input_ids: Tensor | None = None, token_type_ids: Tensor | None = None,
                attention_mask: Tensor | None = None, labels: Tensor | None = None, **kwargs) -> ClassifierOutput:
        base = self.bert(input_ids, token_type_ids, attention_mask, **kwargs)
        logits = self.classifier(self.dropout(base.pooler_output))  # (B, num_labels)
        loss = None
        if labels is not None:
            problem = self.config.problem_type
            if problem is None:
                problem = ("regression" if self.num_labels == 1 else "single_label_classification"
                           if not labels.is_floating_point() else "multi_label_classification")
            if problem == "regression":
                # Flattened on both sides: labels of shape (B,) and (B, 1) must not broadcast into a (B, B) loss.
                target_shape = (-1,) if self.num_labels == 1 else (-1, self.num_labels)
                loss = F.mse_loss(logits.float().reshape(target_shape), labels.float().reshape(target_shape))
            elif problem == "single_label_classification":
                loss = F.cross_entropy(logits.float(), labels.flatten())
            else:
                loss = F.binary_cross_entropy_with_logits(logits.float(), labels.float())
        return ClassifierOutput(**vars(base), logits=logits, loss=loss)


class BertForTokenClassification(_LinearClassifier):
    """A linear layer on every token's last hidden state (tagging, named entities)."""

    def __init__(self, config: BertConfig):
        super().__init__(config, add_pooling_layer=False)

    def forward(self, input_ids: Tensor | None = None, token_type_ids: Tensor | None = None,
                attention_mask: Tensor | None = None, labels: Tensor | None = None, **kwargs) -> ClassifierOutput:
        base = self.bert(input_ids, token_type_ids, attention_mask, **kwargs)
        logits = self.classifier(self.dropout(base.last_hidden_state))  # (B, T, num_labels)
        loss = None
        if labels is not None:
            loss = F.cross_entropy(logits.flatten(0, 1).float(), labels.flatten(), ignore_index=-100)
        return ClassifierOutput(**vars(base), logits=logits, loss=loss)


class BertForQuestionAnswering(BertPreTrainedModel):
    """Span extraction: a start and an end logit for every token."""

    labelled = False

    def __init__(self, config: BertConfig):
        super().__init__()
        self.config = config
        self.bert = BertModel(config, add_pooling_layer=False)
        self.qa_outputs = nn.Linear(config.hidden_size, 2)
        self.init_weights()

    def forward(self, input_ids: Tensor | None = None, token_type_ids: Tensor | None = None,
                attention_mask: Tensor | None = None, start_positions: Tensor | None = None,
                end_positions: Tensor | None = None, **kwargs) -> QuestionAnsweringOutput:
        base = self.bert(input_ids, token_type_ids, attention_mask, **kwargs)
        start_logits, end_logits = self.qa_outputs(base.last_hidden_state).unbind(-1)  # (B, T) each
        loss = None
        if start_positions is not None and end_positions is not None:
            T = start_logits.shape[1]
            # Positions outside the input are ignored, as transformers does.
            start = start_positions.flatten().clamp(0, T)
            end = end_positions.flatten().clamp(0, T)
            loss = (F.cross_entropy(start_logits.float(), start, ignore_index=T)
                    + F.cross_entropy(end_logits.float(), end, ignore_index=T)) / 2
        return QuestionAnsweringOutput(**vars(base), start_logits=start_logits, end_logits=end_logits, loss=loss)
