"""Installs that cannot write (issue #13 item 7): import never compiles or fails.

Each case runs in a fresh interpreter, because numba decides where to cache
when a kernel is declared, once per process.
"""
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import hotbin

SRC = Path(hotbin.__file__).resolve().parent.parent

# Work that touches every numba kernel family a CPU user meets first.
WORK = """
import numpy as np, hotbin, hotbin.render.png as png, io, os, sys
x = np.random.default_rng(0).normal(size=10_000)
h, e = hotbin.histogram(x, 16, (-4, 4))
assert h.tolist() == np.histogram(x, 16, (-4, 4))[0].tolist()
hm = hotbin.heatmap(x, x[::-1], width=8, height=8)
assert int(hm.counts.sum()) + hm.dropped == x.size
img = (np.arange(48 * 3).reshape(4, 12, 3) % 256).astype(np.uint8)
assert int(hotbin.luminance_histogram(img).sum()) == 48
path = sys.argv[1]
png.write(path, img)
assert (png.read(path) == img).all()
print("ok")
"""

# A file system that refuses every write: numba's cache locators probe with
# os.makedirs and tempfile.TemporaryFile, and both fail as on a read-only mount.
READ_ONLY = """
import errno, os, tempfile
def refuse(*a, **k):
    raise PermissionError(errno.EROFS, "Read-only file system")
os.makedirs = refuse
tempfile.TemporaryFile = refuse
"""


def _env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_CACHE")}
    env.update(extra)
    return env


def test_import_loads_no_numba():
    code = "import sys, hotbin; print(sorted(m for m in sys.modules if m.split('.')[0] == 'numba'))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_read_only_file_system(tmp_path):
    """No writable cache anywhere: kernels run uncached, results unchanged."""
    r = subprocess.run([sys.executable, "-c", READ_ONLY + WORK, str(tmp_path / "o.png")],
                       capture_output=True, text=True, timeout=600,
                       env=_env(HOME=str(tmp_path / "no-home")))
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip() == "ok"


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0 or not shutil.which("setpriv"),
                    reason="needs root and setpriv to run as an unprivileged user")
def test_read_only_install_as_unprivileged_user():
    """A copy of the package owned by root, run by nobody with an unwritable HOME."""
    top = tempfile.mkdtemp(prefix="hotbin-ro-")
    try:
        shutil.copytree(SRC / "hotbin", Path(top) / "hotbin",
                        ignore=shutil.ignore_patterns("__pycache__", "*.nbi", "*.nbc"))
        for d, _, _ in os.walk(top):
            os.chmod(d, 0o755)
        probe = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                                sys.executable, "-c", "import numpy, numba"],
                               capture_output=True, text=True)
        if probe.returncode != 0:
            pytest.skip("this interpreter is not readable by an unprivileged user")
        out_png = Path(top) / "w"
        out_png.mkdir()
        os.chmod(out_png, 0o777)  # the only writable place: where the test's PNG goes
        r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                            sys.executable, "-c", WORK, str(out_png / "o.png")],
                           capture_output=True, text=True, timeout=600,
                           env=_env(HOME="/nonexistent", PYTHONPATH=top, PYTHONDONTWRITEBYTECODE="1"))
        assert r.returncode == 0, r.stderr[-2000:]
        assert r.stdout.strip() == "ok"
        assert not list(Path(top).rglob("*.nbi"))  # nothing cached in the read-only tree
    finally:
        shutil.rmtree(top, ignore_errors=True)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    """The wheel ``pip wheel`` builds from this tree (isolated build, as ``pip install .``)."""
    out = tmp_path_factory.mktemp("wheel")
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(SRC.parent)],
                       capture_output=True, text=True, timeout=1200, env=_env())
    if r.returncode != 0 and "Could not find a version" in r.stderr:
        pytest.skip("no package index for the build requirements")
    assert r.returncode == 0, r.stderr[-2000:]
    (whl,) = out.glob("hotbin-*.whl")
    return whl


