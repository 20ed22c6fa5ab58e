"""What a hostile tester found in the bin rule and weighted sums (issue #13 item 9).

Each test reproduces one finding; every backend usable here runs those that
go through a backend.
"""
import importlib
import tracemalloc

import numpy as np
import pytest

import hotbin
from hotbin.backend import cpu
from hotbin.backend.cpu import rule as cpu_rule
from hotbin.core.binning import MAX_SLACK, histogram_rule
from conftest import to_numpy

START = 1_700_000_000_000_000_001  # epoch nanoseconds: float64 cannot tell START - 1 from START
END = START + 10**12 + 1


def _rule(a, bins, range):
    return histogram_rule(a, bins, range, minmax=cpu.minmax)


# --- 1. int64/uint64 data above 2**53 against an integer range -----------------------------

@pytest.mark.parametrize("dtype", [np.int64, np.uint64])
@pytest.mark.parametrize("weights", [None, "float", "int", "deterministic"])
def test_integer_range_is_compared_exactly(backend, dtype, weights):
    a = np.array([START - 1, START, START + 1, (START + END) // 2, END - 1, END, END + 1], dtype)
    w = None if weights is None else (np.arange(1, a.size + 1) * (3 if weights == "int" else 0.5))
    w = w.astype(np.int64) if weights == "int" else w
    h, e = hotbin.histogram(a, 10, (START, END), weights=w, backend=backend,
                            deterministic=weights == "deterministic")
    ref, ref_e = np.histogram(a, 10, (START, END), weights=w)
    np.testing.assert_array_equal(to_numpy(h), ref)
    np.testing.assert_array_equal(to_numpy(e), ref_e)


@pytest.mark.parametrize("bounds", [(START, END), (np.int64(START), np.int64(END)), (2**60, 2**60 + 4096),
                                    (-(2**60) - 4096, -(2**60)), (START, START + 5000)])
def test_integer_range_exact_every_bin(backend, bounds):
    """Neighbours of both ends and of every edge, one bin or many, batched too."""
    lo, hi = (int(b) for b in bounds)
    e = np.histogram_bin_edges(np.empty(0, np.int64), 7, bounds).astype(np.int64)
    a = np.unique(np.concatenate([e + d for d in range(-300, 301, 3)] + [np.array([lo - 1, lo, hi, hi + 1])]))
    for bins in (7, 1):
        ref = np.histogram(a, bins, bounds)[0]
        np.testing.assert_array_equal(to_numpy(hotbin.histogram(a, bins, bounds, backend=backend)[0]), ref)
        rows = to_numpy(hotbin.histogram(np.stack([a, a[::-1]]), bins, bounds, backend=backend, axis=1)[0])
        np.testing.assert_array_equal(rows, [ref, ref])


def test_integer_range_nothing_kept(backend):
    """int64 data under a uint64 range entirely above int64's largest value keeps nothing
    (NumPy's exact test), though float64 rounds 2**63 - 1 onto the range's first edge."""
    a = np.array([2**63 - 1, 2**63 - 2, 2**63 - 5000], np.int64)
    bounds = (np.uint64(2**63 + 1), np.uint64(2**63 + 100000))
    h = hotbin.histogram(a, 3, bounds, backend=backend)[0]
    np.testing.assert_array_equal(to_numpy(h), np.histogram(a, 3, bounds)[0])


@pytest.mark.parametrize("dtype, bounds", [(np.int64, (0, 100)), (np.int64, (START * 1.0, END * 1.0)),
                                           (np.int32, (START, END)), (np.float64, (START, END))])
def test_ordinary_ranges_need_no_exact_pass(dtype, bounds):
    """Float ends, small ends, narrow data: the kernels' float64 test is exact, no extra pass."""
    assert _rule(np.zeros(1, dtype), 10, bounds).exact_bins is None


# --- 2. range bounds: 0-d arrays, signed zeros ----------------------------------------------

@pytest.mark.parametrize("bounds", [(np.array(0.0), np.array(1.0)), (np.array(0, np.float32), np.array(1, np.float32)),
                                    (np.array(0), 1.0)])
def test_zero_d_array_range(backend, bounds):
    x = np.linspace(-0.5, 1.5, 101).astype(np.float32)
    h, e = hotbin.histogram(x, 10, bounds, backend=backend)
    ref, ref_e = np.histogram(x, 10, bounds)
    np.testing.assert_array_equal(to_numpy(h), ref)
    assert to_numpy(e).dtype == ref_e.dtype
    np.testing.assert_array_equal(to_numpy(e), ref_e)


def test_signed_zero_bounds_are_cached_apart():
    x = np.zeros(3)
    for r in [(-1.0, 0.0), (-1.0, -0.0), (-1.0, 0.0)]:
        e = hotbin.histogram(x, 2, r)[1]
        ref = np.histogram(x, 2, r)[1]
        np.testing.assert_array_equal(np.signbit(e), np.signbit(ref))


# --- 3. NaN inside explicit edges -----------------------------------------------------------

@pytest.mark.parametrize("edges", [[0.0, np.nan, 1.0], [np.nan], [0.0, 1.0, np.nan], [np.nan, 0.0, 1.0]])
def test_nan_edges_raise(backend, edges):
    x = np.linspace(0, 1, 5)
    with pytest.raises(ValueError, match="monoton"):
        hotbin.histogram(x, edges, backend=backend)
    with pytest.raises(ValueError, match="monoton"):
        hotbin.histogram2d(x, x, [edges, [0.0, 1.0]], backend=backend)


# --- 4. no rule is O(bins) per value ---------------------------------------------------------

@pytest.mark.parametrize("bounds", [(0, 1e-308), (0, 5e-324 * 2**20)])
def test_overflowing_scale_is_searched(backend, bounds):
    """nbins / width overflowing made the guess bin 0 and the
    correction walk bin by bin: 195 s for 10**6 bins. Such rules are binary searched."""
    rule = _rule(np.zeros(1), 10**6, bounds)
    assert not rule.uniform
    assert cpu_rule.rule_args(rule)[-1] == cpu_rule.SEARCH
    x = np.random.default_rng(1).uniform(bounds[0] / 2, bounds[1], 5000)
    h, e = hotbin.histogram(x, 10**6, bounds, backend=backend)
    # NumPy's own multiply guess is wrong here (its width overflows, or loses bits in
    # subnormals); the rule is edges[i] <= v < edges[i+1] (DESIGN.md section 4)
    e = to_numpy(e)
    np.testing.assert_array_equal(e, np.histogram_bin_edges(x, 10**6, bounds))
    i = np.searchsorted(e, x, "right") - 1
    i[x == e[-1]] = e.size - 2
    ref = np.bincount(i[(x >= e[0]) & (x <= e[-1])], minlength=e.size - 1)
    np.testing.assert_array_equal(to_numpy(h), ref)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32, np.int64, np.uint8])
