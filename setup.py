"""The wheel carries the cpu kernels' machine code for the machine that builds it.

After the sources are copied to build/lib, :mod:`hotbin.precompile` runs over that copy and
numba caches the kernels of the common first calls in its ``__pycache__`` folders, which go
into the wheel: ``pip install .`` then spends the ~1 minute of compiling once, and a first
call loads its kernels instead of compiling them. Entries for another CPU or numba version
are never used (numba keys them), so a wheel taken elsewhere works as one without them.
Editable installs compile on first use, as before; ``HOTBIN_PRECOMPILE=0`` skips the step,
and a failure of the step only warns: the install must work without it.
"""
import os
import subprocess
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


class build_py_precompiled(build_py):
    def run(self):
        super().run()
        if self.editable_mode:
            return
        lib = Path(self.build_lib).resolve()
        for stale in [*lib.glob("hotbin/**/*.nbi"), *lib.glob("hotbin/**/*.nbc")]:
            stale.unlink()  # an earlier build's entries (build/ is reused) ship only if made now
        if os.environ.get("HOTBIN_PRECOMPILE", "1") == "0":
            return
        env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_CACHE")}
        # pip's isolated build environment reaches numba through PYTHONPATH: keep it, after lib
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(lib), env.get("PYTHONPATH")]))
        try:
            r = subprocess.run([sys.executable, "-m", "hotbin.precompile"], env=env, cwd=lib,
                               capture_output=True, text=True, timeout=1800)
            ok, log = r.returncode == 0, r.stdout + r.stderr
        except (OSError, subprocess.TimeoutExpired) as exc:
            ok, log = False, str(exc)
        if not ok:
            # what was cached before the failure stays: numba writes each entry whole
            self.warn("hotbin: kernels not all precompiled (the rest compile on first use):\n"
                      + log[-2000:])


setup(cmdclass={"build_py": build_py_precompiled})
