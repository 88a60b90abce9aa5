"""Run small numpy linear algebra on one BLAS thread.

OpenBLAS starts as many threads as there are cores for any product or decomposition above a tiny size. On a busy
machine (two cores shared with a training job and the app's own threads) those threads wait on each other: a
384 x 384 `eigh` measured 80-200 ms with two threads and 25 ms with one, a 128 x 128 one 230 ms against 2 ms. The
matrices the analyses decompose are small, so one thread is always the faster choice. threadpoolctl would do this
too; numpy's bundled OpenBLAS exports the setter, so a few lines of ctypes spare a dependency. Where the setter
cannot be found (another BLAS, another platform) this does nothing."""

from __future__ import annotations

import ctypes
import threading
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path

import numpy as np

_lock = threading.Lock()
_depth = 0
_saved = 0


@lru_cache(maxsize=1)
def _openblas():
    """(get_num_threads, set_num_threads) of the OpenBLAS numpy uses, or None."""
    names = (("scipy_openblas_get_num_threads64_", "scipy_openblas_set_num_threads64_"),
             ("scipy_openblas_get_num_threads", "scipy_openblas_set_num_threads"),
             ("openblas_get_num_threads64_", "openblas_set_num_threads64_"),
             ("openblas_get_num_threads", "openblas_set_num_threads"))
    candidates = sorted((Path(np.__file__).parent.parent / "numpy.libs").glob("*openblas*"))
    for path in candidates:
        try:
            lib = ctypes.CDLL(str(path))
        except OSError:
            continue
        for get, set_ in names:
            if hasattr(lib, get) and hasattr(lib, set_):
                getter, setter = getattr(lib, get), getattr(lib, set_)
                getter.restype, setter.argtypes = ctypes.c_int, [ctypes.c_int]
                return getter, setter
    return None


@contextmanager
def single_threaded_blas():
    """Inside the block numpy's OpenBLAS uses one thread; the previous count comes back afterwards. Re-entrant and
    safe across threads (the count is process-wide, so the first to enter saves it and the last to leave restores
    it)."""
    global _depth, _saved
    blas = _openblas()
    if blas is None:
        yield
        return
    getter, setter = blas
    with _lock:
        if _depth == 0:
            _saved = getter()
            setter(1)
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                setter(_saved)
