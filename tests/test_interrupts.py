"""Ctrl-C held back while C extensions import (``gacost.base.interrupts``), in-process:
SIGINT is raised at the process itself, so nothing here depends on timing."""

from __future__ import annotations

import signal
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gacost.base.interrupts import deferred_interrupt
from gacost.commands.cli import main

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "qwen3-1.7b-lora.yaml"


@pytest.fixture
def ctrl_c_reaches_us() -> Iterator[None]:
    """Python's own SIGINT handler for the test: a shell starts background jobs with SIGINT
    ignored (POSIX, job control off), and an ignored SIGINT is left ignored by design
    (``test_an_ignored_sigint_stays_ignored``), so these tests would read how pytest was
    launched instead of the code."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def _busy() -> int:
    """Bytecodes after the signal: where Python would raise KeyboardInterrupt."""
    return sum(range(10_000))


def test_an_interrupt_in_the_block_is_raised_after_it(ctrl_c_reaches_us: None) -> None:
    before = signal.getsignal(signal.SIGINT)
    reached = []
    with pytest.raises(KeyboardInterrupt), deferred_interrupt():
        signal.raise_signal(signal.SIGINT)
        _busy()
        reached.append("end of block")
    assert reached == ["end of block"]
    assert signal.getsignal(signal.SIGINT) is before


def test_no_interrupt_no_exception() -> None:
    with deferred_interrupt():
        _busy()


def test_an_ignored_sigint_stays_ignored() -> None:
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with deferred_interrupt():
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
            signal.raise_signal(signal.SIGINT)
            _busy()
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)


class _SlowStack(types.ModuleType):
    """Stands for ``gacost.calibration.run``: Ctrl-C arrives while it loads."""

    def __init__(self) -> None:
        super().__init__("gacost.calibration.run")
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Any:
        if name != "calibrate":
            raise AttributeError(name)
        signal.raise_signal(signal.SIGINT)
        _busy()
        self.calls.append("import finished")
        return lambda req: self.calls.append("calibrated")


def test_ctrl_c_while_calibrate_imports_torch_is_exit_130_after_the_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    ctrl_c_reaches_us: None,
) -> None:
    job = tmp_path / "job.yaml"
    job.write_text(EXAMPLE.read_text().replace("precision: fp16", "precision: bf16"))
    stack = _SlowStack()
    monkeypatch.setitem(sys.modules, "gacost.calibration.run", stack)
    code = main(["calibrate", "--job", str(job), "--device", "cpu",
                 "--out", str(tmp_path / "p.json")])
    assert stack.calls == ["import finished"]  # the import ran to its end; nothing measured
    err = capsys.readouterr().err
    assert code == 130 and err.strip().splitlines()[-1] == "error: interrupted"
    assert not (tmp_path / "p.json").exists()