@pytest.mark.parametrize("bins, bounds", [(10, (0, 1)), (10**6, (0.5, 2.5)), (2**22 + 1, (-3, 7)),
                                          (1000, (1e-300, 2e-300)), (10**6, (0, 1e-308))])
def test_guessed_rules_land_near_their_bin(dtype, bins, bounds):
    """A rule that guesses by multiplying is off by at most MAX_SLACK bins (else it is searched)."""
    try:
        rule = _rule(np.zeros(1, dtype), bins, bounds)
    except ValueError:  # NumPy's "too many bins for data range" (float32)
        return
    assert not rule.uniform or rule.slack <= MAX_SLACK


def test_wgpu_int_guess_offset_is_searched():
    """wgpu guesses integer bins from key offsets: with edges at half integers and many
    bins that guess was 250000 bins off (a walk of 250000 steps per value)."""
    keys = importlib.import_module("hotbin.backend.wgpu.keys")
    rule = _rule(np.zeros(1, np.int32), 10**6, (0.5, 2.5))
    assert keys.axis(rule, 1)[1][-1] == 0  # binary search
    rule = _rule(np.zeros(1, np.int32), 100, (0, 1000))
    assert keys.axis(rule, 1)[1][-1] == 1  # a good guess is kept


# --- 5. batches (axis=): empty slices, bounded memory ---------------------------------------

