"""CPU benchmark (issue #18): hotbin's cpu backend against NumPy, fast-histogram and
boost-histogram, and how long hotbin takes to start.

Each case warms up (JIT), checks every answer against NumPy, times ours (all threads and
one thread) and the anchors in this process (median of repeats) and prints the ratios
and two floors, each timed in turn with hotbin's calls (:func:`paired`): the time to read the
case's input once on all threads, and an add a value at the rate all threads add to counters
in L1 in a probe loop (:func:`floor_cpu.add_time`): what a count that adds once a value
costs, give or take the probe loop's own overhead.
``--start`` also times start-up (benchmarks/start_cpu.py): ``pip install`` of this tree into
fresh venvs, with and without the precompiled kernels, and each first call there against
the same call warm. ``--small`` times only small calls (:func:`small_calls`: 1000 values,
hotbin against ``numpy.histogram`` call for call) and with ``--out`` replaces that
section of the file, keeping the large cases' table from their own run. ``--near`` times
the inputs whose rules the bin finder NEAR serves, with it and without (:func:`near_rows`).

    python benchmarks/cpu_suite.py [--quick] [--start] [--out benchmarks/results/cpu-MACHINE.md]
    python benchmarks/cpu_suite.py --small [--out benchmarks/results/cpu-MACHINE.md]
    python benchmarks/cpu_suite.py --near [--quick]
"""
from __future__ import annotations

import argparse
import datetime
import os
import statistics
import time

import numba
import numpy as np

import floor_cpu
import hotbin
from hotbin.backend.cpu import parallel
from hotbin.core.binning import histogram_rule


def paired(fn, arrays, repeat):
    """(median seconds of fn, median seconds to read ``arrays`` once: the floor, median ns of
    an add with all threads adding: :func:`floor_cpu.add_time`), timed in turn so all meet the
    same machine: the 2-vCPU VM's speed swings 2x within minutes, and a floor measured once at
    the start put one run's ratios 1.1x-3.3x apart."""
    fn()  # warm-up (JIT, page faults)
    read = floor_cpu.reader(arrays)
    ts, fs, adds = [], [], []
    for _ in range(repeat):
        fs.append(read())
        adds.append(floor_cpu.add_time(rounds=1))
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts), statistics.median(fs), statistics.median(adds)


def timeit(fn, repeat):
    fn()  # warm-up (JIT, page faults)
    ts = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)


