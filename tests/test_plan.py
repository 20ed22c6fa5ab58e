"""The front door's seams: reductions as data, one Op run by both executors, the
registry's fallback, and imports that run one way."""
import ast
import pathlib

import numpy as np
import pytest

import hotbin
from hotbin import backend as registry
from hotbin.core import reductions
from hotbin.exec.ops import Op
from hotbin.core.binning import histogram_rule
from hotbin.exec.local import Local, executor

SRC = pathlib.Path(hotbin.__file__).parent


def _finish_mean(partial):
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(partial[1] > 0, partial[0] / partial[1], np.nan)


#: agg="mean" is one spec: a partial of (sum, count) rows, added, finished as sum / count
MEAN = reductions.Reduction("mean", "f64", np.dtype(np.float64), lead=(2,), finish=_finish_mean,
                            out=np.dtype(np.float64))


def _sum_and_count(be, op, data, w, red):
    """An Op kernel: the partial from accumulators every backend has (f64 and count)."""
    s = be.histogram(data[0], op.rules[0], w, reductions.SUM_F64)
    c = be.histogram(data[0], op.rules[0])
    xp = np if isinstance(s, np.ndarray) else __import__("cupy")
    return xp.stack([xp.asarray(s), xp.asarray(c, dtype=np.float64)]), None


def _mean(ex, x, v, rule):
    op = Op(_sum_and_count, (rule,), (rule.nbins,), MEAN, weighted=True)
    (m,) = ex.compute(*ex.run(op, x, v))
    return np.asarray(m)


def test_a_new_reduction_is_an_op_of_existing_ones(rng):
    x = rng.normal(size=10_000)
    v = rng.uniform(0, 10, size=x.size)
    rule = histogram_rule(x, 20, (-3, 3))
    idx = rule.index(x)
    want = np.array([v[idx == b].mean() if (idx == b).any() else np.nan for b in range(20)])
    got = _mean(Local(registry.load("cpu")), x, v, rule)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    da = pytest.importorskip("dask.array")
    ex = executor(None, da.from_array(x, chunks=1234))
    lazy = _mean(ex, da.from_array(x, chunks=1234), da.from_array(v, chunks=1234), rule)
    np.testing.assert_allclose(lazy, want, rtol=1e-12)


def test_reductions_combine_and_finish():
    parts = np.array([[1, 2], [3, 4]], np.int64)
    assert reductions.COUNT.combine(parts).tolist() == [4, 6]
    big = np.array([[2**62], [2**62]], np.int64)
    with pytest.raises(OverflowError, match="bin 0"):
        reductions.SUM_I64.combine(big)
    words = np.array([[[0], [3]], [[1], [2**32 - 1]]], np.int64)  # two partials of (hi, lo) words
    total = reductions.words(0).combine(words)
    assert total[0, 0] * 2**32 + total[1, 0] == 2**32 + 2**32 + 2
    assert reductions.fixed(32).finalize(total)[0] == (2**33 + 2) / 2**32
    assert reductions.for_weights(None) is reductions.COUNT
    assert reductions.for_weights(np.ones(2, np.int8)) is reductions.SUM_I64
    assert reductions.for_weights(np.ones(2), 7).acc == "fixed"


def test_not_implemented_falls_back_to_cpu(monkeypatch):
    """A backend answers NotImplemented for inputs it does not take; the registry runs cpu's."""
    class Fake:
        NAME = "fake"
        CAPABILITIES = frozenset()

        @staticmethod
        def histogram(a, rule, weights=None, red=reductions.COUNT):
            return NotImplemented

    be = registry.Backend(Fake)
    x = np.arange(10.0)
    rule = histogram_rule(x, 5, (0, 9))
    np.testing.assert_array_equal(be.histogram(x, rule), np.histogram(x, 5)[0])
    assert not be.has("luma")


def test_backend_choice_comes_from_the_registry(monkeypatch):
    monkeypatch.delenv(registry.ENV, raising=False)
    assert registry.name_for(None, np.zeros(3)) == "cpu"
    assert registry.name_for("wgpu") == "wgpu"
    with pytest.raises(ValueError, match="unknown backend 'metal'"):
        registry.name_for("metal")
    from hotbin.cli import build_parser

    action = next(a for a in build_parser().commands["heatmap"].actions if a.dest == "backend")
    assert tuple(action.choices) == registry.NAMES


# --- imports run one way ----------------------------------------------------------------------

def _imports():
    """``{module: {hotbin modules it imports}}`` over src/hotbin, from the source text."""
    out = {}
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC.parent).with_suffix("")
        parts = list(rel.parts)
        is_pkg = parts[-1] == "__init__"
        if is_pkg:
            parts = parts[:-1]
        name = ".".join(parts)
        pkg = parts if is_pkg else parts[:-1]
        deps = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = pkg[:len(pkg) - node.level + 1] if node.level else []
                mod = ".".join(base + ([node.module] if node.module else []))
                if node.level == 0 and not (node.module or "").startswith("hotbin"):
                    continue
                deps.add(mod)
                deps.update(f"{mod}.{a.name}" for a in node.names)
            elif isinstance(node, ast.Import):
                deps.update(a.name for a in node.names if a.name.startswith("hotbin"))
        out[name] = deps
    names = set(out)
    return {m: {d for d in ds if d in names and d != m} for m, ds in out.items()}


def test_no_import_cycles():
    graph = _imports()
    state = {}

    def visit(m, stack):
        state[m] = 1
        for d in graph[m]:
            if d.startswith(m + "."):  # a package importing its own modules
                continue
            if state.get(d) == 1:
                raise AssertionError(f"import cycle: {' -> '.join(stack + [m, d])}")
            if d not in state:
                visit(d, stack + [m])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [])


def test_backends_import_no_front_door_and_no_other_backend():
    graph = _imports()
    front = {"hotbin.api", "hotbin.heatmap", "hotbin.hist", "hotbin.histfill", "hotbin.images",
             "hotbin.aggregate", "hotbin.luma", "hotbin.exec", "hotbin.render", "hotbin.io", "hotbin.cli",
             "hotbin.serve"}
    for m, deps in graph.items():
        if not m.startswith("hotbin.backend."):
            continue
        mine = m.split(".")[2]
        for d in deps:
            assert not any(d == f or d.startswith(f + ".") for f in front), (m, d)
            if d.startswith("hotbin.backend.") and d != "hotbin.backend":
                assert d.split(".")[2] == mine, f"{m} imports another backend: {d}"


def test_core_modules_import_no_backend():
    """core/ imports only core/; the ops and the Executor protocol import no backend."""
    graph = _imports()
    core = [m for m in graph if m.startswith("hotbin.core.")]
    assert "hotbin.core.binning" in core and "hotbin.core.reductions" in core
    for m in core:
        assert all(d.split(".")[:2] == ["hotbin", "core"] for d in graph[m]), (m, graph[m])
    for m in ("hotbin.exec.ops", "hotbin.exec.executor"):
        assert not any(d.startswith("hotbin.backend") for d in graph[m]), m
