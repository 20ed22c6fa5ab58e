"""``python -m hotbin``: the command line."""
import sys

from hotbin.cli import main

sys.exit(main())
