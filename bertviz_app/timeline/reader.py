"""Reading a training timeline: `open_timeline(folder)` gives a `Timeline` (tables of the snapshots, a snapshot's
views, `.plot` figures). Nothing is computed again: a snapshot's views are the payload it stored, drawn by the same
JavaScript as `run.show()`. Snapshots are read lazily and the folder is listed again on each `refresh()`, so a
timeline still growing (a training under way) can be followed."""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .. import views
from ..files import JSON_LIMIT, inside, read_bytes, read_json
from . import format as fmt
from ..probing import TARGETS, ProbeError, probe_data, probe_items
from .inputs import TimelineError, TimelineInput
from .probe_set import ProbeSet

if TYPE_CHECKING:
    import pandas as pd


# A stored payload holds every head's attention for one input of at most MAX_LINE_CHARS characters: 400 tokens of a
# 24-layer, 16-head model are 61 M 8-bit codes before deflate, so no payload a training wrote comes near this.
PAYLOAD_LIMIT = 64 * 2**20


def open_timeline(folder: str | os.PathLike) -> "Timeline":
    """The timeline of a training: `folder` is its output folder (with timeline/ inside) or the timeline folder."""
    folder = Path(folder).expanduser()
    if (folder / fmt.FOLDER / fmt.MANIFEST).is_file():
        folder = folder / fmt.FOLDER
    if not (folder / fmt.MANIFEST).is_file():
        raise TimelineError(f"{folder} holds no training timeline ({fmt.FOLDER}/{fmt.MANIFEST}); train with "
                            "--timeline N (on by default) to make one")
    return Timeline(folder)


@dataclass
class SnapshotRun:
    """One input at one snapshot, as the views draw it: `payload` (the bytes `Run.views_payload()` gives), `show()`
    and `save_html()` as a Run's, the decoded attention, the predictions. No queries or keys: the query/key view has
    nothing to show here."""

    step: int
    index: int
    input: TimelineInput
    payload: bytes
    record: dict  # the input's entry of snapshot.json: tokens, masks, is_next, prediction

    @property
    def tokens(self) -> list[str]:
        return self.record["tokens"]

    @property
    def title(self) -> str:
        text = self.input.text if self.input.text_pair is None else f"{self.input.text} | {self.input.text_pair}"
        return f"{text} · step {self.step}"

    @cached_property
    def decoded(self) -> views.Decoded:
        return views.decode_payload(self.payload)

    @property
    def attentions(self) -> np.ndarray:
        """(L, h, T, T) float32, from the 8-bit codes (each within 1/255 of the model's weight)."""
        return self.decoded.values("attention")

    def attention(self, layer: int, head: int) -> np.ndarray:
        return self.attentions[layer, head]

    @property
    def masks(self) -> list[dict]:
        """Per [MASK]: position, top (five [token, probability]), answer (the watched word's probability)."""
        return self.record.get("masks", [])

    @property
    def is_next(self) -> float | None:
        return self.record.get("is_next")

    @property
    def prediction(self) -> dict | None:
        return self.record.get("prediction")

    def show(self, view: str | None = None, height: int = 760) -> "views.NotebookView":
        """The interactive attention views of this snapshot, inline in a notebook (as `run.show()`)."""
        return views.NotebookView(self.payload, None, title=self.title, height=height, view=view)

    def save_html(self, path: str | os.PathLike, view: str | None = None) -> Path:
        return views.NotebookView(self.payload, None, title=self.title, view=view).save(path)


