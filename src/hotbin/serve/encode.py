"""PNG bytes of a picture for the wire: deflate level 1, in bands on every core.

:func:`hotbin.render.png.encode` writes files at deflate level 6 in one stream. A live view is sent
once over a local link and decoded at once, so here the trade is the other way: level 1
(about a third bigger, four times faster) with bands of rows deflated on every core (the
same picture, pixel for pixel).
"""
from __future__ import annotations

import os

import numpy as np

from ..render import png

__all__ = ["png_bytes"]

#: deflate level: 1, in bands on both cores, encoded a 1280 x 800 view of 10M points in 13.5 ms
#: (295 KB) against 65 ms (226 KB) for level 6 in one stream
#: (benchmarks/serve_bench.py, "PNG encoding"; benchmarks/results/serve-epyc2.md)
LEVEL = 1
#: threads deflating bands at once
THREADS = max(1, min(8, os.cpu_count() or 1))


def png_bytes(image: np.ndarray, threads: int | None = None) -> bytes:
    """PNG of a ``(H, W, C)`` uint8 image, C in 1..4, row 0 on top."""
    return png.encode(image, level=LEVEL, threads=threads or THREADS)
