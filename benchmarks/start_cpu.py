"""Start-up on the CPU (issue #18 item 1): fresh installs, first calls, new interpreters.

Two fresh virtual environments get ``pip install`` of this tree: one as users get it (the
wheel carries the cpu kernels precompiled for this machine: ``hotbin.precompile``), one with
``HOTBIN_PRECOMPILE=0`` (kernels compile on first use: what every install did before). In
each, every first call runs in a new interpreter right after the install ("first"), then
again ("warm", median of repeats); issue #18 wants first - warm <= 2 s. Also the first small
histogram of a new interpreter (warm cache) against ``import numpy`` alone, in alternation (target 0.4 s).
Answers are checked inside the calls (each asserts against NumPy or a known total).

    python benchmarks/start_cpu.py [--repeat 3] [--out benchmarks/results/start-cpu-MACHINE.md]

pip resolves numpy and numba from its cache or the index; installing takes a minute or two.
``--offline`` (a machine with no index, such as the H200 host): the venvs see this interpreter's
packages (numpy, numba, setuptools: a .pth file) and pip builds this tree without build isolation.
"""
from __future__ import annotations

import argparse
import datetime
import os
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SMALL_CALL = "import numpy as np, hotbin; hotbin.histogram(np.arange(1000.0), 10)"
DATA = "import numpy as np, hotbin; r = np.random.default_rng(0); "
FIRST_CALLS = {
    "histogram of 10M float64, 256 bins, range found": DATA + (
        "a = r.random(10**7); assert (hotbin.histogram(a, 256)[0] == np.histogram(a, 256)[0]).all()"),
    "hotbin heatmap --demo": None,  # the README's first command
    "heatmap(agg='mean') of 200k float64 points, 512^2": DATA + (
        "x, y = r.normal(size=(2, 200_000)); hm = hotbin.heatmap(x, y, x, agg='mean'); "
        "assert hm.counts.sum() == 200_000"),
    "heatmap of 2M float32 points, 1024^2, a given range": DATA + (
        "x, y = r.random((2, 2_000_000), dtype=np.float32); "
        "hm = hotbin.heatmap(x, y, width=1024, height=1024, x_range=(0, 1), y_range=(0, 1)); "
        "assert hm.counts.sum() + hm.dropped == 2_000_000"),
}


def _wall(args, env, repeat=1):
    ts = []
    for _ in range(repeat):
        t = time.perf_counter()
        subprocess.run(args, env=env, check=True, capture_output=True, cwd=tempfile.gettempdir())
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)


#: alternations of the first small histogram with ``import numpy`` alone: the host's import
#: time moved 0.26 -> 0.34 s between two runs of 2026-12-03 (medians of 3)
SMALL_ROUNDS = 11


def _alternate(commands, env, rounds):
    """Wall seconds of each command, run in turn ``rounds`` times: one list per command."""
    ts = [[] for _ in commands]
    for _ in range(rounds):
        for t, args in zip(ts, commands):
            t.append(_wall(args, env))
    return ts


def _clean_env() -> dict:
    """This process's environment without what would steer a fresh install (numba's and
    hotbin's settings, a PYTHONPATH to this tree)."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("NUMBA_", "HOTBIN_", "PYTHONPATH"))}


def _install(venv: Path, precompile: bool, offline: bool) -> float:
    """Seconds of ``pip install`` of this tree into a new venv (its creation not counted)."""
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    if offline:  # this interpreter's packages (numpy, numba, setuptools), seen through a .pth file
        py = str(venv / "bin" / "python")
        site = subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                              check=True, capture_output=True, text=True).stdout.strip()
        Path(site, "offline.pth").write_text("\n".join(set(sysconfig.get_paths()[k] for k in ("purelib", "platlib")))
                                             + "\n")
    env = _clean_env()
    if not precompile:
        env["HOTBIN_PRECOMPILE"] = "0"
    t = time.perf_counter()
    pip = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(ROOT),
                          *(["--no-index", "--no-build-isolation"] if offline else [])],
                         env=env, capture_output=True, text=True)
    if pip.returncode:
        raise SystemExit(f"pip install failed:\n{pip.stderr}")
    return time.perf_counter() - t


def fresh_install_rows(repeat: int, offline: bool = False):
    """(what, seconds) for both installs: pip install, and each first call first / warm / extra."""
    rows = []
    env = _clean_env()
    with tempfile.TemporaryDirectory() as top:
        for precompile, label in ((True, "precompiled"), (False, "HOTBIN_PRECOMPILE=0")):
            venv = Path(top) / label.replace("=", "")
            rows.append((f"`pip install .` into a new venv ({label})", _install(venv, precompile, offline)))
            py = str(venv / "bin" / "python")
            for what, code in FIRST_CALLS.items():
                args = ([str(venv / "bin" / "hotbin"), "heatmap", "--demo", "-o",
                         os.path.join(top, "demo.png")] if code is None else [py, "-c", code])
                first = _wall(args, env)
                warm = _wall(args, env, repeat)
                rows.append((f"{what} ({label}): first / warm / extra",
                             f"{first:.2f} / {warm:.2f} / {first - warm:.2f}"))
            if precompile:
                ours, numpy_alone = _alternate([[py, "-c", SMALL_CALL], [py, "-c", "import numpy"]], env,
                                               SMALL_ROUNDS)
                share = statistics.median(a - b for a, b in zip(ours, numpy_alone))
                rows.append(("new process: import + first histogram of 1000 values (warm)",
                             f"{statistics.median(ours):.2f}"))
                rows.append(("new process: import numpy alone", f"{statistics.median(numpy_alone):.2f}"))
                rows.append((f"hotbin's share (median of {SMALL_ROUNDS} alternations' differences)", f"{share:.3f}"))
    return [(w, f"{t:.2f}" if isinstance(t, float) else t) for w, t in rows]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=3, help="warm runs per call (median)")
    p.add_argument("--out", help="write the markdown table here")
    p.add_argument("--offline", action="store_true", help="no index: this interpreter's numpy and numba")
    args = p.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from floor_cpu import cpu_model, cpus

    lines = [f"Start-up, {datetime.date.today()}, {cpu_model()}, {cpus()}, "
             f"Python {sys.version.split()[0]}" + (" (--offline: this interpreter's numpy, numba)" if args.offline else ""),
             "",
             "| start-up (new interpreters, wall) | seconds |", "|---|---|"]
    lines += [f"| {what} | {t} |" for what, t in fresh_install_rows(args.repeat, args.offline)]
    text = "\n".join(lines)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
