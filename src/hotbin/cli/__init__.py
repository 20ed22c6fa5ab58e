"""The ``hotbin`` command line: a thin layer over the API.

Each sub-command lives in its own module exposing ``register(commands)``,
which adds its parser (``commands.add_parser``) and sets ``func`` (called with the
parsed args; returns the exit code). Errors a user can cause become one line on
stderr and exit 1.
"""
from __future__ import annotations

import argparse
import importlib
import os
import re
import sys

#: modules that provide sub-commands
COMMANDS = ("hotbin.cli.info", "hotbin.cli.image", "hotbin.cli.heatmap", "hotbin.cli.serve",
            "hotbin.cli.completion")


class UserError(Exception):
    """A problem with the user's input: printed as one line, no traceback."""


EXAMPLES = """examples:
  hotbin heatmap --demo -o demo.png
  hotbin heatmap trips.csv --x lon --y lat --x-range -74.1,-73.8 --y-range 40.6,40.9 -o nyc.png
  hotbin heatmap 'trips/**/*.parquet' --x lon --y lat --where "fare > 0" --agg mean:fare -o fare.nc
  hotbin heatmap trips.parquet --x lon --y lat --by vendor --project mercator --width 2048 -o map.tif
  zcat trips.csv.gz | hotbin heatmap - --x lon --y lat --json -o trips.png
  hotbin image photo.jpg --equalize photo-eq.png
  hotbin info
  hotbin completion bash   (zsh, tcsh, fish: a completion script)
"""

#: a value that argparse would take for an option because it starts with "-": a negative
#: number or a list of numbers ("-74.1,-73.8", "-1e3,5")
_NEGATIVE = re.compile(r"^-(\d|\.\d|inf|nan)", re.IGNORECASE)


class Parser(argparse.ArgumentParser):
    """hotbin's argument parser: it keeps its arguments' actions as they are added
    (``actions``) and, at the top, its sub-commands' parsers by name (``commands``), so
    the option reading of :func:`_join_negative` and the completion script need none of
    argparse's private attributes."""

    def __init__(self, *args, **kwargs):
        self.actions: list[argparse.Action] = []  # before argparse adds --help
        self.commands: dict[str, Parser] = {}
        super().__init__(*args, **kwargs)

    def add_argument(self, *args, **kwargs):
        action = super().add_argument(*args, **kwargs)
        self.actions.append(action)
        return action


class Commands:
    """What a sub-command module registers with: ``add_parser`` as argparse's, each parser
    also recorded by its name in the top parser's ``commands``."""

    def __init__(self, parser: Parser, sub):
        self._parser, self._sub = parser, sub

    def add_parser(self, name: str, **kwargs) -> Parser:
        p = self._sub.add_parser(name, **kwargs)
        self._parser.commands[name] = p
        return p


def build_parser() -> Parser:
    from .. import __version__

    parser = Parser(prog="hotbin", description=__doc__.splitlines()[0], epilog=EXAMPLES,
                    formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"hotbin {__version__}")
    commands = Commands(parser, parser.add_subparsers(dest="command", required=True, parser_class=Parser))
    for name in COMMANDS:
        importlib.import_module(name).register(commands)
    return parser


def _join_negative(parser: Parser, argv: list[str]) -> list[str]:
    """``--x-range -74.1,-73.8`` as ``--x-range=-74.1,-73.8``: the value of an option that takes
    one is kept with it when it starts with a minus sign and a number (argparse would read it as
    an option)."""
    takes_value = {s for p in parser.commands.values() for a in p.actions if a.option_strings and a.nargs is None
                   for s in a.option_strings}  # flags (store_true, store_const) have nargs 0
    out, i = [], 0
    while i < len(argv):
        tok = argv[i]
        if tok in takes_value and i + 1 < len(argv) and _NEGATIVE.match(argv[i + 1]):
            out.append(f"{tok}={argv[i + 1]}")
            i += 2
            continue
        out.append(tok)
        i += 1
    return out


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(_join_negative(parser, list(sys.argv[1:] if argv is None else argv)))
    try:
        out = int(args.func(args) or 0)
        sys.stdout.flush()  # a closed pipe shows here, not at exit
        return out
    except BrokenPipeError:  # `hotbin info | head -1`: the reader left; exit quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except (UserError, OSError, ValueError, TypeError, KeyError, ModuleNotFoundError) as exc:
        print(f"hotbin {args.command}: error: {exc}", file=sys.stderr)
        return 1
    except MemoryError as exc:  # sizes are checked first; this is the last line of defence
        print(f"hotbin {args.command}: error: out of memory{': ' + str(exc) if str(exc) else ''}",
              file=sys.stderr)
        return 1

