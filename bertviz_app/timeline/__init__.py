"""A training timeline: snapshots of a model as it learns, on a few inputs, in `timeline/` of the training's output
folder. The one training loop writes it (`TimelineWriter`, handed to `training.fit`); a notebook reads it with
`open_timeline(folder)` and the app's slider reads the same files (format.py describes them): each snapshot holds the
views payload of every input, so the views draw any step without the model."""

from .format import FOLDER
from .inputs import (MAX_INPUTS, MAX_LINE_CHARS, PRETRAINING_PROBES, TimelineError, TimelineInput,
                     choose_inputs, read_inputs)
from .reader import SnapshotRun, Timeline, TimelinePlots, open_timeline
from .writer import TimelineWriter, snapshot_steps

__all__ = ["FOLDER", "MAX_INPUTS", "MAX_LINE_CHARS", "PRETRAINING_PROBES", "SnapshotRun",
           "Timeline", "TimelineError", "TimelineInput", "TimelinePlots", "TimelineWriter", "choose_inputs",
           "open_timeline", "read_inputs", "snapshot_steps"]
