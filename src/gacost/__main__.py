"""``python -m gacost``: the same as the ``gacost`` script."""

import sys

try:
    from gacost.commands.cli import main
except KeyboardInterrupt:  # Ctrl-C while the first modules load, before main() runs
    sys.stderr.write("error: interrupted\n")
    sys.exit(130)

sys.exit(main())
