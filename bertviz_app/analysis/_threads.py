"""Small numpy linear algebra on one BLAS thread.

OpenBLAS (and MKL) start as many threads as there are cores for any product or decomposition above a tiny size. On a
busy machine those threads wait on each other (measured: docs/ARCHITECTURE.md, "Measured"). The matrices the analyses
decompose are small, so one thread is always the faster choice.
threadpoolctl finds the BLAS numpy uses, whichever it is."""

from __future__ import annotations

import threading
from contextlib import contextmanager
from functools import lru_cache

from threadpoolctl import ThreadpoolController

_lock = threading.Lock()
_depth = 0
_restore = None


@lru_cache(maxsize=1)
def _controller() -> ThreadpoolController:
    return ThreadpoolController()  # inspects the loaded libraries once, not on every call


@contextmanager
def single_threaded_blas():
    """Inside the block numpy's BLAS uses one thread; the previous limits come back afterwards. Re-entrant and safe
    across threads: the limit is process-wide, so the first to enter sets it and the last to leave restores it."""
    global _depth, _restore
    with _lock:
        if _depth == 0:
            _restore = _controller().limit(limits=1, user_api="blas")
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                _restore.restore_original_limits()
                _restore = None
