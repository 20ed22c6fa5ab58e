"""``hotbin completion bash|zsh|fish`` (issue #15 item 8): scripts made from the parser, which the
shells load and complete with (zsh and fish where installed)."""
import shutil
import subprocess
import sys

import pytest


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
    path.write_text(_script("bash"))
    return path


@pytest.mark.parametrize("words, want", [
    ("hotbin he", {"heatmap"}),
    ("hotbin heatmap --ag", {"--agg"}),
    ("hotbin heatmap --proj", {"--project"}),
    ("hotbin heatmap trips.csv --how ", {"eq_hist", "log", "cbrt", "linear"}),
    ("hotbin heatmap --project ", {"mercator"}),
    ("hotbin image --backend c", {"cpu", "cuda"}),
    ("hotbin completion ", {"bash", "zsh", "fish"}),
    ("hotbin --ver", {"--version"}),
])
def test_bash_completes_commands_options_and_choices(bash_script, words, want):
    line = words.split(" ")
    prog = (f"source {bash_script}; COMP_WORDS=({' '.join(repr(w) for w in line)}); "
            f"COMP_CWORD={len(line) - 1}; _hotbin; printf '%s\\n' \"${{COMPREPLY[@]}}\"")
    r = subprocess.run(["bash", "-c", prog], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert set(r.stdout.split()) == want


def test_every_command_and_option_is_in_each_script():
    from hotbin.cli import build_parser

    parser = build_parser()
    commands = parser._subparsers._group_actions[0].choices
    for shell in ("bash", "zsh", "fish"):
        text = _script(shell)
        for name, sub in commands.items():
            assert name in text
            for action in sub._actions:
                for opt in action.option_strings:
                    assert (opt[2:] if shell == "fish" else opt) in text, (shell, name, opt)


@pytest.mark.skipif(shutil.which("zsh") is None, reason="no zsh")
def test_zsh_script_parses_and_registers(tmp_path):
    path = tmp_path / "_hotbin"
    path.write_text(_script("zsh"))
    assert subprocess.run(["zsh", "-n", str(path)], capture_output=True, timeout=60).returncode == 0
    r = subprocess.run(["zsh", "-c", f"autoload -U compinit; compinit -u; source {path}; print $_comps[hotbin]"],
                       capture_output=True, text=True, timeout=60)
    assert r.stdout.strip() == "_hotbin", r.stderr


@pytest.mark.skipif(shutil.which("fish") is None, reason="no fish")
def test_fish_completes(tmp_path):
    path = tmp_path / "hotbin.fish"
    path.write_text(_script("fish"))
    r = subprocess.run(["fish", "-c", f"source {path}; complete -C 'hotbin heatmap --ag'; "
                        f"complete -C 'hotbin heatmap --how '"], capture_output=True, text=True, timeout=60)
    got = {line.split("\t")[0] for line in r.stdout.splitlines()}
    assert got == {"--agg", "eq_hist", "log", "cbrt", "linear"}, r.stderr


def test_help_names_the_install_lines():
    r = subprocess.run([sys.executable, "-m", "hotbin", "completion", "--help"], capture_output=True,
                       text=True, timeout=300)
    assert 'eval "$(hotbin completion bash)"' in r.stdout and "completions/hotbin.fish" in r.stdout
