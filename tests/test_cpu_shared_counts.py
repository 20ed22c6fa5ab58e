"""2-D counts on several threads take pieces as threads come free (backend/cpu/partials.py,
``_count_shared``): whichever row a piece lands in, the counts are NumPy's, hot cells past a
uint8 partial's wraps and categories included."""
from __future__ import annotations

import numpy as np
import pytest

from hotbin.backend.cpu import parallel, partials, reduce
from hotbin.core import reductions
from hotbin.core.binning import histogram2d_rules


@pytest.fixture
def two_threads():
    old = parallel.set_threads(2)
    yield
    parallel.set_threads(old)


@pytest.mark.parametrize("ncat", [0, 3])
def test_counts_in_shared_pieces_are_numpys(two_threads, ncat):
    rng = np.random.default_rng(3)
    n = 2 * parallel.PIECE + 12345  # three pieces or more on two rows
    x = rng.random(n, dtype=np.float32)
    y = rng.random(n, dtype=np.float32)
    hot = rng.random(n) < 0.4  # one cell holds 40 %: its uint8 counters wrap many times
    x[hot], y[hot] = np.float32(0.3), np.float32(0.7)
    x[::1001] = np.nan
    rx, ry = histogram2d_rules(x, y, bins=(256, 128), range=[(0, 1), (0, 1)], minmax=reduce.minmax)
    assert partials.nparts(n, 256 * 128 + 1) == 2
    if ncat:
        cat = rng.integers(-1, ncat + 1, n)  # codes outside [0, ncat) too: a category of their own
        got, _ = partials.histogram2d(x, y, rx, ry, None, reductions.COUNT, (cat, ncat))
        groups = [cat == c for c in range(ncat)] + [(cat < 0) | (cat >= ncat)]  # the last: the others
        want = np.stack([np.histogram2d(x[g], y[g], bins=(256, 128), range=[(0, 1), (0, 1)])[0]
                         for g in groups])
    else:
        got, _ = partials.histogram2d(x, y, rx, ry, None, reductions.COUNT)
        want = np.histogram2d(x, y, bins=(256, 128), range=[(0, 1), (0, 1)])[0]
    np.testing.assert_array_equal(got, want.astype(np.int64))
