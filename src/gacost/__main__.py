"""``python -m gacost``: the same as the ``gacost`` script."""

import sys

from gacost.cli import main

sys.exit(main())
