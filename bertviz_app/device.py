"""Where the model runs: 'auto', 'cpu', 'cuda', 'cuda:N' or 'mps' -> a torch.device that exists on this machine."""

from __future__ import annotations

import torch


def resolve_device(device: str | torch.device = "auto") -> torch.device:
    """'auto' (CUDA when there is a GPU, else CPU), 'cpu', 'cuda' or 'cuda:N', 'mps'. A ValueError in words for a
    device this machine does not have."""
    text = str(device).strip().lower()
    if text == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        resolved = torch.device(text)
    except (RuntimeError, ValueError):
        raise ValueError(f"unknown device {str(device)!r}; use auto, cpu or cuda") from None
    if resolved.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError("device 'cuda' was asked for but no CUDA GPU is available here; use --device cpu")
        if resolved.index is not None and resolved.index >= torch.cuda.device_count():
            raise ValueError(f"there is no GPU {resolved.index}; this machine has {torch.cuda.device_count()}")
    elif resolved.type == "mps":
        if not (getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()):
            raise ValueError("device 'mps' was asked for but Apple's Metal backend is not available; use cpu")
    elif resolved.type != "cpu":
        raise ValueError(f"unknown device {str(device)!r}; use auto, cpu or cuda")
    return resolved
