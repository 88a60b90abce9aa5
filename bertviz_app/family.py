"""The BERT family's checkpoints in BERT's layout, and what each member lacks or adds, in words.

Our model keeps BERT's attribute names for every member (model/bert.py), so a family checkpoint is read by renaming its
keys: `roberta.encoder.layer.0...` -> `bert.encoder.layer.0...`, DistilBERT's `q_lin` -> `query`, ALBERT's layer
group -> the one shared layer, each family's heads -> `cls.predictions`, `cls.seq_relationship` (ALBERT's
sentence-order head) or `cls.discriminator` (ELECTRA's). The renaming is a list of regular expressions per family,
applied in order to every key; BERT's own keys pass unchanged.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

_LAYER = r"(bert\.encoder\.layer\.\d+\.)"

# (pattern, replacement) applied in order with re.sub; ^ anchors, so a rule renames a key once.
KEY_RULES: dict[str, tuple[tuple[str, str], ...]] = {
    "roberta": (
        (r"^roberta\.", "bert."),
        (r"^lm_head\.dense\.", "cls.predictions.transform.dense."),
        (r"^lm_head\.layer_norm\.", "cls.predictions.transform.LayerNorm."),
        (r"^lm_head\.decoder\.", "cls.predictions.decoder."),
        (r"^lm_head\.bias$", "cls.predictions.bias"),
    ),
    "distilbert": (
        (r"^(distilbert\.)?transformer\.layer\.", "bert.encoder.layer."),
        (r"^distilbert\.", "bert."),
        (_LAYER + r"attention\.q_lin\.", r"\1attention.self.query."),
        (_LAYER + r"attention\.k_lin\.", r"\1attention.self.key."),
        (_LAYER + r"attention\.v_lin\.", r"\1attention.self.value."),
        (_LAYER + r"attention\.out_lin\.", r"\1attention.output.dense."),
        (_LAYER + r"sa_layer_norm\.", r"\1attention.output.LayerNorm."),
        (_LAYER + r"ffn\.lin1\.", r"\1intermediate.dense."),
        (_LAYER + r"ffn\.lin2\.", r"\1output.dense."),
        (_LAYER + r"output_layer_norm\.", r"\1output.LayerNorm."),
        (r"^vocab_transform\.", "cls.predictions.transform.dense."),
        (r"^vocab_layer_norm\.", "cls.predictions.transform.LayerNorm."),
        (r"^vocab_projector\.weight$", "cls.predictions.decoder.weight"),
        (r"^vocab_projector\.bias$", "cls.predictions.bias"),
    ),
    "albert": (
        (r"^(albert\.)?encoder\.embedding_hidden_mapping_in\.", "bert.embeddings_project."),
        # One layer per group (config.py refuses inner_group_num > 1): the group is the shared layer.
        (r"^(albert\.)?encoder\.albert_layer_groups\.(\d+)\.albert_layers\.0\.", r"bert.encoder.layer.\2."),
        (r"^(albert\.)?pooler\.", "bert.pooler.dense."),  # ALBERT's pooler is the Linear itself
        (r"^albert\.", "bert."),
        (_LAYER + r"attention\.(query|key|value)\.", r"\1attention.self.\2."),
        (_LAYER + r"attention\.dense\.", r"\1attention.output.dense."),
        (_LAYER + r"attention\.LayerNorm\.", r"\1attention.output.LayerNorm."),
        (_LAYER + r"ffn\.", r"\1intermediate.dense."),
        (_LAYER + r"ffn_output\.", r"\1output.dense."),
        (_LAYER + r"full_layer_layer_norm\.", r"\1output.LayerNorm."),
        (r"^predictions\.dense\.", "cls.predictions.transform.dense."),
        (r"^predictions\.LayerNorm\.", "cls.predictions.transform.LayerNorm."),
        (r"^predictions\.decoder\.", "cls.predictions.decoder."),
        (r"^predictions\.bias$", "cls.predictions.bias"),
        (r"^sop_classifier\.classifier\.", "cls.seq_relationship."),
    ),
    "electra": (
        (r"^(electra\.)?embeddings_project\.", "bert.embeddings_project."),
        (r"^electra\.", "bert."),
        (r"^generator_predictions\.dense\.", "cls.predictions.transform.dense."),
        (r"^generator_predictions\.LayerNorm\.", "cls.predictions.transform.LayerNorm."),
        (r"^generator_lm_head\.weight$", "cls.predictions.decoder.weight"),
        (r"^generator_lm_head\.bias$", "cls.predictions.bias"),
        (r"^discriminator_predictions\.", "cls.discriminator."),
    ),
    "deberta-v2": (
        (r"^deberta\.", "bert."),
        (_LAYER + r"attention\.self\.(query|key|value)_proj\.", r"\1attention.self.\2."),
        # The newer (non-legacy) masked-LM head of transformers: the decoder is the word-embedding matrix itself.
        (r"^lm_predictions\.lm_head\.dense\.", "cls.predictions.transform.dense."),
        (r"^lm_predictions\.lm_head\.LayerNorm\.", "cls.predictions.transform.LayerNorm."),
        (r"^lm_predictions\.lm_head\.bias$", "cls.predictions.bias"),
    ),
}
_COMPILED = {family: tuple((re.compile(p), r) for p, r in rules) for family, rules in KEY_RULES.items()}


def to_bert_key(key: str, model_type: str) -> str:
    """`key` of a `model_type` checkpoint under the name our model gives the same weight (bare `embeddings.`,
    `encoder.` and `pooler.` keys get their `bert.` prefix later, as for BERT)."""
    for pattern, replacement in _COMPILED.get(model_type, ()):
        key = pattern.sub(replacement, key)
    return key


@dataclass(frozen=True)
class FamilyNotes:
    """What a family member lacks or brings, in words for the views."""

    name: str
    lacks: tuple[str, ...]  # sentences: what a BERT view would show and this family has not
    sentence_head: str | None  # what the pooler head on a sentence pair predicts, or None
    shared_layers: bool = False


NOTES = {
    "bert": FamilyNotes("BERT", (), "next-sentence prediction"),
    "roberta": FamilyNotes("RoBERTa", (
        "RoBERTa has no segment B embedding: sentence B gets the same segment row as sentence A, so the segment "
        "part of the embeddings cannot tell the two apart (only the </s></s> between them does).",
        "RoBERTa dropped next-sentence prediction, so it has no next-sentence head.",
        "RoBERTa's positions start at 2 (0 and 1 sit under its padding), so token 0 reads position row 2."),
        None),
    "distilbert": FamilyNotes("DistilBERT", (
        "DistilBERT has no segment embeddings at all: sentence A and B differ only by the [SEP] between them.",
        "DistilBERT has no next-sentence prediction and no pooler: distillation kept only the masked-LM objective.",
        "DistilBERT has half of BERT's layers (it was distilled from a deeper teacher)."), None),
    "albert": FamilyNotes("ALBERT", (
        "ALBERT's layers share their weights: 'layer 3' is the same weights as layer 1 applied a third time, so "
        "when layers are compared, the differences come from the input, not from different parameters.",
        "ALBERT factorizes its embeddings: tokens are embedded in a narrower space and projected up to the hidden "
        "size, so the embedding parts are narrower than the hidden states.",
        "ALBERT predicts sentence order (is B after A, or were they swapped?) where BERT predicts whether B follows "
        "A at all."), "sentence-order prediction", shared_layers=True),
    "electra": FamilyNotes("ELECTRA", (
        "ELECTRA's discriminator has no masked-LM head: it was trained to say, for every token, whether a small "
        "generator replaced it; the 'replaced?' view shows that probability.",
        "ELECTRA has no next-sentence head."), None),
    "deberta-v2": FamilyNotes("DeBERTa", (
        "DeBERTa has no absolute position embedding in its input (v3): position enters the attention scores "
        "instead.",
        "DeBERTa's attention score adds content-to-position and position-to-content terms to query x key "
        "(explorer.score_terms splits them).",
        "DeBERTa has no segment embeddings.",
        "DeBERTa has no next-sentence head."), None),
}


def notes(model_type: str, positions: bool = True, segments: bool = True) -> FamilyNotes:
    """The notes of `model_type`; for DeBERTa, whose v2 and v3 differ, only the lines true of this checkpoint."""
    found = NOTES.get(model_type, NOTES["bert"])
    if model_type != "deberta-v2":
        return found
    lines = tuple(line for line in found.lacks if not (positions and "absolute position" in line)
                  and not (segments and "segment" in line))
    return dataclasses.replace(found, lacks=lines)
