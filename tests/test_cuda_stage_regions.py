"""cuda.stage.regions (pure Python, runs everywhere): slabs cover the array once, in C order."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hotbin.backend.cuda.stage import region_size, regions


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 7), min_size=1, max_size=4), st.integers(1, 400))
def test_regions_cover_once_in_order(shape, limit):
    a = np.arange(math.prod(shape)).reshape(shape)
    seen = []
    for r in regions(shape, limit):
        slab = a[r]
        assert slab.size == region_size(shape, r)
        assert slab.size <= limit
        assert slab.flags.c_contiguous
        seen.append(slab.reshape(-1))
    np.testing.assert_array_equal(np.concatenate(seen), a.reshape(-1))  # all, once, in C order


@pytest.mark.parametrize("n,limit,align", [(100, 30, 8), (64, 64, 16), (1000, 5, 16)])
def test_aligned_cuts(n, limit, align):
    cuts = [r[0] for r in regions((n,), limit, align=align)]
    assert all(c.start % align == 0 for c in cuts)
    assert cuts[0].start == 0 and cuts[-1].stop == n
    assert all(a.stop == b.start for a, b in zip(cuts, cuts[1:]))


def test_subdividing_a_region():
    shape = (4, 10)
    sub = list(regions(shape, 5, (slice(1, 3),)))
    assert sub == [(1, slice(0, 5)), (1, slice(5, 10)), (2, slice(0, 5)), (2, slice(5, 10))]
