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