@pytest.mark.parametrize("shape, axis", [((2, 0), 1), ((0, 5), 1), ((0, 5), 0), ((3, 0, 2), 1), ((3, 0, 2), 2)])
def test_axis_empty(backend, shape, axis):
    x = np.zeros(shape)
    h = to_numpy(hotbin.histogram(x, 3, (0, 1), backend=backend, axis=axis)[0])
    out = list(shape)
    del out[axis]
    assert h.shape == tuple(out) + (3,)
    assert not h.any()


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_axis_slabs_agree(backend, axis, monkeypatch):
    """Small slabs (so slices are gathered in many pieces) give NumPy's per-slice histograms."""
    monkeypatch.setattr(hotbin.exec.batch, "SLAB_BYTES", 64)
    x = np.random.default_rng(2).normal(size=(5, 7, 40)).astype(np.float32)
    h = to_numpy(hotbin.histogram(x, 6, (-2, 2), backend=backend, axis=axis)[0])
    rows = np.moveaxis(x, axis, -1)
    ref = np.apply_along_axis(lambda r: np.histogram(r, 6, (-2, 2))[0], -1, rows)
    np.testing.assert_array_equal(h, ref)


def test_axis_0_of_a_memmap_is_not_copied_whole(tmp_path):
    """axis=0 transposes: the whole 200 MB input used to be copied; now a slab at a time."""
    shape = (1000, 50_000)  # float32: 200 MB
    x = np.memmap(tmp_path / "x.f32", np.float32, "w+", shape=shape)
    x[::7, ::3] = 0.75
    x.flush()
    tracemalloc.start()
    try:
        h = hotbin.histogram(x, 4, (0, 1), axis=0)[0]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < x.nbytes / 4
    assert h.shape == (50_000, 4)
    col = np.zeros(1000, np.float32)
    col[::7] = 0.75
    np.testing.assert_array_equal(h[0], np.histogram(col, 4, (0, 1))[0])
    np.testing.assert_array_equal(h.sum(axis=1), 1000)


# --- 6. integer weights never wrap ------------------------------------------------------------

@pytest.mark.parametrize("w, where", [(np.array([2**62, 2**62], np.int64), "bin 1"),
                                      (np.array([2**63, 0], np.uint64), "bin 1"),
                                      (np.array([-(2**63), -1], np.int64), "bin 1")])
def test_int_weights_never_wrap(backend, w, where):
    """Sums beyond int64 (the sums' dtype) raise, naming the bin: they used to wrap to
    -2**63. Sums that fit are exact however their partial sums would wrap."""
    x = np.array([0.6, 0.6 if w[1] else 0.1])
    with pytest.raises(OverflowError, match=where):
        hotbin.histogram(x, 2, (0, 1), weights=w, backend=backend)
    with pytest.raises(OverflowError, match=r"bin \(1, 1\)"):
        hotbin.histogram2d(x, x, 2, [(0, 1), (0, 1)], weights=w, backend=backend)
    x = np.array([0.1, 0.1, 0.1, 0.9, 0.9])
    w = np.array([2**62, 2**62, -(2**62), 2**63 - 1, 0], np.int64)  # 2**62 + 2**62 wraps in int64
    h = to_numpy(hotbin.histogram(x, 2, (0, 1), weights=w, backend=backend)[0])
    assert h.dtype == np.int64
    assert h.tolist() == [2**62, 2**63 - 1]
    H = to_numpy(hotbin.histogram2d(x, x, 2, [(0, 1), (0, 1)], weights=w, backend=backend)[0])
    assert H.tolist() == [[2**62, 0], [0, 2**63 - 1]]
    u = np.array([2**62, 2**61, 2**61 - 1, 2**63 - 1, 0], np.uint64)
    assert to_numpy(hotbin.histogram(x, 2, (0, 1), weights=u, backend=backend)[0]).tolist() == [2**63 - 1] * 2

    # bincount sums weights in float64, as NumPy: 2**63 + 2**63 is 2**64, not 0 or negative
    got = to_numpy(hotbin.bincount(np.array([0, 0]), np.array([2**63, 2**63], np.uint64), backend=backend))
    assert got.tolist() == [2.0**64]


