"""The serving pass: BertModel's forward pass with every output an analysis reads, as the explorer runs it for new
inputs, traced by TorchScript on the CPU where the trace gives the Python pass's numbers bit for bit. It sits beside
the model, not inside it: model/bert.py is the paper's BERT, read top to bottom; this is how a server calls it."""

from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from .config import BertConfig
from .model import BertModel, BertModelOutput

log = logging.getLogger(__name__)


class AnalysisPass(nn.Module):
    """BertModel's forward pass capturing the points `capture` names (a Run's: `Run.POINTS`; the pooler where there is
    one), returned as a tuple in the order of `names`, the form `torch.jit.trace` records; `output` names them
    again. See `analysis_pass`."""

    def __init__(self, bert: BertModel, capture: tuple[str, ...]):
        super().__init__()
        self.bert = bert
        wanted = bert.points(capture + (("pooler",) if bert.pooler is not None else ())).capture
        self.names = [name for name in bert.point_names() if name in wanted]

    def forward(self, ids: Tensor, segments: Tensor, mask: Tensor) -> tuple[Tensor, ...]:
        captured = self.bert(ids, segments, mask, capture=self.names).captured
        return tuple(captured[name] for name in self.names)

    def output(self, flat: tuple[Tensor, ...]) -> BertModelOutput:
        captured = dict(zip(self.names, flat, strict=True))
        last = captured[f"layer.{self.bert.config.num_hidden_layers - 1}.output"]
        return BertModelOutput(last, captured.get("pooler"), captured)


@dataclass
class TracedPass:
    """`pass_(ids, segments, mask) -> BertModelOutput`, for inference (no gradients): the TorchScript trace of
    `module` where `analysis_pass` could make one that holds, else `module` in Python."""

    module: AnalysisPass
    script: torch.jit.ScriptModule | None = None

    @property
    def traced(self) -> bool:
        return self.script is not None

    def __call__(self, ids: Tensor, segments: Tensor, mask: Tensor) -> BertModelOutput:
        run = self.module if self.script is None else self.script
        with torch.inference_mode():
            return self.module.output(run(ids, segments, mask))


def analysis_pass(bert: BertModel, capture: tuple[str, ...]) -> TracedPass:
    """The pass of new inputs, traced by TorchScript on the CPU. In Python each of the pass's ~600 operations gives up
    the GIL and takes it back, and beside a busy Python thread (a server's event loop, another visitor's payload)
    every retake waits: a 36-token pass of the default model took 271 ms instead of 14 there, 31 ms traced, whose
    whole pass runs in C++. The trace is recorded on a padded pair (the masked path, which adds a zero bias where
    Python skips it) and must give the Python pass's numbers bit for bit on other lengths and batch sizes; where it
    cannot (DeBERTa's relative positions are cut by Python integers, a failed trace, any difference) the pass stays
    in Python. Not on a GPU: there the trace's fuser may round differently after its first runs, and kernel launches
    do not wait for the GIL anyway."""
    module = AnalysisPass(bert, capture).eval()
    if bert.config.relative_attention or next(bert.parameters()).device.type != "cpu":
        return TracedPass(module)
    try:
        script = _exact_trace(module, bert.config)
    except Exception as err:  # noqa: BLE001 (a model TorchScript cannot trace runs in Python, as before)
        log.info("the analysis pass stays in Python: %s", err)
        return TracedPass(module)
    return TracedPass(module, script)


def _exact_trace(module: AnalysisPass, config: BertConfig) -> torch.jit.ScriptModule:
    """`module` traced on a padded pair; raises unless it matches the Python pass exactly on other shapes."""
    pad = config.pad_token_id or 0
    token = next(i for i in range(3, config.vocab_size) if i != pad)

    def batch(lengths):
        lengths = [max(1, min(n, config.max_tokens)) for n in lengths]
        T = max(lengths)
        ids = torch.tensor([[token] * n + [pad] * (T - n) for n in lengths])
        mask = torch.tensor([[1] * n + [0] * (T - n) for n in lengths])
        return ids, torch.zeros_like(ids), mask

    with torch.inference_mode(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # jit.trace's deprecation notice, and its notes on traced constants
        script = torch.jit.trace(module, batch([6, 4]), check_trace=False)
        for lengths in ([9], [3, 11, 7], [2]):
            inputs = batch(lengths)
            if not all(torch.equal(a, b) for a, b in zip(module(*inputs), script(*inputs), strict=True)):
                raise ValueError(f"the trace differs from the Python pass on lengths {lengths}")
    return script