def read_bandwidth(nbytes: int) -> float:
    a = np.random.default_rng(0).random(nbytes // 8)
    return a.nbytes / floor_cpu.read_time([a])


def one_thread(fn):
    def run():
        old = parallel.set_threads(1)
        try:
            return fn()
        finally:
            parallel.set_threads(old)
    return run


def anchors_1d(a, bins, rng_):
    """NumPy, fast-histogram and boost-histogram on the case; ``bins`` edges (``rng_`` None):
    boost-histogram's Variable axis; a range from the data (``bins`` an int, ``rng_`` None):
    the anchors get the data's range, found outside their time, and boost-histogram once more
    with the range found in its time as its users find it (NumPy's min and max)."""
    out = {"numpy": lambda: np.histogram(a, bins, rng_)[0]}
    edges = np.ndim(bins) == 1
    found = rng_ is None and not edges
    if found:
        rng_ = (a.min(), a.max())
    try:
        import fast_histogram as fh
        if not edges:
            out["fast-histogram"] = lambda: fh.histogram1d(a, bins, rng_)
    except ImportError:
        pass
    try:
        import boost_histogram as bh
        threads = parallel.threads()

        def boost(t, find=False):
            r = (a.min(), a.max()) if find else rng_
            h = bh.Histogram(bh.axis.Variable(bins) if edges else bh.axis.Regular(bins, *r))
            h.fill(a, threads=t)
            return h.view()
        out["boost-histogram (1 thread)"] = lambda: boost(1)
        out[f"boost-histogram ({threads} threads)"] = lambda: boost(threads)
        if found:
            out[f"boost-histogram ({threads} threads, its range from numpy min, max)"] = \
                lambda: boost(threads, find=True)
    except ImportError:
        pass
    return out


SMALL_HEAD = "## Small calls"


def small_calls(rounds=31, calls=200, pool=1024, size=1000):
    """The small-call table's lines: ``hotbin.histogram`` against ``numpy.histogram`` on
    ``size`` float64 values, ``bins=10`` with the range found in the call and ``256, (0, 1)``,
    then the range found in the call on float32 and int64 values (the other edges' dtypes).
    Each round times ``calls`` calls of one then of the other (which goes first alternates),
    on one array, then on ``calls`` arrays of a pool of ``pool`` (each its own range, as
    fresh data has); the medians of the rounds, in microseconds a call. Every answer is
    checked against NumPy's, bins and edges bit for bit."""
    rng = np.random.default_rng(7)
    pools = {"float64": [rng.random(size) for _ in range(pool)]}
    pools["float32"] = [a.astype(np.float32) for a in pools["float64"]]
    pools["int64"] = [rng.integers(-10**6, 10**6, size) for _ in range(pool)]
    ways = {"bins=10, range from the data": ((10,), ("float64",), True),
            "bins=256, range=(0, 1)": ((256, (0, 1)), ("float64",), True),
            "bins=10, range from the data,": ((10,), ("float32", "int64"), False)}
    lines = [SMALL_HEAD, "",
             f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, {floor_cpu.cpu_model()}, "
             f"numpy {np.__version__}; load average before {os.getloadavg()[0]:.2f}. "
             f"{size} values (float64 unless the data says); medians of {rounds} interleaved rounds of "
             f"{calls} calls, microseconds a call; `ratio`: NumPy's time over hotbin's (>= 1: hotbin no slower).", "",
             "| call | data | hotbin (µs) | numpy.histogram (µs) | ratio |", "|---|---|---|---|---|"]
    for way, (args, kinds, one) in ways.items():
        for kind in kinds:
            arrays = pools[kind]
            for a in arrays[:8]:
                got, want = hotbin.histogram(a, *args), np.histogram(a, *args)
                for g, w in zip(got, want):
                    assert g.dtype == w.dtype and np.array_equal(g, w), way
            turns = [(f"{pool} arrays in turn", lambda i: arrays[i % pool])]
            if one:
                turns.insert(0, ("one array", lambda i: arrays[0]))
            for data, pick in turns:
                fns = {"hotbin": lambda a: hotbin.histogram(a, *args), "numpy": lambda a: np.histogram(a, *args)}
                ts = {k: [] for k in fns}
                start = 0
                for r in range(rounds + 1):  # the first round warms up
                    for name in (("hotbin", "numpy") if r % 2 else ("numpy", "hotbin")):
                        f = fns[name]
                        t = time.perf_counter()
                        for i in range(start, start + calls):
                            f(pick(i))
                        if r:
                            ts[name].append((time.perf_counter() - t) / calls)
                    start += calls
                h, n = statistics.median(ts["hotbin"]), statistics.median(ts["numpy"])
                label = f"{way} {kind}" if way.endswith(",") else way
                lines.append(f"| {label} | {data} | {h * 1e6:.1f} | {n * 1e6:.1f} | {n / h:.2f}x |")
    lines += ["", *sorted_sweep(rounds)]
    lines.append(f"\nLoad average after: {os.getloadavg()[0]:.2f}.")
    return lines


def sorted_sweep(rounds, sizes=(100, 1000, 4096, 16384), bins=(64, 256, 512, 1024)):
    """Lines of a table that says where :data:`hotbin.backend.cpu.small.SORTED_EDGES` lies: the
    small path's rule and counts (``histogram_rule``, then ``small._counts``) of float64 normal
    values, over the range found in them (a rule a call) and over ``(-3.1, 4.2)`` (a rule
    kept), by sorting and by the guess (or the search), the threshold moved each way; 64
    arrays in turn, medians of ``rounds`` rounds, microseconds a count. Checked against NumPy."""
    from hotbin.backend.cpu import small
    from hotbin.core.binning import histogram_rule

    rng = np.random.default_rng(3)
    out = ["Where the small path sorts (`backend/cpu/small.py` `SORTED_EDGES`, now "
           f"{small.SORTED_EDGES} edges): a rule and its counts, microseconds, float64 normal values, "
           "64 arrays in turn; sorted / not (the guess, or the search).", "",
           "| values | bins | range from the data | range (-3.1, 4.2) |", "|---|---|---|---|"]
    keep = small.SORTED_EDGES

    def extent(v):
        return v.min(), v.max()

    try:
        for size in sizes:
            arrays = [rng.normal(size=size) for _ in range(64)]
            for nb in bins:
                cells = []
                for rng_ in (None, (-3.1, 4.2)):
                    def count(a):
                        return small._counts(a, histogram_rule(a, nb, rng_, minmax=extent))
                    pair = []
                    for edges in (nb + 1, 0):  # sorted, then not
                        small.SORTED_EDGES = edges
                        for a in arrays[:4]:
                            assert np.array_equal(count(a), np.histogram(a, nb, rng_)[0])
                        ts = []
                        for _ in range(rounds):
                            t = time.perf_counter()
                            for a in arrays:
                                count(a)
                            ts.append((time.perf_counter() - t) / len(arrays))
                        pair.append(statistics.median(ts))
                    cells.append(f"{pair[0] * 1e6:.1f} / {pair[1] * 1e6:.1f}")
                out.append(f"| {size} | {nb} | {cells[0]} | {cells[1]} |")
    finally:
        small.SORTED_EDGES = keep
    return out


def _rule_counts(a, bins, range_=None):
    """Counts by the reference index (BinRule.index) of NumPy's edges' rule: no guess to miss."""
    rule = histogram_rule(a, bins, range_, minmax=lambda v: (v.min(), v.max()))
    idx = rule.index(a)
    return np.bincount(idx[idx >= 0], minlength=rule.nbins)


def near_rows(rounds=11, n=1 << 24):
    """Lines of a table: inputs whose rule the cpu kernels bin by NEAR (the guess corrected a
    step each way, :mod:`hotbin.backend.cpu.rule`), through the public calls, with NEAR and
    with it disabled (those rules given the mode they would take without it, SEARCH);
    interleaved rounds, medians, each answer checked against NumPy both ways."""
    from hotbin.backend.cpu import rule as R

    rng = np.random.default_rng(16)
    g16, u16, y16 = (d.astype(np.float16) for d in (rng.normal(size=n), rng.random(n), rng.normal(size=n)))
    u32, g32 = rng.random(n, np.float32), rng.normal(size=n).astype(np.float32)
    cases = {"float16 normal, 256 bins, range from the data": (np.histogram, g16, 256),
             "float16 uniform, 256 bins over (0, 1)": (np.histogram, u16, 256, (0, 1)),
             "float16 normal, 256 bins over (-3.1, 2.9)": (np.histogram, g16, 256, (-3.1, 2.9)),
             "float16 normal, 1000 bins, range from the data": (np.histogram, g16, 1000),
             "float16 normal, histogram2d 256 x 256, range from the data": (np.histogram2d, g16, y16, 256),
             "float32 uniform, 2**22 bins over (0, 1)": (np.histogram, u32, 1 << 22, (0, 1)),
             "float32 normal, 2**22 bins, range from the data": (np.histogram, g32, 1 << 22)}
    mode, near = R._mode, [True]

    def without(rule):
        lo, step, m = mode(rule)
        return (rule.lo, 0.0, R.SEARCH) if m == R.NEAR and not near[0] else (lo, step, m)
    out = [f"{n} values; medians of {rounds} interleaved rounds, ms; load average before "
           f"{os.getloadavg()[0]:.2f}.", "", "| input | NEAR (ms) | without, SEARCH (ms) | ratio | numpy (ms) |",
           "|---|---|---|---|---|"]
    R._mode = without
    try:
        for name, (ref, *args) in cases.items():
            ours = getattr(hotbin, ref.__name__)
            t = time.perf_counter()
            want = ref(*args)
            tn = time.perf_counter() - t
            ts = {True: [], False: []}
            for r in range(rounds + 1):  # the first round warms up and checks
                for way in ((True, False) if r % 2 else (False, True)):
                    near[0] = way
                    t = time.perf_counter()
                    got = ours(*args, backend="cpu")
                    ts[way].append(time.perf_counter() - t)
                    if not r:  # NumPy's float16 guess can miss by two bins: then the rule's index
                        assert all(np.array_equal(g, w) for g, w in zip(got, want)) or (
                            ref is np.histogram and np.array_equal(got[0], _rule_counts(*args))), name
            a, b = statistics.median(ts[True][1:]), statistics.median(ts[False][1:])
            out.append(f"| {name} | {a * 1e3:.1f} | {b * 1e3:.1f} | {b / a:.2f}x | {tn * 1e3:.0f} |")
    finally:
        R._mode = mode
    return out + ["", f"Load average after: {os.getloadavg()[0]:.2f}."]


def _replace_section(path, lines):
    """``path`` with its :data:`SMALL_HEAD` section (to the end) replaced by ``lines``."""
    try:
        with open(path) as f:
            text = f.read()
    except FileNotFoundError:
        text = ""
    keep = text.split(SMALL_HEAD)[0].rstrip()
    with open(path, "w") as f:
        f.write((keep + "\n\n" if keep else "") + "\n".join(lines) + "\n")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="smaller inputs, fewer repeats (under a minute)")
    p.add_argument("--start", action="store_true", help="also time start-up in new interpreters")
    p.add_argument("--small", action="store_true", help="only the small calls (1000 values), against NumPy")
    p.add_argument("--out", help="write the markdown table here")
    p.add_argument("--near", action="store_true", help="only NEAR's inputs, with NEAR and without (prints)")
    args = p.parse_args(argv)
    if args.near:
        print("\n".join(near_rows(rounds=3 if args.quick else 11)))
        return
    if args.small:
        lines = small_calls(rounds=9 if args.quick else 31)
        print("\n".join(lines))
        if args.out:
            _replace_section(args.out, lines)
        return
    n = 5_000_000 if args.quick else 50_000_000
    repeat = 3 if args.quick else 11
    rng = np.random.default_rng(1)
    bw = read_bandwidth(8 * n)  # the machine's, for the heading; each case's floor: paired()
    probe0 = floor_cpu.probe_text()
    threads = parallel.threads()
    rows = []

    def row(work, name, t, nbytes, ours_t=None):
        rows.append((work, name, t, nbytes / t / 1e9, (t / ours_t) if ours_t else None))

    def case(work, a, bins, rng_, anchors=True):
        want = np.histogram(a, bins, rng_)[0]
        ours = lambda: hotbin.histogram(a, bins, rng_, backend="cpu")  # noqa: E731  (a GPU would take it)
        assert np.array_equal(ours()[0], want), work
        t, floor, add = paired(ours, [a], repeat)
        row(work, f"hotbin cpu ({threads} threads)", t, a.nbytes)
        row(work, "hotbin cpu (1 thread)", timeit(one_thread(ours), repeat), a.nbytes, t)
        for name, fn in (anchors_1d(a, bins, rng_) if anchors else {}).items():
            bad = int(np.count_nonzero(np.asarray(fn()).reshape(-1)[:want.size] != want))
            if bad:  # an anchor that is not edge-exact: reported, not asserted
                name += f" ({bad} bins differ from numpy)"
            row(work, name, timeit(fn, 3 if name == "numpy" else repeat), a.nbytes, t)
        rows.append((work, "floor (read bandwidth)", floor, a.nbytes / floor / 1e9, t / floor))
        adds = a.size * add * 1e-9
        rows.append((work, "floor (an add a value, all threads)", adds, a.nbytes / adds / 1e9, t / adds))
        return t

    # float64, 256 bins over a range: uniform, narrow (~60 bins used), constant
    for dist, a in {"uniform": rng.random(n) * 256, "narrow": 100 + rng.random(n) * 60,
                    "constant": np.full(n, 201.5)}.items():
        case(f"{n / 1e6:.0f}M float64, 256 bins, {dist}", a, 256, (0, 256))
    # float32: uniform, values on edges, whole numbers in unit bins
    case(f"{n / 1e6:.0f}M float32, 256 bins over (0, 1), uniform", rng.random(n, np.float32), 256, (0, 1))
    case(f"{n / 1e6:.0f}M float32, 256 bins over (0, 1), values k/256 (on edges)",
         (rng.integers(0, 256, n) / 256).astype(np.float32), 256, (0, 1))
    case(f"{n / 1e6:.0f}M float32, whole numbers 0-99, 100 unit bins",
         rng.integers(0, 100, n).astype(np.float32), 100, (0, 100))
    # what users pass besides a (0, 2**k) range: float32 data over a range of Python floats
    # (edges NumPy computes in float64), a range from the data, edges of their own
    case(f"{n / 1e6:.0f}M float32, 256 bins over (-3.1, 259.7), uniform",
         (rng.random(n) * 256).astype(np.float32), 256, (-3.1, 259.7))
    case(f"{n / 1e6:.0f}M float64 normal, 256 bins over its min..max (found in the call)",
         rng.normal(size=n), 256, None)
    # inputs of the bin finder NEAR (backend/cpu/rule.py; --near: with it and without): float16 data (ML
    # pipelines' half precision), float32 edges of float32 arithmetic past LINEAR32's 2**22 bins
    r16 = np.random.default_rng(16)
    case(f"{n / 1e6:.0f}M float16 normal, 256 bins over (-3.1, 2.9)", r16.normal(size=n).astype(np.float16),
         256, (-3.1, 2.9))
    case(f"{n / 1e6:.0f}M float32 normal, 2**22 bins over its min..max (found in the call)",
         r16.normal(size=n).astype(np.float32), 1 << 22, None, anchors=False)
    m = n // 5
    case(f"{m / 1e6:.0f}M float64 lognormal, 256 log-spaced edges (bins an array)",
         rng.lognormal(size=m), np.logspace(-2, 2, 257), None)
    # 8-bit images: the value-table path
    for dist, a8 in {"uniform": rng.integers(0, 256, 4 * n, dtype=np.uint8),
                     "constant": np.full(4 * n, 77, np.uint8)}.items():
        work = f"{4 * n / 1e6:.0f}M uint8, 256 bins, {dist}"
        t = case(work, a8, 256, (0, 256), anchors=False)
        row(work, "numpy.bincount", timeit(lambda: np.bincount(a8, minlength=256), 3), a8.nbytes, t)

    # cumsum
    for dt in (np.int32, np.float64):
        x = rng.integers(-100, 100, n).astype(dt)
        work = f"cumsum {n / 1e6:.0f}M {np.dtype(dt).name}"
        got, want = hotbin.cumsum(x, backend="cpu"), np.cumsum(x)
        assert got.dtype == want.dtype and np.allclose(got, want), work
        ours = timeit(lambda: hotbin.cumsum(x, backend="cpu"), repeat)
        row(work, f"hotbin cpu ({threads} threads)", ours, x.nbytes)
        row(work, "numpy.cumsum", timeit(lambda: np.cumsum(x), repeat), x.nbytes, ours)

    head = (f"CPU suite, {datetime.date.today()}, {floor_cpu.cpu_model()}, "
            f"{floor_cpu.cpus()}, hotbin threads {threads}, numpy {np.__version__}, "
            f"numba {numba.__version__}; measured parallel read bandwidth {bw / 1e9:.1f} GB/s; "
            f"core probe (floor_cpu.core_probe) before: {probe0}; after: {floor_cpu.probe_text()}")
    lines = [head, "", "`ratio`: the implementation's time over hotbin's (all threads); for a "
             "floor, hotbin's time over it: the read floor (issue #18 wants <= 1.5) and the add floor, "
             "an add a value at the rate all threads add to counters in L1 (floor_cpu.add_time), "
             "what a count that adds once a value costs, give or take the probe loop's overhead "
             "(8-bit data adds once a pair of bytes).",
             "",
             "| work | implementation | time (ms) | GB/s of input | ratio |",
             "|---|---|---|---|---|"]
    for work, name, t, gbs, ratio in rows:
        lines.append(f"| {work} | {name} | {t * 1e3:.1f} | {gbs:.2f} | {'' if ratio is None else f'{ratio:.2f}x'} |")
    if args.start:
        from start_cpu import fresh_install_rows  # two fresh venvs: a minute or two

        lines += ["", "| start-up (new interpreters, wall) | seconds |", "|---|---|"]
        lines += [f"| {what} | {t} |" for what, t in fresh_install_rows(3 if args.quick else 5)]
    lines += [""] + small_calls(rounds=9 if args.quick else 31)
    text = "\n".join(lines)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
