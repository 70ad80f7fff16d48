"""The entry point of the ``gacost`` script and ``python -m gacost`` (:func:`main`): parse,
dispatch to a command module, print, exit.

Every :class:`gacost.base.errors.GacostError` is caught here and printed as one
``error: ...`` line (a traceback only with ``--debug``).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import Any

from gacost import __version__
from gacost.base.interrupts import deferred_interrupt

MAX_ERROR_LINES = 25  # an error is at most a screenful
MAX_LINE_CHARS = 500
INTERNAL = 70  # EX_SOFTWARE: a bug in gacost, not the user's input


# Each command, its one-line help, in the order ``gacost --help`` lists them. A command's flags
# and its run live in ``gacost.commands.<name>`` (``add_arguments``), imported only for the
# command given: ``gacost prices`` loads no model, ``gacost recommend`` no calibration.
COMMANDS: dict[str, str] = {
    "recommend": "recommend a GPU, provider and m x k split for a job",
    "budget": "plan many runs or a sweep: totals, deadline, budget",
    "compare": "price one GPU at every provider; GPU break-even matrix",
    "calibrate": "time the job's splits on this machine's GPU",
    "gpus": "list the GPU specs gacost knows",
    "prices": "the GPU market (one line per GPU) or its offers; refresh the rates",
    "models": "list the shipped model configs",
    "probe": "time this host's CPU; compare it with a calibrated machine",
}


def _command_module(name: str) -> ModuleType:
    return importlib.import_module(f"gacost.commands.{name}")


def command_in(argv: Sequence[str]) -> str | None:
    """The command named by ``argv`` (its first word that is not a flag; gacost's own flags
    take no value), or None when there is none or it is not a command."""
    word = next((a for a in argv if not a.startswith("-")), None)
    return word if word in COMMANDS else None


class _ExactParser(argparse.ArgumentParser):
    """A parser that takes flags only as spelled: no abbreviations (``recommend --gpu X``
    was taken as ``--gpus-per-run X`` and failed on "expected an integer")."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The argument parser: every command listed, with its flags (all of them, or those of
    the command ``only``: the others are then names with a help line)."""
    parser = _ExactParser(
        prog="gacost",
        description=(
            "Which GPU to rent, from which provider, and which micro-batch x gradient-"
            "accumulation split to run for a LoRA/QLoRA fine-tune, and what it costs."
        ),
    )
    parser.add_argument("--version", action="version", version=f"gacost {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True,
                                parser_class=_ExactParser)
    for name, help_line in COMMANDS.items():
        command = sub.add_parser(name, help=help_line)
        if only is None or name == only:
            _command_module(name).add_arguments(command)
    return parser


def fit_message(text: str) -> str:
    """An error message cut to :data:`MAX_ERROR_LINES` lines of :data:`MAX_LINE_CHARS`."""
    lines = text.splitlines() or [""]
    cut = [line if len(line) <= MAX_LINE_CHARS else line[:MAX_LINE_CHARS] + "..."
           for line in lines[:MAX_ERROR_LINES]]
    if len(lines) > MAX_ERROR_LINES:
        cut.append(f"error: ... and {len(lines) - MAX_ERROR_LINES} more lines")
    return "\n".join(cut)


def _fail(message: str, code: int) -> int:
    print(fit_message(f"error: {message}"), file=sys.stderr)
    return code


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``gacost`` script; returns the exit code.

    Every outcome is one of: the report on stdout (exit 0); ``error: ...`` lines on stderr
    for a :class:`~gacost.base.errors.GacostError` (its exit code), a file the OS refused
    (1) or Ctrl-C (130; held back while C extensions import, see
    :mod:`gacost.base.interrupts`); a traceback only with ``--debug``. Anything else is a bug in
    gacost and says so in one line (exit 70)."""
    debug = "--debug" in (sys.argv[1:] if argv is None else argv)
    try:
        return _main(argv)
    except KeyboardInterrupt:
        if debug:
            raise
        return _fail("interrupted", 130)
    except OSError as exc:  # a full disk, a folder without permission, ...
        if debug:
            raise
        where = f" {exc.filename}" if exc.filename else ""
        return _fail(f"cannot read or write{where} ({exc.strerror or exc}); "
                     "free space or fix the permissions and run again", 1)
    except MemoryError:
        if debug:
            raise
        return _fail("out of memory", 1)
    except Exception as exc:  # noqa: BLE001 - the last line of defence: no traceback
        if debug:
            raise
        return _fail(f"internal error ({exc.__class__.__name__}: {str(exc)[:200]}); please "
                     "report it with the command line (--debug shows the traceback)", INTERNAL)


def _main(argv: Sequence[str] | None) -> int:
    from gacost.base.errors import GacostError

    words = sys.argv[1:] if argv is None else argv
    with deferred_interrupt():  # importing a command loads C extensions (pydantic, yaml)
        parser = build_parser(command_in(words))
    args = parser.parse_args(words)
    try:
        text: str = args.run(args)
    except GacostError as exc:
        if args.debug:
            raise
        return _fail(str(exc), exc.exit_code)
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
