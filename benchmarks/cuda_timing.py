"""The one GPU timer of the benchmarks: median milliseconds between CUDA events."""
import statistics


def timeit(fn, reps=20, warm=3):
    """Median milliseconds of ``fn()`` between CUDA events on the current stream, after warm-up."""
    import cupy as cp

    for _ in range(warm):
        fn()
    cp.cuda.Device().synchronize()
    times = []
    for _ in range(reps):
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(cp.cuda.get_elapsed_time(a, b))
    return statistics.median(times)
