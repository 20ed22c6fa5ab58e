"""The ``hotbin`` command line: a thin layer over the API.

Each sub-command lives in its own module exposing ``register(subparsers)``,
which adds its parser and sets ``func`` (called with the parsed args; returns
the exit code). Errors a user can cause become one line on stderr and exit 1.
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
  hotbin completion bash   (zsh, fish: a completion script)
"""

#: a value that argparse would take for an option because it starts with "-": a negative
#: number or a list of numbers ("-74.1,-73.8", "-1e3,5")
_NEGATIVE = re.compile(r"^-(\d|\.\d|inf|nan)", re.IGNORECASE)


def build_parser() -> argparse.ArgumentParser:
    from .. import __version__

    parser = argparse.ArgumentParser(prog="hotbin", description=__doc__.splitlines()[0], epilog=EXAMPLES,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"hotbin {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMANDS:
        importlib.import_module(name).register(sub)
    return parser


def _join_negative(parser: argparse.ArgumentParser, argv: list[str]) -> list[str]:
    """``--x-range -74.1,-73.8`` as ``--x-range=-74.1,-73.8``: the value of an option that takes
    one is kept with it when it starts with a minus sign and a number (argparse would read it as
    an option)."""
    takes_value = set()
    for action in parser._subparsers._group_actions[0].choices.values():
        for a in action._actions:
            if a.option_strings and a.nargs is None and not isinstance(a, argparse._StoreConstAction):
                takes_value.update(a.option_strings)
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

