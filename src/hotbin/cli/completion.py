"""``hotbin completion bash|zsh|tcsh|fish``: a shell completion script made from the parser itself.

The scripts are written by shtab from the argparse parser that ``hotbin`` runs, so
they follow the commands as they are: sub-commands, their options, fixed choices
(``--how``, ``--backend``, ...); values without fixed choices complete as file
names. Install one with one line::

    echo 'eval "$(hotbin completion bash)"' >> ~/.bashrc
    hotbin completion zsh > "${fpath[1]}/_hotbin"
    hotbin completion tcsh > ~/.hotbin.tcsh && echo 'source ~/.hotbin.tcsh' >> ~/.tcshrc
    hotbin completion fish > ~/.config/fish/completions/hotbin.fish
"""
from __future__ import annotations

import argparse

__all__ = ["script", "SHELLS"]

SHELLS = ("bash", "zsh", "tcsh", "fish")

INSTALL = """install:
  bash: echo 'eval "$(hotbin completion bash)"' >> ~/.bashrc
  zsh:  hotbin completion zsh > "${fpath[1]}/_hotbin"   (a directory on $fpath, then restart zsh)
  tcsh: hotbin completion tcsh > ~/.hotbin.tcsh && echo 'source ~/.hotbin.tcsh' >> ~/.tcshrc
  fish: hotbin completion fish > ~/.config/fish/completions/hotbin.fish
"""


def register(sub):
    p = sub.add_parser("completion", help="print a shell completion script (bash, zsh, tcsh or fish)",
                       description="Print a completion script for hotbin's commands and options.",
                       epilog=INSTALL, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("shell", choices=SHELLS, help="the shell to complete in")
    p.set_defaults(func=run)


def run(args) -> int:
    from . import build_parser

    print(script(build_parser(), args.shell), end="")
    return 0


def _shtab():
    try:
        import shtab
    except ModuleNotFoundError as exc:
        raise ModuleNotFoundError("hotbin completion needs shtab: pip install shtab") from exc
    return shtab


def script(parser, shell: str) -> str:
    """The completion script for ``shell`` of ``parser`` (a :class:`hotbin.cli.Parser`): every
    argument that takes a value without fixed choices completes as a file name."""
    shtab = _shtab()
    for p in (parser, *parser.commands.values()):
        for action in p.actions:
            if action.nargs != 0 and not action.choices and not hasattr(action, "complete"):
                action.complete = shtab.FILE  # shtab's way to mark an argument
    text = shtab.complete(parser, shell=shell)
    return text if text.endswith("\n") else text + "\n"