@pytest.mark.slow
def test_wheel_carries_kernels_types_and_license(wheel):
    """The built wheel holds every package, kernel and header, py.typed, and the LICENSE that
    pyproject.toml declares (issue #15 item 8)."""
    import zipfile

    names = set(zipfile.ZipFile(wheel).namelist())
    src = SRC / "hotbin"
    expected = {f"hotbin/{p.relative_to(src).as_posix()}" for p in src.rglob("*")
                if p.is_file() and p.suffix in (".py", ".cu", ".cuh", ".wgsl", ".typed")
                and "__pycache__" not in p.parts}
    assert expected <= names, sorted(expected - names)
    assert "hotbin/py.typed" in names
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)


# First calls the wheel's precompiled kernels cover: they must load, not compile.
FIRST_CALLS = """
import numpy as np
from numba.core import event
compiled = event.RecordingListener()
event.register("numba:compile", compiled)
import hotbin
rng = np.random.default_rng(1)
x = rng.normal(size=100_000); y = rng.normal(size=100_000)
hotbin.histogram(x, 256)
hotbin.heatmap(x, y, x, agg="mean", width=300, height=200)
hotbin.heatmap(x, y, x, agg="std")
x32, y32 = (x * 10 + 50).astype(np.float32), (y * 10 + 50).astype(np.float32)
hotbin.heatmap(x32, y32, width=1024, height=1024, x_range=(0, 100), y_range=(0, 100))  # the demo's call
hotbin.heatmap(x32, y32, by=(x > 0).astype(np.int8), width=640, height=480)
print([ev.data["dispatcher"].py_func.__qualname__ for _, ev in compiled.buffer[1::2]])
"""


@pytest.mark.slow
def test_wheel_carries_this_machines_kernels(wheel, tmp_path):
    """Issue #18: the wheel holds the machine code of the common first calls for the machine
    that built it, so those calls compile nothing after ``pip install .``."""
    import pickle
    import zipfile

    import numba

    zipfile.ZipFile(wheel).extractall(tmp_path)
    indexes = list((tmp_path / "hotbin").rglob("*.nbi"))
    assert len(indexes) >= 8, indexes  # counts, values, banded, 1-D codes, scans, luma, ...
    with open(indexes[0], "rb") as f:
        built_with = pickle.load(f)  # numba's version heads each index
    if built_with != numba.__version__:
        pytest.skip(f"the isolated build used numba {built_with}, this environment {numba.__version__}")
    r = subprocess.run([sys.executable, "-c", FIRST_CALLS], capture_output=True, text=True, timeout=600,
                       env=_env(PYTHONPATH=str(tmp_path)), cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip() == "[]", r.stdout


# A values heatmap in a new interpreter: prints the kernels it compiled.
VALUES_CALL = """
import numpy as np
from numba.core import event
compiled = event.RecordingListener()
event.register("numba:compile", compiled)
import hotbin
x = np.random.default_rng(2).random(40_000)
hotbin.heatmap(x, x[::-1], x, agg="mean", width=64, height=64)
print(sorted({ev.data["dispatcher"].py_func.__qualname__ for _, ev in compiled.buffer[1::2]}))
"""


def test_cached_kernels_follow_edits_of_the_kernels_they_call(tmp_path):
    """A cached kernel holds the code of the kernels it calls from other modules
    (scatter.part_values inlines values.add_block), so an edit of values.py, or an upgrade in
    place that leaves cache files behind, must recompile part_values too: hotbin stamps its
    kernels with the whole package (_jit.package_stamp), not numba's one file."""
    pkg = tmp_path / "hotbin"
    shutil.copytree(SRC / "hotbin", pkg, ignore=shutil.ignore_patterns("__pycache__", "*.nbi", "*.nbc"))

    def run():
        r = subprocess.run([sys.executable, "-c", VALUES_CALL], capture_output=True, text=True, timeout=600,
                           env=_env(PYTHONPATH=str(tmp_path)), cwd=tmp_path)
        assert r.returncode == 0, r.stderr[-2000:]
        return r.stdout.strip()

    assert "part_values" in run()  # compiled and cached
    assert run() == "[]"  # loaded
    with open(pkg / "backend" / "cpu" / "values.py", "a") as f:
        f.write("\n# an edit of a callee's module\n")
    assert "part_values" in run()  # its file is unchanged, yet it compiles again
