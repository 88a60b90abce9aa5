"""What needs the model again, through its named points (model/points.py): activation patching (`patching.py`)."""

from .patching import DIRECTIONS, OVER, Metric, check_same_length, patch, resolve_metric

__all__ = ["DIRECTIONS", "OVER", "Metric", "check_same_length", "patch", "resolve_metric"]
