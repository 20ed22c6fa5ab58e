"""``python -m hotbin.cli``: the command line (as ``python -m hotbin``)."""
import sys

from hotbin.cli import main

sys.exit(main())