class Timeline:
    """The snapshots of one training, by step. `steps`: the steps that have a snapshot; `inputs`: what each snapshot
    analysed; `snapshot(step)`: its snapshot.json; `run(step, i)`: input i's views at that step; `frame()`, `heads()`,
    `predictions()`, `onsets()`: tables; `plot`: figures."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self.manifest = self._json(self.folder / fmt.MANIFEST)
        if (not isinstance(self.manifest, dict) or self.manifest.get("format") != fmt.FORMAT
                or self.manifest.get("version") != fmt.VERSION):
            raise TimelineError(f"{self.folder / fmt.MANIFEST} is not a version {fmt.VERSION} training timeline")
        self.inputs = [TimelineInput.from_dict(d) for d in self.manifest["inputs"]]
        self._records: dict[int, dict] = {}
        self._probes: dict[tuple, "pd.DataFrame"] = {}  # (step, target, control) -> its probe's rows
        self.refresh()

    def refresh(self) -> "Timeline":
        """List the snapshots again (a training under way adds them)."""
        self._folders = dict(fmt.snapshot_folders(self.folder))
        return self

    def __repr__(self) -> str:
        return (f"Timeline({self.kind}, {len(self.steps)} snapshots, steps {self.steps[:1]}..{self.steps[-1:]}, "
                f"{len(self.inputs)} inputs)")

    def __len__(self) -> int:
        return len(self._folders)

    @property
    def kind(self) -> str:
        return self.manifest["kind"]

    @property
    def steps(self) -> list[int]:
        return sorted(self._folders)

    def _folder(self, step: int) -> Path:
        if step not in self._folders:
            near = sorted(self._folders, key=lambda s: abs(s - step))[:2]
            raise ValueError(f"no snapshot at step {step}; the nearest are at steps "
                             f"{', '.join(map(str, sorted(near))) or 'none'}")
        return self._folders[step]

    def snapshot(self, step: int) -> dict:
        """The snapshot.json of `step` (format.py lists its keys)."""
        if step not in self._records:
            self._records[step] = self._json(self._folder(step) / fmt.SNAPSHOT)
        return self._records[step]

    def _json(self, path: Path):
        return read_json(inside(self.folder, path, TimelineError), TimelineError, JSON_LIMIT)

    def payload(self, step: int, index: int = 0) -> bytes:
        """The views payload of input `index` at `step`, as stored: a file inside the timeline's folder (no link
        out of it), no larger than PAYLOAD_LIMIT, and a views payload by its own header; TimelineError otherwise.
        Checked here, before `show()`, `save_html()` or the app sends or writes it."""
        self._check_input(index)
        path = self._folder(step) / fmt.payload_name(index)
        blob = read_bytes(self.folder, path, TimelineError, PAYLOAD_LIMIT)
        try:
            views.check_blob(blob)
        except views.PayloadError as err:
            raise TimelineError(f"{path} is {err}: refused") from None
        return blob

    def run(self, step: int, index: int = 0) -> SnapshotRun:
        """Input `index` at snapshot `step`: what the views draw (`.show()`), its attention and predictions."""
        record = self.snapshot(step)["inputs"][self._check_input(index)]
        return SnapshotRun(step, index, self.inputs[index], self.payload(step, index), record)

    def _check_input(self, index: int) -> int:
        if not isinstance(index, int) or not 0 <= index < len(self.inputs):
            raise ValueError(f"input {index!r} is not one of the timeline's inputs (0 to {len(self.inputs) - 1})")
        return index

    def views_data(self, index: int = 0) -> dict:
        """What the views' timeline slider takes for input `index` (views/js/timeline.mjs), but the payloads: the
        steps, and each snapshot's loss, learning rate, roles and this input's predictions (a few hundred bytes a
        snapshot). The payloads go separately, a page at a time (`page_size`, `payloads`): 1,000 snapshots of a
        122-token input are 475 MB of them."""
        self._check_input(index)
        steps = self.steps
        snapshots = []
        for step in steps:
            s = self.snapshot(step)
            snapshots.append({"step": step, "loss": s["loss"], "loss_mean": s["loss_mean"], "lr": s["lr"],
                              "roles": s["roles"], "item": s["inputs"][index]})
        return {"kind": self.kind, "model": self.manifest.get("model", ""),
                "total_steps": self.manifest.get("total_steps"), "labels": self.manifest.get("labels"),
                "input": self.inputs[index].as_dict(), "steps": steps, "snapshots": snapshots}

    def page_size(self, index: int, page_bytes: int) -> int:
        """How many snapshots of input `index` a page of at most `page_bytes` of stored payload holds (at least one),
        from the largest of its payloads on disk: an input's payloads have one shape, so they differ only by what
        deflate makes of them."""
        self._check_input(index)
        largest = 1
        for step in self.steps:
            try:
                largest = max(largest, os.stat(self._folders[step] / fmt.payload_name(index)).st_size)
            except OSError:
                pass  # refused when read
        return max(1, min(len(self.steps), page_bytes // largest))

    def payloads(self, steps, index: int = 0) -> list[bytes]:
        """The stored payloads of input `index` at `steps`, each checked (`payload`)."""
        return [self.payload(step, index) for step in steps]

    # --- tables --------------------------------------------------------------------------------------------------
    def frame(self) -> "pd.DataFrame":
        """One row per snapshot: step, the training's numbers of `format.SCALARS` (loss: that step's batch; loss_mean:
        since the previous snapshot; lr; seconds: what the snapshot took), and how many heads have each role."""
        import pandas as pd

        rows = []
        for step in self.steps:
            s = self.snapshot(step)
            roles = [r for layer in s["roles"] for r in layer]
            rows.append({"step": step, **{name: s.get(name) for name in fmt.SCALARS},
                         **{f"heads {r}": roles.count(r) for r in sorted(set(roles))}})
        return pd.DataFrame(rows).fillna({c: 0 for c in (rows[0] if rows else {}) if c.startswith("heads ")})

    def heads(self) -> "pd.DataFrame":
        """One row per (step, layer, head): step, loss, lr, every statistic of analysis.HEAD_STATISTICS averaged over
        the inputs, entropy_ratio (entropy over the uniform one), role."""
        import pandas as pd

        rows = []
        for step in self.steps:
            s = self.snapshot(step)
            names = list(s["heads"])
            for layer, role_row in enumerate(s["roles"]):
                for head, role in enumerate(role_row):
                    rows.append({"step": step, "loss": s["loss_mean"], "lr": s["lr"], "layer": layer, "head": head,
                                 **{n: s["heads"][n][layer][head] for n in names}, "role": role})
        return pd.DataFrame(rows)

    def roles(self) -> tuple[np.ndarray, np.ndarray]:
        """(steps (S,), roles (S, L, h) labels)."""
        steps = self.steps
        return np.asarray(steps, dtype=np.int64), np.asarray([self.snapshot(s)["roles"] for s in steps], dtype=object)

    def onsets(self) -> "pd.DataFrame":
        """When each head took the role it ends with: one row per head (layer, head, role at the last snapshot,
        since: the first step from which it kept that role to the end)."""
        import pandas as pd

        steps, roles = self.roles()
        rows = []
        if len(steps):
            for layer in range(roles.shape[1]):
                for head in range(roles.shape[2]):
                    final = roles[-1, layer, head]
                    k = len(steps) - 1
                    while k > 0 and roles[k - 1, layer, head] == final:
                        k -= 1
                    rows.append({"layer": layer, "head": head, "role": final, "since": int(steps[k])})
        return pd.DataFrame(rows, columns=["layer", "head", "role", "since"])

    def predictions(self) -> "pd.DataFrame":
        """One row per (step, input, what was predicted): kind "mask" (token, probability for each of the top five,
        watched True for the input's `=> word`), "is_next" (P(IsNext) of a pair), or the task's answer ("label":
        every label's probability; "answer" / "tags": the predicted text with its probability)."""
        import pandas as pd

        rows = []
        for step in self.steps:
            for i, item in enumerate(self.snapshot(step)["inputs"]):
                rows.extend({"step": step, "input": i, **row} for row in _prediction_rows(item, self.inputs[i]))
        return pd.DataFrame(rows, columns=["step", "input", "kind", "mask", "token", "probability", "watched"])

    def series(self, index: int = 0, token: str | None = None) -> dict[str, list[float | None]]:
        """name -> probability at each step of `steps` for input `index`: the watched word at each [MASK] (or
        `token`), P(IsNext) of a pair, a classifier's labels, a tagger's or reader's confidence in its answer."""
        self._check_input(index)
        item = self.inputs[index]
        out: dict[str, list[float | None]] = {}
        for n, step in enumerate(self.steps):
            for row in _prediction_rows(self.snapshot(step)["inputs"][index], item):
                if row["kind"] == "mask":
                    if token is None and not row["watched"]:
                        continue
                    if token is not None and row["token"] != token:
                        continue
                    name = f"P({row['token']}) at [MASK]" + (f" {row['mask'] + 1}" if len(item.answers) > 1 else "")
                else:
                    name = row["token"] if row["kind"] == "label" else row["kind"]
                out.setdefault(name, [None] * len(self.steps))[n] = row["probability"]
        return out

    # --- what each layer knew ---------------------------------------------------------------------------------------
    @cached_property
    def probe_set(self) -> ProbeSet | None:
        """The held-out sentences whose hidden states each snapshot stored (probe_set.py); None without."""
        return ProbeSet.read(self.folder)

    def probe(self, target: str = "tag", layer: int | None = None, control: bool = True,
              steps=None) -> "pd.DataFrame":
        """What each layer knew at each snapshot: probing.py's probe (the corpus probe's, one recipe) of `target`
        ("tag", "label", "position" or "recurs") on the probe set's states, the same items and split at every step.
        One row per (step, layer): step, target, layer (0: the embeddings), accuracy, control_accuracy, selectivity,
        majority. `steps`: those snapshots only (default: every one); each is fitted once and kept."""
        import pandas as pd

        probe_set = self.probe_set
        if probe_set is None:
            raise TimelineError("this timeline has no probe set: a pretraining stores one (the Brown corpus's tagged "
                                "sentences, --timeline-probe) from this version on; train again to have it")
        if target not in TARGETS:
            raise TimelineError(f"a probe's target is one of {', '.join(TARGETS)}, not {target!r}")
        if target == "tag" and not probe_set.tags or target == "label" and not probe_set.labels:
            raise TimelineError(f"this timeline's probe set ({probe_set.source}) has no {target}s; 'position' and "
                                "'recurs' work on any")
        n = probe_set.num_layers + 1
        if layer is not None and not (isinstance(layer, int) and not isinstance(layer, bool) and 0 <= layer < n):
            raise TimelineError(f"layer {layer!r} is not one of this timeline's hidden layers (0 to {n - 1})")
        steps = self.steps if steps is None else sorted(set(self.steps) & set(steps))
        try:
            data = probe_data(probe_set, target)
        except ProbeError as err:
            raise TimelineError(str(err)) from None
        frames = []
        for step in steps:
            key = (step, target, control)
            if not control and (step, target, True) in self._probes:  # the same fits, with the control's beside
                key = (step, target, True)
            if key not in self._probes:
                states = probe_set.snapshot_states(self.folder, self._folder(step))
                frame = probe_items(data, target, range(n), lambda k: states[k][data.rows].astype(np.float64),
                                    control)
                frame.insert(0, "step", step)
                self._probes[key] = frame
            frames.append(self._probes[key])
        columns = ["step", "target", "layer", "accuracy", "control_accuracy", "selectivity", "majority"]
        table = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)
        return table if layer is None else table[table["layer"] == layer].reset_index(drop=True)

    @property
    def plot(self) -> "TimelinePlots":
        return TimelinePlots(self)


def _prediction_rows(item: dict, spec: TimelineInput) -> list[dict]:
    rows = []
    for m, mask in enumerate(item.get("masks", [])):
        watched = spec.answers[m] if m < len(spec.answers) else None
        for token, p in mask["top"]:
            rows.append({"kind": "mask", "mask": m, "token": token, "probability": p, "watched": token == watched})
        if watched is not None and mask.get("answer") is not None and watched not in [t for t, _ in mask["top"]]:
            rows.append({"kind": "mask", "mask": m, "token": watched, "probability": mask["answer"],
                         "watched": True})
    if item.get("is_next") is not None:
        rows.append({"kind": "is_next", "mask": None, "token": "IsNext", "probability": item["is_next"],
                     "watched": False})
    prediction = item.get("prediction")
    if prediction:
        if "probabilities" in prediction:  # a classifier: every label
            rows.extend({"kind": "label", "mask": None, "token": name, "probability": p,
                         "watched": name == spec.gold} for name, p in prediction["probabilities"].items())
        elif "answer" in prediction:  # question answering: the span, with its first and last token's probability
            rows.append({"kind": "answer", "mask": None, "token": prediction["answer"],
                         "probability": prediction["start_probability"] * prediction["end_probability"],
                         "watched": prediction["answer"] == spec.gold})
        elif "words" in prediction:  # tagging: the tags, with the mean of their probabilities
            words = prediction["words"]
            tags = [w["tag"] for w in words]
            rows.append({"kind": "tags", "mask": None, "token": " ".join(tags),
                         "probability": float(np.mean([w["probability"] for w in words])) if words else None,
                         "watched": tags == spec.gold})
    return rows


class TimelinePlots:
    """`timeline.plot.<figure>()`: plotly figures of the snapshots (figures/timeline.py draws them)."""

    def __init__(self, timeline: Timeline):
        self._t = timeline

    def roles(self):
        """Every head's role at every snapshot: when each became a previous-token, [SEP] or broad head."""
        from ..figures.timeline import head_roles_figure

        steps, roles = self._t.roles()
        return head_roles_figure(steps, roles)

    def prediction(self, index: int = 0, token: str | None = None):
        """Input `index`'s prediction by step: the watched word's probability at its [MASK] (or `token`'s, where it
        was in the top five), P(IsNext) of a pair, the task's answer."""
        from ..figures import escape_label
        from ..figures.timeline import prediction_figure

        item = self._t.inputs[self._t._check_input(index)]
        text = item.text if item.text_pair is None else f"{item.text} | {item.text_pair}"
        return prediction_figure(self._t.steps, self._t.series(index, token),
                                 title=f"{escape_label(text)}: prediction by step")

    def probe(self, target: str = "tag", control: bool = False):
        """What each layer knew at each snapshot: a probe's held-out accuracy of `target` by step, one line per
        layer, the majority-class baseline dashed (`Timeline.probe`)."""
        from ..figures.timeline import probe_timeline_figure

        frame = self._t.probe(target, control=control)
        return probe_timeline_figure(frame, self._t.probe_set.describe())

    def loss(self):
        """The mean training loss between snapshots, and the learning rate."""
        from ..figures.timeline import timeline_loss_figure

        frame = self._t.frame()
        if frame.empty:
            return timeline_loss_figure([], [], [])
        return timeline_loss_figure(frame["step"], [None if v != v else v for v in frame["loss_mean"]], frame["lr"])
