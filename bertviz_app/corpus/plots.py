"""`corpus.plot.*`: the corpus's questions as plotly figures (figures/corpus.py draws them), for notebooks and the
app's static side."""

from __future__ import annotations

import numpy as np

from ..figures import head_map_figure
from ..figures.corpus import heads_scatter_figure, point_map_figure, positional_profile_figure, probe_figure, tag_links_figure

SUMMARY_STATISTICS = ("entropy", "distance", "cls", "sep", "self", "previous", "next", "punctuation")


class CorpusPlots:
    def __init__(self, corpus):
        self.corpus = corpus

    def head_summary(self, statistic: str = "entropy"):
        """The layer x head grid of the corpus's head summary, each tile named by its role."""
        summary = self.corpus.head_summary()
        shape = (self.corpus.num_layers, self.corpus.num_heads)
        stats = {name: summary[name].to_numpy().reshape(shape) for name in SUMMARY_STATISTICS}
        return head_map_figure(stats, summary["role"].to_numpy().reshape(shape), statistic,
                               title=f"Heads over {len(self.corpus):,} sentences")

    def positional_profile(self, layer: int, head: int):
        profile = self.corpus.positional_profile(layer, head)
        return positional_profile_figure(profile["offset"], profile["attention"].to_numpy(), layer, head)

    def tag_links(self, layer: int, head: int, top: int = 20):
        links = self.corpus.tag_links(layer, head)
        return tag_links_figure(list(links["from_tag"]), list(links["to_tag"]), links["lift"].to_numpy(),
                                links["share"].to_numpy(), layer, head, top)

    def qk_map(self, layer: int, head: int, n: int | None = 20_000, color: str = "kind"):
        """The joint query/key map; `color`: "kind" (query or key), "tag", "position" or "piece"."""
        points = self.corpus.qk_map(layer, head, n)
        sentences = self.corpus.sentences["text"]
        hover = [f"{kind} {piece!s} (sentence {s}, position {p}): {sentences.get(s, '')[:80]}"
                 for kind, piece, s, p in zip(points["kind"], points["piece"], points["sentence"], points["position"])]
        categories = points[color] if color != "position" else np.minimum(points["position"], 20)
        symbols = np.where(points["kind"] == "query", "circle", "diamond")
        return point_map_figure(points["x"].to_numpy(), points["y"].to_numpy(), categories, hover,
                                title=f"Layer {layer}, head {head}: queries and keys of {len(points) // 2:,} tokens",
                                colour_title=color, symbols=symbols)

    def sentence_map(self, layer: int = -1, pooling: str = "cls", color: str = "label"):
        """The sentence map; `color`: "label", "prediction" or "error" (a fine-tuned classifier's)."""
        points = self.corpus.sentence_map(layer, pooling)
        if color not in points:
            raise ValueError(f"this corpus has no {color!r} to colour by; choose one of "
                             f"{', '.join(c for c in ('label', 'prediction', 'error') if c in points)}")
        hover = [f"{s}: {text[:100]}" for s, text in zip(points["sentence"], points["text"])]
        return point_map_figure(points["x"].to_numpy(), points["y"].to_numpy(), points[color], hover,
                                title=f"{len(points):,} sentences by their {pooling} vector", colour_title=color)

    def heads_scatter(self, x: str = "previous", y: str = "entropy"):
        """Every head as a point on two of its statistics over the corpus (the head summary's columns), coloured by
        role; hover names the head."""
        summary = self.corpus.head_summary()
        for name in (x, y):
            if name not in summary or name.endswith("_spread") or name in ("layer", "head", "tokens", "role"):
                from .sources import CorpusError
                raise CorpusError(f"a heads scatter plots two statistics of the head summary, not {name!r}")
        return heads_scatter_figure(summary[x].to_numpy(), summary[y].to_numpy(), summary["layer"].to_numpy(),
                                    summary["head"].to_numpy(), summary["role"].to_numpy(), x, y,
                                    title=f"Every head over {len(self.corpus):,} sentences")

    def probe(self, targets=("tag", "position", "recurs"), control: bool = True):
        """What each layer knows: accuracy and selectivity of a linear probe per layer, one line per target (the
        targets this corpus lacks, such as tags in an untagged corpus, are left out; none left is refused)."""
        from .sources import CorpusError
        targets = [targets] if isinstance(targets, str) else list(targets)
        frames, missing = [], []
        for target in targets:
            try:
                frames.append(self.corpus.probe(target, control=control))
            except CorpusError as error:
                missing.append(str(error))
        if not frames:
            raise CorpusError(missing[0] if len(missing) == 1 else "; ".join(missing))
        return probe_figure(frames, title=f"What each layer knows, over {len(self.corpus):,} sentences")
