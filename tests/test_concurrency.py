"""Calls from several Python threads at once give the same answers as one at a time (issue #8)."""
import threading

import numpy as np

import hotbin
from conftest import to_numpy


def _hammer(fn, threads=4, rounds=6):
    out, errors = [], []

    def work():
        try:
            for _ in range(rounds):
                out.append(fn())
        except Exception as exc:  # collected, so a failure in a thread fails the test
            errors.append(exc)

    ts = [threading.Thread(target=work) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors
    return out


def test_threads_agree(backend, rng):
    a = rng.random(300_000)  # above the serial threshold: parallel regions on the cpu backend
    x, y = rng.random((2, 200_000))
    w = rng.standard_normal(x.size)
    ref_h = to_numpy(hotbin.histogram(a, 64, (0, 1), backend=backend)[0])
    ref_hm = to_numpy(hotbin.heatmap(x, y, w, width=32, height=16, deterministic=True, backend=backend).counts)
    ref_c = to_numpy(hotbin.cumsum((a * 100).astype(np.int32), backend=backend))

    def call():
        return (to_numpy(hotbin.histogram(a, 64, (0, 1), backend=backend)[0]),
                to_numpy(hotbin.heatmap(x, y, w, width=32, height=16, deterministic=True,
                                        backend=backend).counts),
                to_numpy(hotbin.cumsum((a * 100).astype(np.int32), backend=backend)))

    for h, hm, c in _hammer(call):
        np.testing.assert_array_equal(h, ref_h)
        assert hm.tobytes() == ref_hm.tobytes()
        np.testing.assert_array_equal(c, ref_c)


def test_threads_never_share_kept_partials(rng):
    """The cpu backend keeps a call's partials for the next call of the same shape
    (backend/cpu/kept.py) only once it has read them: mean / min heatmaps merged their values
    partials after keeping them, so a call in another thread could take and overwrite them
    mid-merge (dask's threads did: its heatmaps differed from memory's in the full test run).
    Each thread's own data, against the same call alone."""
    from hotbin.backend.cpu import kept
    kept._KEPT.clear()
    data = [rng.random((3, 40_000)) for _ in range(4)]
    kw = dict(width=5, height=4, x_range=(0, 1), y_range=(0, 1), backend="cpu")
    for agg in ("mean", "min"):
        refs = [hotbin.heatmap(x, y, w, agg=agg, **kw).values for x, y, w in data]
        errors = []

        def work(i):
            x, y, w = data[i]
            for _ in range(40):
                got = hotbin.heatmap(x, y, w, agg=agg, **kw).values
                if got.tobytes() != refs[i].tobytes():
                    errors.append((agg, i))
                    return

        ts = [threading.Thread(target=work, args=(i,)) for i in range(len(data))]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        assert not errors, errors


def test_share_gives_each_piece_once_and_more_to_a_faster_thread():
    """parallel.share: every piece of range(n) once, to threads t < workers; a thread that is
    slow on its pieces does fewer of them (the others take the next ones)."""
    import time

    from hotbin.backend.cpu import parallel
    old = parallel.set_threads(3)
    try:
        for workers in (1, 2, 3):
            seen = []
            parallel.share(1_000_003, workers, lambda lo, hi, t: seen.append((lo, hi, t)), size=10_000)
            spans = sorted((lo, hi) for lo, hi, _ in seen)
            assert spans == [(lo, min(1_000_003, lo + 10_000)) for lo in range(0, 1_000_003, 10_000)]
            assert {t for *_, t in seen} <= set(range(workers))

        seen = []

        def piece(lo, hi, t):
            if t == 0:
                time.sleep(0.02)
            seen.append(t)
        parallel.share(1 << 20, 2, piece, size=1 << 14)
        assert len(seen) == 64 and seen.count(1) > 2 * seen.count(0)
        parallel.share(0, 2, piece)  # no pieces: no call
        assert len(seen) == 64
    finally:
        parallel.set_threads(old)


def test_counts_in_many_shared_pieces_match_numpy(rng, monkeypatch):
    """The 1-D counts, raw 8/16-bit counts and bincount, with pieces far smaller than a
    thread's share (parallel.PIECE), against NumPy: pieces end off block and run boundaries."""
    from hotbin.backend.cpu import parallel
    monkeypatch.setattr(parallel, "PIECE", 4099)
    old = parallel.set_threads(3)
    try:
        n = 1_500_001
        cases = [(rng.random(n) * 10, 256, (0, 10)), (rng.random(n, np.float32), 100, (0, 1)),
                 (np.full(n, 3.0), 7, (0, 7)), (rng.integers(0, 256, n, dtype=np.uint8), 256, (0, 256)),
                 (rng.integers(0, 65536, n // 3).astype(np.uint16), 300, (0, 65536))]
        for a, bins, r in cases:
            np.testing.assert_array_equal(hotbin.histogram(a, bins, r, backend="cpu")[0],
                                          np.histogram(a, bins, r)[0])
        x = rng.integers(0, 1000, n)
        np.testing.assert_array_equal(hotbin.bincount(x, backend="cpu"), np.bincount(x))
    finally:
        parallel.set_threads(old)

