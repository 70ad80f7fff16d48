"""One GPU resolver (:func:`gacost.base.gpu_names.resolve_gpus`): a job file's ``gpus:``,
``prices --gpu`` and ``compare --gpu`` take the same names, aliases and families, resolve
them alike, and refuse the same names with the same words."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest

from gacost.base.errors import UnknownNameError
from gacost.base.gpu_names import resolve_gpus
from gacost.commands.cli import main
from gacost.pricing.snapshot import load_snapshot

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "qwen3-1.7b-lora.yaml"
UNKNOWN_TAIL = "`gacost gpus` lists the GPUs with specs, `gacost prices` every GPU with a price"

# a name, lower case, spaces, an alias, a family, a family and memory, a GPU a price
# catalog names (B200)
NAMES = ["T4", "l4", "h100 sxm", "rtx4090", "A6000", "A100", "a100-80gb", "H200", "B200"]


@cache
def priced() -> frozenset[str]:
    """The GPUs of the embedded price data."""
    return frozenset(o.gpu for o in load_snapshot().offers)


def gacost(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``gacost ARGS`` in process: exit code, stdout, stderr."""
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def job_with_gpus(tmp_path: Path, *gpus: str) -> Path:
    """The example job restricted to ``gpus``."""
    path = tmp_path / "job.yaml"
    path.write_text(EXAMPLE.read_text() + f"gpus: {json.dumps(list(gpus))}\n")
    return path


@pytest.mark.parametrize("name", NAMES)
def test_each_entry_point_resolves_a_name_as_the_resolver_does(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    resolved = resolve_gpus([name], priced())
    assert resolved and set(resolved) <= priced()
    # the job file: every resolved GPU is planned for (or skipped with a reason)
    code, out, err = gacost(capsys, "recommend", "--job", str(job_with_gpus(tmp_path, name)),
                            "--format", "json")
    assert code == 0, err
    report = json.loads(out)
    planned = set(report["best_split_per_gpu"]) | {s["gpu"] for s in report["skipped"]}
    assert planned == set(resolved)
    assert report["recommended"]["gpu"] in resolved
    # prices --gpu: the offers of exactly those GPUs
    code, out, err = gacost(capsys, "prices", "--gpu", name, "--format", "json")
    assert code == 0, err
    assert {o["gpu"] for o in json.loads(out)["offers"]} == set(resolved)
    # compare --gpu: that GPU, or for a family its member the job runs cheapest on
    code, out, err = gacost(capsys, "compare", "--job", str(EXAMPLE), "--gpu", name,
                            "--format", "json")
    assert code == 0, err
    comparison = json.loads(out)
    assert comparison["gpu"] == next(g for g in comparison["gpus_by_cost"] if g in resolved)


@pytest.mark.parametrize("name", ["B300", "gb200", "P100"])
def test_a_gpu_with_a_price_but_no_spec_is_known_everywhere(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (resolved,) = resolve_gpus([name], priced())
    code, out, err = gacost(capsys, "prices", "--gpu", name, "--format", "json")
    assert code == 0 and {o["gpu"] for o in json.loads(out)["offers"]} == {resolved}, err
    said = f"no spec for {resolved} (a GPU of the price data only)"
    code, _, err = gacost(capsys, "recommend", "--job", str(job_with_gpus(tmp_path, name)))
    assert code == UnknownNameError.exit_code and f"error: gpus: {said}" in err
    code, _, err = gacost(capsys, "compare", "--job", str(EXAMPLE), "--gpu", name)
    assert code == UnknownNameError.exit_code and f"error: --gpu: {said}" in err
    # beside a GPU with a spec, the job plans for that one and says what it left out
    code, out, err = gacost(capsys, "recommend", "--job", str(job_with_gpus(tmp_path, "T4", name)),
                            "--format", "json")
    assert code == 0, err
    report = json.loads(out)
    assert set(report["best_split_per_gpu"]) == {"T4"}
    assert any(f"no spec for: {resolved} (" in note for note in report["notes"])


@pytest.mark.parametrize(("name", "hint"), [("B3000", " (did you mean 'B300'?)"), ("T9", "")])
def test_an_unknown_name_is_refused_alike_everywhere(
    name: str, hint: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    said = f"unknown GPU '{name}'{hint}; {UNKNOWN_TAIL}"
    with pytest.raises(UnknownNameError) as exc:
        resolve_gpus([name], priced())
    assert str(exc.value) == said
    runs = [
        (("recommend", "--job", str(job_with_gpus(tmp_path, name))), f"error: {said}"),
        (("compare", "--job", str(EXAMPLE), "--gpu", name), f"error: --gpu: {said}"),
        (("prices", "--gpu", name), f"error: {said}"),
    ]
    for args, line in runs:
        code, _, err = gacost(capsys, *args)
        # the error is the last line (a stale-price warning may come first on a later day)
        assert (code, err.strip().splitlines()[-1]) == (UnknownNameError.exit_code, line), args
