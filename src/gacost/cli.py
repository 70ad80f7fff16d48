"""The ``gacost`` command line: parse, dispatch to a command module, print, exit.

Every :class:`advisor.errors.GacostError` is caught here and printed as one
``error: ...`` line (a traceback only with ``--debug``).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from gacost import __version__
from gacost.base.errors import GacostError
from gacost.commands import budget, calibrate, compare, gpus, models, prices, recommend

COMMANDS = (recommend, budget, compare, calibrate, gpus, prices, models)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand registered."""
    parser = argparse.ArgumentParser(
        prog="gacost",
        description=(
            "Which GPU to rent, from which provider, and which micro-batch x gradient-"
            "accumulation split to run for a LoRA/QLoRA fine-tune, and what it costs."
        ),
    )
    parser.add_argument("--version", action="version", version=f"gacost {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in COMMANDS:
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``gacost`` script; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        text: str = args.run(args)
    except GacostError as exc:
        if args.debug:
            raise
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    if text:
        try:
            print(text)
            sys.stdout.flush()
        except BrokenPipeError:  # e.g. `gacost prices | head`: the reader left; not an error
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
    return 0


if __name__ == "__main__":
    sys.exit(main())
