"""``hotbin completion bash|zsh|tcsh|fish``: scripts written by shtab from the parser, which the
shells load and complete with (zsh, tcsh and fish where installed)."""
import re
import shutil
import subprocess
import sys

import pytest

pytest.importorskip("shtab")


def _script(shell):
    r = subprocess.run([sys.executable, "-m", "hotbin", "completion", shell], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    return r.stdout


@pytest.fixture(scope="module")
def bash_script(tmp_path_factory):
    if shutil.which("bash") is None:
        pytest.skip("no bash")
    path = tmp_path_factory.mktemp("completion") / "hotbin.bash"
    text = _script("bash")
    path.write_text(text)
    (function,) = re.findall(r"^complete .*-F (\S+) hotbin$", text, re.MULTILINE)  # the function bash calls
    return path, function


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A folder to complete file names in."""
    d = tmp_path_factory.mktemp("files")
    for name in ("trips.csv", "trips.parquet", "notes.txt"):
        (d / name).write_text("")
    return d


@pytest.mark.parametrize("words, want", [
    ("hotbin he", {"heatmap"}),
    ("hotbin ", {"info", "image", "heatmap", "serve", "completion"}),
    ("hotbin heatmap --ag", {"--agg"}),
    ("hotbin heatmap --proj", {"--project"}),
    ("hotbin heatmap trips.csv --how ", {"eq_hist", "log", "cbrt", "linear"}),
    ("hotbin heatmap --project ", {"mercator"}),
    ("hotbin image --backend c", {"cpu", "cuda"}),
    ("hotbin serve --x lon --no-b", {"--no-browser"}),
    ("hotbin completion ", {"bash", "zsh", "tcsh", "fish"}),
    ("hotbin --ver", {"--version"}),
    ("hotbin heatmap tri", {"trips.csv", "trips.parquet"}),  # INPUT: file names
    ("hotbin heatmap trips.csv -o no", {"notes.txt"}),  # an option's value without choices: file names
])
def test_bash_completes_commands_options_and_choices(bash_script, files, words, want):
    path, function = bash_script
    line = words.split(" ")
    prog = (f"source {path}; COMP_WORDS=({' '.join(repr(w) for w in line)}); "
            f"COMP_CWORD={len(line) - 1}; {function}; printf '%s\\n' \"${{COMPREPLY[@]}}\"")
    r = subprocess.run(["bash", "-c", prog], capture_output=True, text=True, timeout=60, cwd=files)
    assert r.returncode == 0, r.stderr
    assert set(r.stdout.split()) == want


def test_every_command_and_option_is_in_each_script():
    from hotbin.cli import build_parser

    parser = build_parser()
    assert set(parser.commands) >= {"heatmap", "image", "info", "serve", "completion"}
    for shell in ("bash", "zsh", "tcsh", "fish"):
        text = _script(shell)
        for name, sub in parser.commands.items():
            assert name in text
            for action in sub.actions:
                for opt in action.option_strings:  # tcsh and fish: without the dashes
                    assert (opt.lstrip("-") if shell in ("tcsh", "fish") else opt) in text, (shell, name, opt)


def test_negative_values_stay_with_their_option():
    from hotbin.cli import _join_negative, build_parser

    argv = ["heatmap", "t.csv", "--x-range", "-74.1,-73.8", "--json", "--y-range", "-1e3,5", "--x", "-lon"]
    assert _join_negative(build_parser(), argv) == [
        "heatmap", "t.csv", "--x-range=-74.1,-73.8", "--json", "--y-range=-1e3,5", "--x", "-lon"]


@pytest.mark.skipif(shutil.which("zsh") is None, reason="no zsh")
def test_zsh_script_parses_and_registers(tmp_path):
    path = tmp_path / "_hotbin"
    path.write_text(_script("zsh"))
    assert subprocess.run(["zsh", "-n", str(path)], capture_output=True, timeout=60).returncode == 0
    r = subprocess.run(["zsh", "-c", f"fpath=({tmp_path} $fpath); autoload -U compinit; compinit -u -D; "
                        "print $_comps[hotbin]"], capture_output=True, text=True, timeout=60)
    assert r.stdout.strip() == "_hotbin", r.stderr


@pytest.mark.skipif(shutil.which("tcsh") is None, reason="no tcsh")
def test_tcsh_script_loads(tmp_path):
    path = tmp_path / "hotbin.tcsh"
    path.write_text(_script("tcsh"))
    r = subprocess.run(["tcsh", "-f", "-c", f"source {path}; complete hotbin"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0 and "--agg" in r.stdout and "mercator" in r.stdout, r.stderr


@pytest.mark.skipif(shutil.which("fish") is None, reason="no fish")
def test_fish_completes(tmp_path):
    path = tmp_path / "hotbin.fish"
    path.write_text(_script("fish"))
    r = subprocess.run(["fish", "--no-config", "-c", f"source {path}; complete -C 'hotbin heatmap --ag'; "
                        f"complete -C 'hotbin heatmap --how '"], capture_output=True, text=True, timeout=60)
    got = {line.split("\t")[0] for line in r.stdout.splitlines()}
    assert got == {"--agg", "eq_hist", "log", "cbrt", "linear"}, r.stderr


def test_help_names_the_install_lines():
    r = subprocess.run([sys.executable, "-m", "hotbin", "completion", "--help"], capture_output=True,
                       text=True, timeout=300)
    assert 'eval "$(hotbin completion bash)"' in r.stdout and "completions/hotbin.fish" in r.stdout
    assert ".tcshrc" in r.stdout
