"""``hotbin info``: version, usable backends and their devices."""
from __future__ import annotations


def register(sub):
    p = sub.add_parser("info", help="print the version, the usable backends and their devices")
    p.set_defaults(func=run)


def run(args) -> int:
    from .. import __version__
    from .. import backend as registry

    print(f"hotbin {__version__}")
    for name in registry.NAMES:
        try:
            mod = registry.load(name)
            print(f"  {name:5s} yes  {'; '.join(mod.devices())}")
        except Exception as exc:
            print(f"  {name:5s} no   ({exc})")
    return 0
