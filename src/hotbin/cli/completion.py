"""``hotbin completion bash|zsh|fish``: a shell completion script made from the parser itself.

The sub-commands, their options, the options' help and fixed choices (``--how``,
``--backend``, ...) are read from the argparse parser that ``hotbin`` runs, so
the script follows the commands as they are; values without fixed choices
complete as file names. Install it with one line::

    echo 'eval "$(hotbin completion bash)"' >> ~/.bashrc
    hotbin completion zsh > "${fpath[1]}/_hotbin"      # or: source <(hotbin completion zsh)
    hotbin completion fish > ~/.config/fish/completions/hotbin.fish
"""
from __future__ import annotations

import argparse
import re

__all__ = ["script", "SHELLS"]

SHELLS = ("bash", "zsh", "fish")

INSTALL = """install:
  bash: echo 'eval "$(hotbin completion bash)"' >> ~/.bashrc
  zsh:  hotbin completion zsh > "${fpath[1]}/_hotbin"   (or: source <(hotbin completion zsh))
  fish: hotbin completion fish > ~/.config/fish/completions/hotbin.fish
"""


def register(sub):
    p = sub.add_parser("completion", help="print a shell completion script (bash, zsh or fish)",
                       description="Print a completion script for hotbin's commands and options.",
                       epilog=INSTALL, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("shell", choices=SHELLS, help="the shell to complete in")
    p.set_defaults(func=run)


def run(args) -> int:
    from . import build_parser

    print(script(build_parser(), args.shell), end="")
    return 0


def _commands(parser):
    """``{name: (help, [(option strings, help, choices or None, takes a value)], positional
    choices)}`` per sub-command."""
    sub = parser._subparsers._group_actions[0]
    helps = {a.dest: a.help or "" for a in sub._choices_actions}
    out = {}
    for name, p in sub.choices.items():
        opts = [(a.option_strings, _short(a.help), list(a.choices) if a.choices else None, a.nargs != 0)
                for a in p._actions if a.option_strings and a.help != argparse.SUPPRESS]
        pos = [str(c) for a in p._actions if not a.option_strings and a.choices for c in a.choices]
        out[name] = (_short(helps.get(name, "")), opts, pos)
    return out


def _short(text) -> str:
    """The first clause of a help text, without argparse's %-escapes."""
    text = re.split(r"[.;(]| e\.g\.", (text or "").replace("%%", "%"))[0].strip()
    return text[:70]


def script(parser, shell) -> str:
    """The completion script for ``shell`` of the parser's commands."""
    return {"bash": _bash, "zsh": _zsh, "fish": _fish}[shell](_commands(parser))


def _bash(cmds) -> str:
    cases = []
    for name, (_, opts, pos) in cmds.items():
        words = " ".join(s for strings, *_ in opts for s in strings)
        picks = "".join(f"            {'|'.join(strings)}) COMPREPLY=($(compgen -W \"{' '.join(map(str, ch))}\" "
                        f"-- \"$cur\")); return ;;\n" for strings, _, ch, _ in opts if ch)
        values = "|".join(s for strings, _, ch, val in opts if val and not ch for s in strings)
        cases.append(f"""        {name})
            case "$prev" in
{picks}            {values or '--'}) return ;;
            esac
            if [[ "$cur" == -* ]]; then COMPREPLY=($(compgen -W "{words}" -- "$cur"))
            else COMPREPLY=($(compgen -W "{' '.join(pos)}" -- "$cur")); fi
            ;;""")
    return f"""# bash completion for hotbin: eval "$(hotbin completion bash)"
_hotbin() {{
    local cur="${{COMP_WORDS[COMP_CWORD]}}" prev="${{COMP_WORDS[COMP_CWORD-1]}}" cmd="" i
    for ((i = 1; i < COMP_CWORD; i++)); do
        case "${{COMP_WORDS[i]}}" in -*) ;; *) cmd="${{COMP_WORDS[i]}}"; break ;; esac
    done
    COMPREPLY=()
    case "$cmd" in
        "") COMPREPLY=($(compgen -W "{' '.join(cmds)} --help --version" -- "$cur")) ;;
{chr(10).join(cases)}
    esac
}}
complete -o default -o bashdefault -F _hotbin hotbin
"""


def _zq(text) -> str:
    """Text inside a single-quoted zsh ``_arguments`` spec: brackets and colons escaped."""
    return re.sub(r"([\[\]:\\])", r"\\\1", text).replace("'", "'\\''")


def _zsh(cmds) -> str:
    described = "\n".join(f"        '{name}:{_zq(h)}'" for name, (h, *_) in cmds.items())
    cases = []
    for name, (_, opts, pos) in cmds.items():
        specs = []
        for strings, h, ch, val in opts:
            names = strings[0] if len(strings) == 1 else "{" + ",".join(strings) + "}"
            excl = "" if len(strings) == 1 else f"'({' '.join(strings)})'"
            arg = (f":value:({' '.join(map(str, ch))})" if ch else ":value:_files") if val else ""
            specs.append(f"                {excl}{names}'[{_zq(h)}]{arg}'")
        specs.append(f"                '1:shell:({' '.join(pos)})'" if pos else "                '*:file:_files'")
        cases.append(f"        {name})\n            _arguments -s \\\n" + " \\\n".join(specs) + " ;;")
    return f"""#compdef hotbin
# zsh completion for hotbin: hotbin completion zsh > "${{fpath[1]}}/_hotbin"
_hotbin() {{
    local -a commands
    commands=(
{described}
    )
    if (( CURRENT == 2 )); then
        _describe -t commands 'hotbin command' commands
        _arguments '--help[show help]' '--version[show the version]'
        return
    fi
    local cmd=$words[2]
    shift words
    (( CURRENT-- ))
    case $cmd in
{chr(10).join(cases)}
    esac
}}
if [[ "$funcstack[1]" == "_hotbin" ]]; then _hotbin "$@"; else compdef _hotbin hotbin; fi
"""


def _fq(text) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _fish(cmds) -> str:
    lines = ["# fish completion for hotbin: hotbin completion fish > ~/.config/fish/completions/hotbin.fish",
             "complete -c hotbin -f",
             "complete -c hotbin -n __fish_use_subcommand -l version -d 'show the version'"]
    for name, (h, *_) in cmds.items():
        lines.append(f"complete -c hotbin -n __fish_use_subcommand -a {name} -d {_fq(h)}")
    for name, (_, opts, pos) in cmds.items():
        when = f"-n '__fish_seen_subcommand_from {name}'"
        lines.append(f"complete -c hotbin {when} " + (f"-x -a {_fq(' '.join(pos))}" if pos else "-F"))
        for strings, h, ch, val in opts:
            flags = " ".join(f"-l {s[2:]}" if s.startswith("--") else f"-s {s[1:]}" for s in strings)
            arg = (f" -x -a {_fq(' '.join(map(str, ch)))}" if ch else " -r -F") if val else ""
            lines.append(f"complete -c hotbin {when} {flags}{arg} -d {_fq(h)}")
    return "\n".join(lines) + "\n"
