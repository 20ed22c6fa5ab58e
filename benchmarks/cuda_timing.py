"""The one GPU timer of the benchmarks: median milliseconds between CUDA events."""
import statistics


def timeit(fn, reps=20, warm=3, calls=1):
    """Median milliseconds of ``fn()`` between CUDA events on the current stream, after warm-up.
    With ``calls`` > 1, that many calls are queued back to back between the events and the time
    is per call: the device's own time once the host's work before each launch overlaps the
    previous call (one call from an idle device includes that host work)."""
    import cupy as cp

    for _ in range(warm):
        fn()
    cp.cuda.Device().synchronize()
    times = []
    for _ in range(reps):
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record()
        for _ in range(calls):
            fn()
        b.record()
        b.synchronize()
        times.append(cp.cuda.get_elapsed_time(a, b) / calls)
    return statistics.median(times)
