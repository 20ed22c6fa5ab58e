#!/usr/bin/env python3
"""Compile every CUDA kernel file (src/hotbin/kernels/*.cu) for sm_90 with nvcc.

Each file is compiled once, with its non-template kernels, the syntax of its
templates, and explicit instantiations of the templates that a backend module
launches: any ``hotbin.backend.*`` module that defines ``ci_name_expressions()``
(returning ``{file name: [name expression, ...]}``) is asked, importable without
CuPy. Exits non-zero on any compile error. Needs no GPU.
"""
from __future__ import annotations

import importlib
import os
import pkgutil
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KERNELS = ROOT / "src" / "hotbin" / "kernels"
ARCH = "sm_90"


def name_expressions() -> dict[str, list[str]]:
    sys.path.insert(0, str(ROOT / "src"))
    import hotbin.backend as pkg
    out: dict[str, list[str]] = {}
    for info in pkgutil.iter_modules(pkg.__path__):
        try:
            mod = importlib.import_module(f"hotbin.backend.{info.name}")
        except Exception as exc:  # an optional backend that cannot even import is not ours to judge
            print(f"note: hotbin.backend.{info.name} not imported ({exc})")
            continue
        fn = getattr(mod, "ci_name_expressions", None)
        if fn:
            for f, names in fn().items():
                out.setdefault(f, []).extend(names)
    return out


def compile_one(nvcc: str, cu: Path, names: list[str], tmp: Path) -> tuple[str, int, str]:
    src = tmp / f"{cu.stem}__ci.cu"
    lines = [f'#include "{cu}"']
    if names:
        lines.append("void* hotbin_ci_instantiations[] = {")
        lines += [f"    (void*)&{n}," for n in names]
        lines.append("};")
    src.write_text("\n".join(lines) + "\n")
    cmd = [nvcc, f"-arch={ARCH}", "-std=c++17", "-I", str(KERNELS), "-c", str(src),
           "-o", str(tmp / f"{cu.stem}.o"), "-Werror", "all-warnings"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    return cu.name, p.returncode, (p.stdout + p.stderr).strip()


def main() -> int:
    nvcc = os.environ.get("NVCC") or shutil.which("nvcc") or "/usr/local/bin/nvcc"
    if not Path(nvcc).exists() and not shutil.which(nvcc):
        print("compile_kernels: no nvcc found", file=sys.stderr)
        return 1
    files = sorted(KERNELS.glob("*.cu"))
    if not files:
        print("compile_kernels: no .cu files")
        return 0
    exprs = name_expressions()
    unknown = set(exprs) - {f.name for f in files}
    if unknown:
        print(f"compile_kernels: instantiations for missing files {sorted(unknown)}", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as d, ThreadPoolExecutor(os.cpu_count() or 2) as pool:
        jobs = [pool.submit(compile_one, nvcc, f, exprs.get(f.name, []), Path(d)) for f in files]
        failed = 0
        for j in jobs:
            name, rc, log = j.result()
            n = len(exprs.get(name, []))
            print(f"{'ok  ' if rc == 0 else 'FAIL'} {name} ({n} instantiations, {ARCH})")
            if rc:
                failed += 1
                print(log, file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
