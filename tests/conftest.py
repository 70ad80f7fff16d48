"""Shared fixtures: isolate every test from the user's cache, keys and proxies."""

from __future__ import annotations

from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GACOST_HOME", str(tmp_path / "gacost-home"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    for var in (
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "VAST_API_KEY",
        "RUNPOD_API_KEY",
        "LAMBDA_API_KEY",
    ):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def fixtures() -> Path:
    """The folder of test fixtures."""
    return FIXTURES
