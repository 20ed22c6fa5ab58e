"""``hotbin info``: version, usable backends and their devices."""
from __future__ import annotations


def register(sub):
    p = sub.add_parser("info", help="print the version, the usable backends and their devices")
    p.set_defaults(func=run)


def run(args) -> int:
    from . import __version__, backends

    print(f"hotbin {__version__}")
    for name in backends.NAMES:
        try:
            mod = backends.load(name)
            print(f"  {name:5s} yes  {'; '.join(mod.devices())}")
        except Exception as exc:
            print(f"  {name:5s} no   ({exc})")
    return 0
