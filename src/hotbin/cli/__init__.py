"""The ``hotbin`` command line: a thin layer over the API.

Each sub-command lives in its own module exposing ``register(subparsers)``,
which adds its parser and sets ``func`` (called with the parsed args; returns
the exit code). Errors a user can cause become one line on stderr and exit 1.
"""
from __future__ import annotations

import argparse
import importlib
import sys

#: modules that provide sub-commands
COMMANDS = ("hotbin.cli.info", "hotbin.cli.image", "hotbin.cli.heatmap")


class UserError(Exception):
    """A problem with the user's input: printed as one line, no traceback."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hotbin", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMANDS:
        importlib.import_module(name).register(sub)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (UserError, OSError, ValueError, TypeError, KeyError, ModuleNotFoundError) as exc:
        print(f"hotbin {args.command}: error: {exc}", file=sys.stderr)
        return 1
    except MemoryError as exc:  # sizes are checked first; this is the last line of defence
        print(f"hotbin {args.command}: error: out of memory{': ' + str(exc) if str(exc) else ''}",
              file=sys.stderr)
        return 1

