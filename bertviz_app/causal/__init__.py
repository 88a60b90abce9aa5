"""What needs the model again, through its named points (model/points.py): activation patching (`patching.py`) and
value zeroing (`value_zeroing.py`). Attention flow needs a Run's attention only: analysis/flow.py."""

from .patching import DIRECTIONS, OVER, Metric, check_same_length, patch, resolve_metric
from .value_zeroing import aggregate, value_zeroing

__all__ = ["DIRECTIONS", "OVER", "Metric", "aggregate", "check_same_length",
           "patch", "resolve_metric", "value_zeroing"]
