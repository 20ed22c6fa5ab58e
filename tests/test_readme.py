"""The Python in README.md and docs/*.md runs as written: every ```python block of a file, in
order, in one namespace (```python cuda blocks where a GPU is present; ```python norun blocks
are illustrations, such as a server that never returns)."""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FILES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
#: the fences a Python block may have: run, run on a GPU, never run
KINDS = {(): "run", ("cuda",): "cuda", ("norun",): "norun"}

_FENCE = re.compile(r"^```(.*)$")


def blocks(text: str):
    """``(first line number, tags, source)`` of each ```python block of a Markdown text."""
    out, open_at, tags, lines = [], None, None, []
    for number, line in enumerate(text.splitlines(), 1):
        fence = _FENCE.match(line)
        if open_at is None and fence:
            words = fence.group(1).split()
            open_at, tags, lines = number, tuple(words[1:]) if words[:1] == ["python"] else None, []
        elif open_at is not None and line.strip() == "```":
            if tags is not None:
                out.append((open_at + 1, tags, "\n".join(lines) + "\n"))
            open_at = None
        elif open_at is not None:
            lines.append(line)
    assert open_at is None, f"a fence opened at line {open_at} is never closed"
    return out


def _gpu() -> bool:
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # no CuPy, no driver, no device
        return False


def run_blocks(path: Path, text: str, gpu: bool) -> int:
    """Run the blocks of ``text`` in order in one namespace; the number run. A block that raises
    fails with its file and line in the traceback (the source is padded to its line)."""
    namespace, ran = {"__name__": "__readme__"}, 0
    for first, tags, source in blocks(text):
        kind = KINDS.get(tags)
        assert kind is not None, f"{path.name}:{first - 1}: unknown python fence tags {tags} (use {list(KINDS)})"
        if kind == "norun" or (kind == "cuda" and not gpu):
            continue
        exec(compile("\n" * (first - 1) + source, str(path), "exec"), namespace)
        ran += 1
    return ran


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_python_blocks_run_as_written(path, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # blocks write their pictures here
    ran = run_blocks(path, path.read_text(encoding="utf-8"), _gpu())
    if path.name == "README.md":
        assert ran >= 4 and (tmp_path / "map.png").stat().st_size > 0


def test_a_block_that_raises_fails_naming_its_line(tmp_path):
    text = "# t\n\n```python\nx = 1\n```\n\n```python cuda\nraise SystemExit\n```\n\n```python\nx + y\n```\n"
    with pytest.raises(NameError) as info:
        run_blocks(tmp_path / "t.md", text, gpu=False)
    assert info.traceback[-1].lineno + 1 == 12  # x + y is line 12 of t.md
    with pytest.raises(AssertionError, match="unknown python fence"):
        run_blocks(tmp_path / "t.md", "```python gpu\npass\n```\n", gpu=False)


def test_readme_stays_short():
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) <= 250
