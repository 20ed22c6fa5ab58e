"""The cuda backend's host-side planning, without CuPy or a GPU (runs everywhere).

Policy choice for given device facts, grid sizes, the 2-D strategy, forced
choices, and the multiply guess's tolerance: every value whose guess a kernel
trusts must land in the bin :meth:`BinRule.index` gives, with the kernels'
arithmetic emulated in NumPy float32/float64 (one rounding per operation, no FMA).
"""
import subprocess
import sys

import numpy as np
import pytest

from hotbin.backend.cuda import rule as crule
from hotbin.backend.cuda import tuning
from hotbin.backend.cuda.tuning import Policy, Tuning
from hotbin.core.binning import BinRule, histogram_rule

H100 = {"sms": 132, "smem_block": 232448, "smem_sm": 233472, "arch": "sm_90"}
OTHER = {"sms": 40, "smem_block": 101376, "smem_sm": 102400, "arch": "sm_75"}


def test_imports_without_cupy():
    code = ("import sys; import hotbin.backend.cuda, hotbin.backend.cuda.tuning, hotbin.backend.cuda.rule, "
            "hotbin.backend.cuda.stage, hotbin.backend.cuda.spatial; "
            "hotbin.backend.cuda.ci_name_expressions(); assert 'cupy' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


# --- tuning tables and policies -------------------------------------------------------------

def test_table_by_architecture():
    assert tuning.table(H100) is tuning.TABLES["sm_90"]
    assert tuning.table(OTHER) is tuning.TABLES["default"]
    assert tuning.table({}) is tuning.TABLES["default"]


@pytest.mark.parametrize("info", [H100, OTHER], ids=["sm_90", "default"])
def test_count_policy_by_slots(info):
    t = Tuning()
    assert tuning.count_policy(256, info, 0, t).layout == "lanes"
    assert tuning.count_policy(257, info, 0, t).layout == "copies"
    cap = (info["smem_block"] - tuning.COUNTER_SLACK) // 4 - 1
    assert tuning.count_policy(cap, info, 0, t).layout == "copies"
    pol = tuning.count_policy(cap + 1, info, 0, t)
    assert pol.layout == "windows" and pol.windows == 2
    pol = tuning.count_policy(3 * cap, info, 0, t)
    assert pol.layout == "windows" and pol.windows == 4 and -(-3 * cap // 4) <= cap
    assert tuning.count_policy(tuning.MAX_WINDOWS * cap + 1, info, 0, t).layout == "global"
    # edges staged in shared memory leave fewer counters
    assert tuning.count_policy(cap, info, 4096, t).layout == "windows"


def test_count_policy_short_rows_and_forced():
    t = Tuning()
    assert tuning.count_policy(256, H100, 0, t, row_n=4096) == tuning.table(H100).short_row
    assert tuning.count_policy(256, H100, 0, t, row_n=tuning.SHORT_ROW + 1).layout == "lanes"
    assert tuning.count_policy(256, H100, 0, Tuning(layout="global")).layout == "global"
    pol = tuning.count_policy(256, H100, 0, Tuning(layout="copies", copies=3, unroll=1), row_n=10)
    assert (pol.layout, pol.copies, pol.unroll) == ("copies", 3, 1)
    pol = tuning.count_policy(1000, H100, 0, Tuning(layout="windows", windows=4))
    assert (pol.layout, pol.windows) == ("windows", 4)
    # a forced layout that cannot hold the slots falls back to the table
    assert tuning.count_policy(10**6, H100, 0, Tuning(layout="lanes")).layout == "global"


def test_count_slots_pads_windows():
    cap = (H100["smem_block"] - tuning.COUNTER_SLACK) // 4 - 1
    n = cap + 1
    assert tuning.count_slots(n, H100, Tuning()) == 2 * -(-n // 2)
    assert tuning.count_slots(1000, H100, Tuning()) == 1000


def test_sum_policy():
    tab = tuning.table(H100).sum_shared
    # 256 bins and the spare: float64 sums 8 bytes a slot, fixed point 8 + 4
    pol, shared = tuning.sum_policy(257 * 8, 0, H100, Tuning())
    assert shared and pol.layout == "copies" and pol.copies == tab.copies == 16
    per_block = H100["smem_sm"] // tab.blocks_per_sm - tuning.SMEM_RESERVED
    assert pol.copies * 257 * 8 <= per_block
    pol, _ = tuning.sum_policy(257 * 12, 1040, H100, Tuning())
    assert pol.copies == 16 and 16 * 257 * 12 + 1040 <= per_block
    pol, _ = tuning.sum_policy(1000 * 8, 0, H100, Tuning())
    assert pol.copies == 4  # a power of two that fits
    assert tuning.sum_policy(257 * 8, 0, H100, Tuning(copies=3))[0].copies == 2
    assert tuning.sum_policy(257 * 8, 0, H100, Tuning(copies=64, blocks_per_sm=1))[0].copies == 32
    pol, shared = tuning.sum_policy(H100["smem_block"] + 8, 0, H100, Tuning())
    assert not shared and pol.layout == "global"
    assert not tuning.sum_policy(80, 0, H100, Tuning(layout="global"))[1]


def test_shift_policy():
    t = Tuning()
    pol = tuning.shift_policy(4096, H100, t)
    assert (pol.layout, pol.copies, pol.block) == ("shift32", 8, 1024)
    assert tuning.shift_smem(4096, pol) == (4097 * 8 + 31) // 32 * 32 * 4 <= H100["smem_block"]
    pol = tuning.shift_policy(65536, H100, t)  # 32-bit counters do not fit: 16-bit ones
    assert (pol.layout, pol.copies) == ("shift16", 1) and tuning.shift_smem(65536, pol) <= H100["smem_block"]
    pol = tuning.shift_policy(4096, H100, Tuning(layout="shift16", copies=16))
    assert (pol.layout, pol.copies) == ("shift16", 16) and tuning.shift_smem(4096, pol) <= H100["smem_block"]
    assert tuning.shift_smem(4096, pol) == (2049 * 16 + 31) // 32 * 32 * 4
    assert tuning.shift_policy(4096, H100, Tuning(copies=5)).copies == 4
    assert tuning.shift_policy(16, H100, Tuning(copies=64)).copies == 32
    assert tuning.shift_policy(65536, H100, Tuning(layout="shift32")) is None  # 256 KiB
    assert tuning.shift_policy(4096, H100, Tuning(layout="windows")) is None
    assert tuning.shift_policy(65536, OTHER, t) is None  # 128 KiB > 99 KiB


@pytest.mark.parametrize("dt,bins,range_,expect", [
    (np.uint16, 4096, (0, 65536), (0, 0, 4)), (np.uint16, 65536, (0, 65536), (0, 0, 0)),
    (np.uint16, 1, (0, 65536), (0, 0, 16)), (np.uint16, 4096, (0, 65535), (0, 0, 4)),
    (np.uint16, 2048, (32768, 65536), (0, 32768, 4)), (np.int16, 4096, (-32768, 32768), (0x8000, 0, 4)),
    (np.int16, 512, (0, 32768), (0x8000, 0x8000, 6)),
    (np.uint16, 1000, (0, 65536), None), (np.uint16, 16, (1024, 2048), None),  # the closed end
    (np.uint16, 5, (-7, 7), None), (np.int16, 64, (-512, 512), None), (np.uint8, 16, (0, 256), None)])
def test_shift_rule(dt, bins, range_, expect):
    """rule.shift_rule, and hist_shift's slot ((u ^ flip) - lo) >> shift in 32-bit unsigned
    arithmetic (keys below lo wrap past every slot) against the exact value table."""
    from hotbin.core import kernel_rule
    rule = histogram_rule(np.zeros(1, dt), bins, range_)
    got = crule.shift_rule(np.dtype(dt), rule)
    assert got == expect
    if got is None:
        return
    flip, lo, k = got
    u = np.arange(1 << 16, dtype=np.uint32)
    s = (((u ^ np.uint32(flip)) - np.uint32(lo)) & np.uint32(0xFFFFFFFF)) >> np.uint32(k)
    slot = np.where(s < bins, s.astype(np.int64), -1)
    np.testing.assert_array_equal(slot, kernel_rule.value_table(rule, dt))


def _half_counters(slots, nslots):
    """hist_shift's 16-bit counters (HALF, one copy) emulated in order: the words, the spills
    of the thread whose add wrapped a counter, and the flush."""
    words = np.zeros((nslots + 2) // 2, np.uint64)
    out = np.zeros(nslots, np.int64)
    for s in slots:
        add = (s & 1) * 0xFFFF + 1
        now = (int(words[s >> 1]) + add) & 0xFFFFFFFF
        words[s >> 1] = now
        if ((now >> ((s & 1) << 4)) & 0xFFFF) == 0 and s < nslots:
            out[s] += 65536
            if not s & 1 and s + 1 < nslots:
                out[s + 1] += 65535 if now == 0 else -1
    for i, w in enumerate(words.astype(np.int64)):
        for s, v in ((2 * i, w & 0xFFFF), (2 * i + 1, w >> 16)):
            if s < nslots:
                out[s] += v
    return out


@pytest.mark.parametrize("order", ["high first", "low first", "interleaved", "random"])
def test_half_counters_carry_exactly(order, rng=np.random.default_rng(17)):
    """A 16-bit counter that wraps: a low half's carry into the high half is taken back, a word
    that wraps whole (high half at 0xFFFF when the low half carries) keeps both, in any order."""
    a, b = 65535 + 65536 + 3, 3 * 65536 - 1  # counts of slots 0 and 1 (one word), slot 2 (odd nslots)
    lo_, hi_ = np.zeros(a, np.int64), np.ones(b, np.int64)
    if order == "high first":  # 0xFFFF0000, then the low half wraps the whole word
        seq = np.concatenate([hi_[:65535], lo_, hi_[65535:]])
    elif order == "low first":
        seq = np.concatenate([lo_, hi_])
    elif order == "interleaved":
        seq = np.empty(a + b, np.int64)
        seq[0::2][: min(a, b)] = 0
        seq[1::2][: min(a, b)] = 1
        seq[2 * min(a, b):] = 0 if a > b else 1
    else:
        seq = rng.permutation(np.concatenate([lo_, hi_]))
    seq = np.concatenate([seq, np.full(70000, 2), np.full(5, 3)])  # 3: the spare slot of nslots 3
    np.testing.assert_array_equal(_half_counters(seq.tolist(), 3), np.bincount(seq, minlength=4)[:3])


def test_grid():
    pol = Policy("lanes", block=512, blocks_per_sm=4)
    # resident: min(blocks_per_sm, threads per SM / block, shared memory per SM / (smem + reserve))
    assert tuning.grid(H100, pol, 32 << 10, 1 << 30, 32) == 132 * 4
    assert tuning.grid(H100, pol, 100 << 10, 1 << 30, 32) == 132 * 2
    assert tuning.grid(H100, Policy("global", block=1024, blocks_per_sm=4), 0, 1 << 30, 8) == 132 * 2
    assert tuning.grid(H100, pol, 0, 1000, 32) == 1  # small inputs: fewer blocks
    assert tuning.grid(H100, pol, 0, 512 * 32 * 3 + 1, 32) == 4
    assert tuning.grid(H100, pol, 32 << 10, 1 << 30, 32, fit=2) == 132 * 2  # registers allow 2


def test_spatial_plan():
    t = Tuning()
    assert tuning.spatial_plan(1 << 20, 64 * 64, "count", H100, t) == "private"
    assert tuning.spatial_plan(1 << 28, 1024 * 1024, "count", H100, t) == "tiled"
    assert tuning.spatial_plan(100, 1024 * 1024, "count", H100, t) == "direct"
    assert tuning.spatial_plan(1 << 28, 65536 * 65536 - 5, "count", H100, t) == "direct"
    assert tuning.spatial_plan(1 << 20, 1 << 14, "fixed", H100, t) == "tiled"  # 2^13 cells per tile
    assert tuning.spatial_plan(1 << 20, 1 << 20, "count", H100, Tuning(strategy="private")) == "tiled"
    assert tuning.spatial_plan(1 << 20, 64, "count", H100, Tuning(strategy="direct")) == "direct"


def test_forced_nests_and_resets():
    assert tuning.current() == Tuning()
    with tuning.forced(layout="global", stage_bytes=1 << 16) as outer:
        assert outer.layout == "global" and tuning.current() is outer
        with tuning.forced(strategy="direct"):
            now = tuning.current()
            assert (now.layout, now.strategy, now.stage_bytes) == ("global", "direct", 1 << 16)
        assert tuning.current().strategy is None
    assert tuning.current() == Tuning()
    with pytest.raises(TypeError):
        with tuning.forced(no_such_choice=1):
            pass


# --- the rule's kernel arguments ----------------------------------------------------------------

def _rule(dt, nbins, rng_):
    return histogram_rule(np.zeros(1, dt), nbins, rng_)


def test_binner_float32_limits():
    f32 = np.float32
    assert crule.binner(_rule(f32, 2**22 + 1, (0, 1))) == crule.BIN_SEARCH
    assert crule.binner(_rule(f32, 1000, (0, 1e-36))) == crule.BIN_SEARCH
    assert crule.binner(_rule(f32, 1000, (0, 1))) == crule.BIN_RULE
    assert crule.binner(_rule(np.float64, 2**22 + 1, (0, 1))) == crule.BIN_RULE


def test_hist1d_guess_disabled_cases():
    e = np.arange(0, 1001, 10, dtype=np.int64)  # integer comparisons: float64 guess, always corrected
    r = BinRule(edges=e, cmp=e, uniform=True)
    assert crule.hist1d_guess(r) == (r.lo, r.scale, crule.DISABLED)
    r = _rule(np.float32, 100, (0, 1))
    lo, scale, tau = crule.hist1d_guess(r)
    assert 0 < tau < kernel_trust_bound() and np.float32(scale) == scale
    assert crule.hist1d_guess(r, shortcut=False)[2] == crule.NEAR  # every value compared
    assert crule.hist1d_guess(_rule(np.float64, crule.SHORTCUT_BINS, (0, 1)))[2] == crule.NEAR
    far = _rule(np.float32, 100, (1e6, 1e6 + 100))  # kernel_rule mode 1: no one-bin bound
    assert crule.hist1d_guess(far)[2] == crule.DISABLED


def kernel_trust_bound():
    from hotbin.core import kernel_rule
    return kernel_rule.TRUST_BELOW * kernel_rule.MARGIN


def _values(rule, rng, dt, n=4000):
    """Random values, every edge and its neighbours, outside values (and NaN, inf), in ``dt``."""
    lo, hi = float(rule.edges[0]), float(rule.edges[-1])
    width = hi - lo
    idx = rng.integers(0, rule.edges.size, min(rule.edges.size, 2000))
    if np.dtype(dt).kind in "iu":
        info = np.iinfo(dt)
        v = np.clip(rng.uniform(lo - 0.01 * width, hi + 0.01 * width, n), info.min, info.max)
        e = np.clip(np.floor(rule.edges[idx]), info.min + 1, info.max - 1).astype(dt)
        return np.concatenate([v.astype(dt), e, e - 1, e + 1])
    e = rule.edges.astype(dt)
    with np.errstate(all="ignore"):
        v = rng.uniform(lo - 0.01 * width, hi + 0.01 * width, n).astype(dt)
    near = np.concatenate([e[idx], np.nextafter(e[idx], dt(np.inf)), np.nextafter(e[idx], dt(-np.inf))])
    return np.concatenate([v, near, np.array([np.nan, np.inf, -np.inf], dt)]).astype(dt)


def _random_rules(rng, dt, count=60):
    integer = np.dtype(dt).kind in "iu"
    for _ in range(count):
        mag = 10.0 ** (rng.uniform(0, 9) if integer else rng.uniform(-30, 30))
        lo = rng.uniform(-1, 1) * mag
        width = mag * 10.0 ** rng.uniform(-6, 1)
        nb = int(rng.choice([1, 2, 3, 7, 100, 256, 1000, 4097, 60000]))
        try:
            with np.errstate(all="ignore"):
                rule = histogram_rule(np.zeros(1, dt), nb, (lo, lo + width))
        except ValueError:  # NumPy: too many bins for the range in this dtype
            continue
        if rule.uniform:
            yield rule
    yield histogram_rule(np.zeros(1, dt), 256, (0.0, 1.0))
    if np.dtype(dt) == np.float64:
        yield histogram_rule(np.zeros(1, dt), 1000, (-1e-305, 1e-305))  # tiny edges around 0
    if np.dtype(dt) == np.float32:
        yield histogram_rule(np.zeros(1, dt), 100, (-1e-37, 1e-37))


@pytest.mark.parametrize("dt", [np.float32, np.float64, np.float16, np.int32, np.int64])
def test_hist1d_trusted_guess_is_the_bin(dt):
    """hist_common.cuh RuleBin: x = (v - glo) * gscale in G, trusted when its fraction is in
    (tau, 1 - tau); the trusted bins must be BinRule.index's."""
    rng = np.random.default_rng(14)
    trusted_any = 0
    for rule in _random_rules(rng, dt):
        if crule.binner(rule) != crule.BIN_RULE:
            continue
        k = rule.kernel_cmp
        g = np.float32 if k.dtype == np.float32 else np.float64
        glo, gscale, tau = crule.hist1d_guess(rule)
        v = _values(rule, rng, dt)
        vk = v.astype(k.dtype)
        with np.errstate(all="ignore"):
            inside = (k[0] <= vk) & (vk <= k[-1])
            x = (vk.astype(g) - g(glo)) * g(gscale)
            r = np.floor(x)
            f = x - r
        ok = inside & (f > g(tau)) & (f < g(1) - g(tau))
        trusted_any += int(ok.sum())
        np.testing.assert_array_equal(r[ok].astype(np.int64), rule.index(v)[ok], err_msg=str(rule.edges[[0, -1]]))
    assert trusted_any > 1000  # the shortcut is exercised


def _round_guess(x, cap):
    """hist_common.cuh round_guess in x's dtype: ``(index, r)``, r = rint(x) by adding
    1.5 * 2^(mantissa bits), the index the bits of x + M less those of M, as unsigned,
    clamped to ``cap`` (bit for bit: NaN, infinities and huge x included)."""
    m = x.dtype.type(1.5 * 2.0 ** np.finfo(x.dtype).nmant)
    y = x + m
    ib = np.dtype(f"i{x.dtype.itemsize}")
    j = (y.view(ib).astype(object) - int(np.array(m).view(ib))) % (1 << (8 * x.dtype.itemsize))
    return np.minimum(j, cap).astype(np.int64), y - m


def _near_bins(rule, v, tau):
    """hist_common.cuh RuleBin::nearest for a rule whose guess is less than half a bin off,
    emulated: j = rint(x) as an unsigned index clamped to nb + 1; farther than tau from j,
    bin floor(x); else j - (v < table[j]) on the kernel's edge table (rule.kernel_edges);
    bins past nb - 1 (as unsigned) are no bin (-1). No range test: the table's entry above
    the closed end and the clamp give it."""
    k = rule.kernel_cmp
    table = crule.kernel_edges(rule)
    g = np.float32 if k.dtype == np.float32 else np.float64
    glo, gscale, _ = crule.hist1d_guess(rule)
    vk = v.astype(k.dtype)
    nb = rule.nbins
    with np.errstate(all="ignore"):
        x = (vk.astype(g) - g(glo)) * g(gscale)
        j, r = _round_guess(x, nb + 1)
        t = x - r
        far = np.abs(t) > g(tau)
        below = np.where(far, t < 0, vk < table[j])
    b = j - below
    return np.where((b >= 0) & (b < nb), b, -1), int((~far).sum())


def test_kernel_edges_table():
    """The edge table: e[0..nb-1], the closed end's successor, the closed end."""
    rule = histogram_rule(np.zeros(1, np.float32), 4, (0.0, 1.0))
    t = crule.kernel_edges(rule)
    k = rule.kernel_cmp
    assert t.dtype == k.dtype and t.size == rule.nbins + 2
    np.testing.assert_array_equal(t[:4], k[:4])
    assert t[4] == np.nextafter(k[4], np.inf) and t[5] == k[4]
    ints = histogram_rule(np.zeros(1, np.int64), np.array([0, 2, 4, 8]))
    assert ints.kernel_cmp.dtype.kind == "i"
    assert crule.kernel_edges(ints)[-2] == ints.kernel_cmp[-1]


@pytest.mark.parametrize("dt", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("tau", ["eps", "near"])
def test_hist1d_nearest_edge_gives_the_bin(dt, tau):
    """Rules whose guess is less than half a bin off (kernel_rule mode 2): one compare against the
    edge nearest the guess gives BinRule.index's bin, for random values, every edge and its
    neighbours, whole numbers and multiples of 1/256; with the shortcut (tau = eps) and without
    (tau = NEAR: every value compared)."""
    rng = np.random.default_rng(17)
    corrected = 0
    rules = list(_random_rules(rng, dt)) + [
        histogram_rule(np.zeros(1, dt), 100, (0, 100)), histogram_rule(np.zeros(1, dt), 256, (0, 1)),
        histogram_rule(np.zeros(1, dt), 1000, (-5, 5)), histogram_rule(np.zeros(1, dt), 7, (-1, 6))]
    for rule in rules:
        if crule.binner(rule) != crule.BIN_RULE:
            continue
        t = crule.hist1d_guess(rule)[2]
        if t > crule.NEAR:
            continue  # no bound below half a bin (one compare is wrong for some of these): walked
        t = t if tau == "eps" else crule.NEAR
        lo, hi = float(rule.edges[0]), float(rule.edges[-1])
        with np.errstate(all="ignore"):
            whole = np.floor(lo) + np.arange(min(5000.0, np.ceil(hi) - np.floor(lo) + 1))
            extra = np.concatenate([whole, np.arange(0, 1025) / 256 * (hi - lo) / 4 + lo]).astype(dt)
        info = np.finfo(dt)
        with np.errstate(all="ignore"):  # huge, tiny, subnormal, a negative NaN, far outside
            hostile = np.array([info.max, -info.max, info.tiny, -info.tiny, info.smallest_subnormal,
                                -info.smallest_subnormal, 0.0, -0.0, hi * 2, lo - (hi - lo), 1e30, -1e30,
                                hi * 3 + 1, -np.nan], dt)
        v = np.concatenate([_values(rule, rng, dt), extra, hostile])
        got, n = _near_bins(rule, v, t)
        corrected += n
        np.testing.assert_array_equal(got, rule.index(v), err_msg=str(rule.edges[[0, -1]]))
    assert corrected > 1000  # the correction is exercised


@pytest.mark.parametrize("vdt, cdt", [(np.float32, np.float32), (np.float32, np.float64),
                                      (np.float64, np.float64), (np.float16, np.float16)])
def test_spatial_trusted_guess_is_the_bin(vdt, cdt):
    """spatial.cu Axis::find: t = (v - lo) * scale in G (float32 for float32 values against float
    edges, else float64), trusted in mode 2 when floor(t) is a bin and the fraction is in (eps, 1 - eps)."""
    rng = np.random.default_rng(15)
    trusted_any = 0
    for rule in _random_rules(rng, cdt, 40):
        kdt, edges, g = crule.axis_args(rule, vdt)
        if g.mode != 2:
            continue
        G = type(g.lo)
        v = _values(rule, rng, vdt)
        vk = v.astype(kdt)
        with np.errstate(all="ignore"):
            inside = (edges[0] <= vk) & (vk <= edges[-1])
            t = (vk.astype(G) - g.lo) * g.scale
            f = np.floor(t)
            fr = t - f
        ok = inside & (f >= 0) & (f < rule.nbins) & (fr > g.eps) & (fr < G(1) - g.eps)
        trusted_any += int(ok.sum())
        np.testing.assert_array_equal(f[ok].astype(np.int64), rule.index(v)[ok])
        # and the range test on the kernel's edges is the rule's
        np.testing.assert_array_equal(inside, rule.index(v) >= 0)
    assert trusted_any > 1000
