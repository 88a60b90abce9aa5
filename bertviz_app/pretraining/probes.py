"""Fill-in probes a teacher would try (assets/probes.json): one [MASK] per sentence, the accepted words, and top-1 /
top-5 accuracy per group, so that a model's everyday knowledge and grammar are measured, not anecdotes."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from ..catalog import ASSETS
from ..masked_lm import fill_mask
from ..model import BertForPreTraining
from ..tokenizer import Tokenizer

PROBES_PATH = ASSETS / "probes.json"


@dataclass
class Probe:
    group: str
    kind: str  # "fact" or "grammar"
    text: str
    answers: tuple[str, ...]


@dataclass
class ProbeResult:
    probe: Probe
    predictions: list[tuple[str, float]]  # the top 5, best first

    @property
    def top1(self) -> bool:
        return self.predictions[0][0] in self.probe.answers

    @property
    def top5(self) -> bool:
        return any(token in self.probe.answers for token, _ in self.predictions[:5])

    @property
    def copies(self) -> bool:
        """The first choice repeats a word of the sentence itself, and that word is not an answer ("Bees make
        [MASK]." -> bees)."""
        return copies_sentence(self.probe, self.predictions[0][0])


def sentence_words(text: str) -> set[str]:
    """The lower-cased words of a probe's text, [MASK] left out."""
    return set(re.findall(r"[a-z0-9']+", text.replace("[MASK]", " ").lower()))


def copies_sentence(probe: Probe, token: str) -> bool:
    """Whether `token` (a predicted word piece) is a word of the probe's own sentence but not an accepted answer."""
    return token not in probe.answers and token.lower() in sentence_words(probe.text)


def copy_rate(results: list[ProbeResult]) -> float:
    """Share of the probes whose first choice copies a word of the sentence (ProbeResult.copies)."""
    return sum(r.copies for r in results) / len(results) if results else 0.0


def load_probes(tokenizer: Tokenizer, path: Path = PROBES_PATH) -> list[Probe]:
    """The probes of `path`, checked against the vocabulary: one [MASK] each, and every answer one word piece (an
    answer the model cannot produce would count against it silently)."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    probes = []
    for group, spec in data["groups"].items():
        for item in spec["probes"]:
            if item["text"].count("[MASK]") != 1:
                raise ValueError(f"probe {item['text']!r} needs exactly one [MASK]")
            unknown = [a for a in item["answers"] if a not in tokenizer.vocab]
            if unknown:
                raise ValueError(f"probe {item['text']!r}: {unknown} not single word pieces of the vocabulary")
            probes.append(Probe(group, spec["kind"], item["text"], tuple(item["answers"])))
    return probes


def run_probes(model: BertForPreTraining, tokenizer: Tokenizer, probes: list[Probe]) -> list[ProbeResult]:
    return [ProbeResult(p, fill_mask(model, tokenizer, tokenizer.encode(p.text, max_tokens=model.config.max_tokens),
                                     top_k=5)[0]) for p in probes]


def summarize(results: list[ProbeResult]) -> dict[str, dict[str, float]]:
    """{group or kind: {"top1", "top5", "probes"}}, groups first in file order, then "fact" and "grammar"."""
    keys = list(dict.fromkeys(r.probe.group for r in results)) + list(dict.fromkeys(r.probe.kind for r in results))
    summary = {}
    for key in keys:
        chosen = [r for r in results if key in (r.probe.group, r.probe.kind)]
        summary[key] = {"top1": sum(r.top1 for r in chosen) / len(chosen),
                        "top5": sum(r.top5 for r in chosen) / len(chosen), "probes": len(chosen)}
    return summary