def test_heatmap_int_weights_never_wrap(backend):
    """A heatmap's integer weights go through the same exact sums: 2**62 + 2**62 used to read
    -2**63; a cell beyond int64 raises, naming the cell."""
    x = np.array([0.1, 0.1, 0.1, 0.9])
    w = np.array([2**62, 2**62, -(2**62), 5], np.int64)
    hm = hotbin.heatmap(x, x, w, width=2, height=2, x_range=(0, 1), y_range=(0, 1), backend=backend)
    assert to_numpy(hm.counts).tolist() == [[2.0**62, 0], [0, 5]]
    with pytest.raises(OverflowError, match=r"bin \(0, 0\)"):
        hotbin.heatmap(x[:2], x[:2], w[:2], width=2, height=2, x_range=(0, 1), y_range=(0, 1),
                       backend=backend)


# --- the same promises on the Dask path --------------------------------------------------------

def test_dask_integer_range_and_weights_are_exact():
    """Dask blocks fix the integer range's end bins and sum integer weights exactly, and the
    tree merges integer partial sums without wrapping (they used to wrap to -2**63). A block
    whose own sum does not fit in int64 raises OverflowError, as a whole array would."""
    da = pytest.importorskip("dask.array")
    a = np.array([START - 1, START, START + 1, END - 1, END, END + 1] * 3, np.int64)
    w = np.arange(1, a.size + 1, dtype=np.int64) * 7
    h = hotbin.histogram(da.from_array(a, chunks=4), 10, (START, END),
                         weights=da.from_array(w, chunks=4))[0].compute()
    np.testing.assert_array_equal(h, np.histogram(a, 10, (START, END), weights=w)[0])

    x = np.array([0.1, 0.1, 0.1, 0.9, 0.9])
    big = np.array([2**62, 2**62, -(2**62), 2**63 - 1, 0], np.int64)  # fits; partials wrap
    got = hotbin.histogram(da.from_array(x, chunks=1), 2, (0, 1), weights=da.from_array(big, chunks=1))[0]
    assert got.compute().tolist() == [2**62, 2**63 - 1]
    H = hotbin.histogram2d(da.from_array(x, chunks=1), da.from_array(x, chunks=1), 2, [(0, 1), (0, 1)],
                           weights=da.from_array(big, chunks=1))[0]
    assert H.compute().tolist() == [[2**62, 0], [0, 2**63 - 1]]
    over = da.from_array(np.array([2**62, 2**62], np.int64), chunks=1)  # each block fits, the total not
    with pytest.raises(OverflowError, match="bin 1"):
        hotbin.histogram(da.from_array(np.array([0.6, 0.6]), chunks=1), 2, (0, 1), weights=over)[0].compute()


def test_dask_heatmap_int_weights_never_wrap():
    da = pytest.importorskip("dask.array")
    x = np.array([0.1, 0.1, 0.1, 0.9])
    w = np.array([2**62, 2**62, -(2**62), 5], np.int64)  # the block sums fit; int64 partials wrap
    hm = hotbin.heatmap(da.from_array(x, chunks=1), da.from_array(x, chunks=1), da.from_array(w, chunks=1),
                        width=2, height=2, x_range=(0, 1), y_range=(0, 1))
    assert np.asarray(hm.counts).tolist() == [[2.0**62, 0], [0, 5]]
    with pytest.raises(OverflowError, match=r"bin \(0, 0\)"):  # the cell, as in memory
        hotbin.heatmap(da.from_array(x[:2], chunks=1), da.from_array(x[:2], chunks=1),
                       da.from_array(w[:2], chunks=1), width=2, height=2, x_range=(0, 1), y_range=(0, 1))
