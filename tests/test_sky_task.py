"""``recommend --sky-task`` and ``--launch``: the plan as a SkyPilot task (launch/).

Three kinds of tests:
- without SkyPilot: the task's fields, the accelerator names against the catalogs gacost
  prices from, and the errors;
- ``--launch`` through a fake :class:`~gacost.launch.skypilot.Launcher` (the question,
  ``--yes``, a failing launch, spot plans as managed jobs), SkyPilot's check stubbed;
- with SkyPilot 0.14 (``pytest.importorskip("sky")``; CI installs the sky extra in a venv
  of its own): SkyPilot's own parser and catalog code resolve each task to the intended
  cloud, region and instance type, at the offer's price, offline. SkyPilot runs in a
  subprocess whose HOME holds catalogs seeded from tests/fixtures/sky/catalogs (rows of
  the v8 catalogs, tests/fixtures/sky/SOURCES.md), with usage collection off and every
  proxy pointed at a closed local port, so a catalog fetch would fail the test.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from gacost.advisor.planner import GroupRun, Plan, Pricing, RunGroup
from gacost.advisor.split_estimates import SplitEstimate
from gacost.base.errors import JobSpecError, LaunchError
from gacost.base.job import load_job
from gacost.base.records import Offer
from gacost.commands.cli import main
from gacost.launch import sky_task
from gacost.launch.sky_task import (
    LAUNCHABLE,
    render_task,
    sky_region,
    sky_resources,
    task_config,
)
from gacost.pricing.snapshot import load_snapshot, read_offers_csv

ROOT = Path(__file__).resolve().parents[1]
SKY = Path(__file__).parent / "fixtures" / "sky"
PRICES = SKY / "prices.csv"
EXAMPLE = ROOT / "examples" / "qwen3-1.7b-lora.yaml"


def _offers() -> list[Offer]:
    return list(read_offers_csv(PRICES))


def _offer(provider: str, instance_type: str) -> Offer:
    return next(o for o in _offers()
                if o.provider == provider and o.instance_type == instance_type)


def _plan(offer: Offer, *, spot: bool = False, runs: int = 1, instances: int = 1,
          split: tuple[int, int] = (4, 1), world: int = 1) -> Plan:
    pricing: Pricing = "spot" if spot else "on-demand"
    rate = offer.spot_hour if spot else offer.price_hour
    assert rate is not None
    estimate = SplitEstimate(offer.gpu, split[0], split[1], 1.0, "predicted", 5.0,
                             "predicted", 14.0, True, world_size=world)
    group = GroupRun(RunGroup("job", runs, 100, 512, split[0] * split[1] * world), estimate)
    return Plan(offer, pricing, rate, (group,), 0.2 if spot else 0.0, instances)


# --- the task, without SkyPilot ------------------------------------------------------------


def test_single_gpu_task_fields() -> None:
    offer = _offer("verda", "1V100.6V")
    config = task_config(_plan(offer, runs=3), "python train.py --lr 1e-4")
    assert config["resources"] == {"infra": "verda/FIN-01", "instance_type": "1V100.6V",
                                   "accelerators": "V100:1", "use_spot": False}
    assert "num_nodes" not in config
    assert config["envs"] == {"GACOST_MICRO_BATCH": "4", "GACOST_GRAD_ACCUM": "1",
                              "GACOST_RUNS": "3"}
    assert "pip install 'gacost[calibrate]==" in config["setup"]
    assert "\n  python -m gacost.calibration.wire train.py --lr 1e-4\n" in config["run"]
    assert 'GACOST_PROFILE="$HOME/gacost-profiles/run-$i.json"' in config["run"]


def test_multi_gpu_spot_task_runs_torchrun_on_every_node() -> None:
    offer = _offer("aws", "g6.12xlarge")
    config = task_config(_plan(offer, spot=True, runs=5, instances=2, split=(2, 2), world=4),
                         "python3 -m mypkg.train --epochs 1")
    assert config["resources"]["accelerators"] == "L4:4"
    assert config["resources"]["use_spot"] is True
    assert config["num_nodes"] == 2
    assert config["envs"]["GACOST_WORLD_SIZE"] == "4"
    assert ("torchrun --nproc_per_node=$GACOST_WORLD_SIZE -m gacost.calibration.wire "
            "-m mypkg.train --epochs 1") in (
        config["run"])
    # node r of N runs runs r, r+N, ...: 5 runs on 2 nodes
    assert 'seq "${SKYPILOT_NODE_RANK:-0}" "${SKYPILOT_NUM_NODES:-1}"' in config["run"]


def test_python_commands_run_with_the_callback_wired_in() -> None:
    assert sky_task.run_line("python train.py --lr 1e-4", 1) == (
        "python -m gacost.calibration.wire train.py --lr 1e-4")
    assert sky_task.run_line("python3 -m mypkg.train", 1) == (
        "python3 -m gacost.calibration.wire -m mypkg.train")
    assert sky_task.run_line("python train.py", 2) == (
        "torchrun --nproc_per_node=$GACOST_WORLD_SIZE -m gacost.calibration.wire train.py")


def test_launchers_are_left_alone_and_other_commands_refused() -> None:
    assert sky_task.run_line("accelerate launch train.py", 2) == "accelerate launch train.py"
    assert sky_task.run_line("bash run.sh", 1) == "bash run.sh"
    with pytest.raises(LaunchError, match="torchrun --nproc_per_node=2"):
        sky_task.run_line("bash run.sh", 2)
    with pytest.raises(LaunchError, match="cannot split"):
        sky_task.run_line("python train.py --name 'unclosed", 2)


def test_levers_the_plan_turns_on_are_envs() -> None:
    from dataclasses import replace

    plan = _plan(_offer("verda", "1V100.6V"))
    group = plan.groups[0]
    on = replace(plan, groups=(replace(group, estimate=replace(
        group.estimate, levers=("torch_compile", "liger"))),))
    envs = task_config(on, "python train.py")["envs"]
    assert envs["GACOST_TORCH_COMPILE"] == envs["GACOST_LIGER"] == "true"
    assert "GACOST_LIGER" not in task_config(plan, "python train.py")["envs"]


def test_gcp_offers_split_host_and_attached_gpus() -> None:
    assert sky_resources(_offer("gcp", "n1-highmem-4+1xT4")) == ("n1-highmem-4", "T4", 1)
    assert sky_resources(_offer("gcp", "a2-highgpu-1g")) == ("a2-highgpu-1g", "A100", 1)
    assert sky_resources(_offer("gcp", "g2-standard-4")) == ("g2-standard-4", "L4", 1)


def test_catalog_quirks_are_undone_for_skypilot() -> None:
    # gacost prices the ND96isr H100 v5 as 8 GPUs; SkyPilot's catalog (and check) says 12
    assert sky_resources(_offer("azure", "Standard_ND96isr_H100_v5"))[2] == 12
    # gacost drops Vast's empty state (", CN, AS"); SkyPilot's region keeps it
    vast = _offer("vast", "8x-RTX_4090-32-65536")
    assert (vast.region, sky_region(vast)) == ("CN, AS", ", CN, AS")
    assert task_config(_plan(vast, world=8, split=(1, 1)), "python t.py")["resources"][
        "infra"] == "vast/, CN, AS"


def test_every_launchable_snapshot_offer_gets_its_catalog_accelerator_name() -> None:
    """Each embedded-snapshot offer of a provider SkyPilot launches (GCP's host + GPU pairs
    aside, named by the tests above) gets the AcceleratorName its catalog row has."""
    names: dict[tuple[str, str], str] = {}
    with (SKY / "accelerator_names.csv").open(encoding="utf-8") as f:
        for row in csv.DictReader(f):
            names[(row["provider"], row["instance_type"])] = row["accelerator"]
    checked = 0
    for o in load_snapshot().offers:
        if o.provider not in LAUNCHABLE or o.gpu_count < 1 or o.gpu_count != int(o.gpu_count):
            continue
        want = names.get((o.provider, o.instance_type))
        if want is None:
            assert o.provider == "gcp", o
            continue
        assert sky_resources(o)[1] == want, o
        checked += 1
    assert checked > 1000


def test_a_provider_skypilot_cannot_launch_is_one_line() -> None:
    offer = Offer("lium", "UA", "1x_RTX4090", "RTX-4090", 1, 24, 8, 32, 0.28, None, "t", "")
    with pytest.raises(LaunchError) as info:
        task_config(_plan(offer), "python train.py")
    message = str(info.value)
    assert "\n" not in message and "lium" in message and "providers:" in message
    assert "verda" in message


def test_a_plan_without_an_offer_or_command_is_refused() -> None:
    offer = Offer("aws", "us-east-1", "", "L4", 1, 24, 4, 16, 0.8, None, "t", "")
    with pytest.raises(LaunchError, match="no offer"):
        task_config(_plan(offer), "python train.py")
    with pytest.raises(LaunchError, match="--train-command"):
        task_config(_plan(_offer("verda", "1V100.6V")), "  ")


def test_rendered_task_is_yaml_with_a_header() -> None:
    plan = _plan(_offer("lambda", "gpu_1x_a100_sxm4"), runs=2)
    text = render_task(plan, task_config(plan, "python train.py"))
    assert text.startswith("# SkyPilot task written by gacost")
    assert yaml.safe_load(text)["run"].startswith("set -e\n")
    assert "run: |" in text and "setup: |" in text


def test_train_command_job_key_is_checked(tmp_path: Path) -> None:
    base = EXAMPLE.read_text(encoding="utf-8")
    job = tmp_path / "job.yaml"
    job.write_text(base + "train_command: python train.py\n", encoding="utf-8")
    assert load_job(job).train_command == "python train.py"
    for bad in ("'   '", "''", "3", '"a\\nb"'):
        job.write_text(base + f"train_command: {bad}\n", encoding="utf-8")
        with pytest.raises(JobSpecError, match="train_command"):
            load_job(job)


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(argv)
    return code, capsys.readouterr().err


def test_cli_errors_come_before_any_work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run.yaml"
    out.write_text("mine\n", encoding="utf-8")
    code, err = _run(["recommend", "--job", str(EXAMPLE), "--sky-task", str(out)], capsys)
    assert code == 1 and "exists" in err and "--force" in err and err.count("\n") == 1
    assert out.read_text(encoding="utf-8") == "mine\n"
    code, err = _run(["recommend", "--job", str(EXAMPLE), "--train-command", "x"], capsys)
    assert code == 1 and "only with --sky-task" in err
    monkeypatch.setitem(sys.modules, "sky", None)  # `import sky` raises ImportError
    code, err = _run(["recommend", "--job", str(EXAMPLE), "--sky-task",
                      str(tmp_path / "new.yaml")], capsys)
    assert code == 1 and "pip install 'gacost[sky]'" in err and err.count("\n") == 1
    assert not (tmp_path / "new.yaml").exists()


# --- --launch, through a fake launcher (SkyPilot's check stubbed: tested below) -------------


class FakeLauncher:
    """Records each launch; ``fail`` makes it raise as a SkyPilot launch that failed."""

    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.calls: list[tuple[dict[str, Any], str, bool]] = []

    def launch(self, config: dict[str, Any], *, name: str, managed: bool) -> str:
        self.calls.append((config, name, managed))
        if self.fail:
            raise RuntimeError("ResourcesUnavailableError: no capacity\nin FIN-01")
        return f"job 1 on cluster {name}"


def _stub_sky(monkeypatch: pytest.MonkeyPatch, launcher: FakeLauncher) -> None:
    from gacost.commands import sky as command
    from gacost.launch import skypilot
    from gacost.launch.skypilot import Resolved

    def resolve(config: dict[str, Any]) -> list[Resolved]:
        r = config["resources"]
        cloud, region = r["infra"].split("/")
        name, count = r["accelerators"].split(":")
        return [Resolved(cloud, region, r["instance_type"], {name: int(count)},
                         r["use_spot"], config.get("num_nodes", 1), 1.0)]

    # commands.sky imports these from gacost.launch when --sky-task is given
    monkeypatch.setattr(skypilot, "require_sky", lambda: sys)
    monkeypatch.setattr(skypilot, "resolve", resolve)
    monkeypatch.setattr(command, "launcher_factory", lambda: launcher)


def _launch_argv(out: Path, *extra: str) -> list[str]:
    return ["recommend", "--job", str(EXAMPLE), "--prices", str(PRICES), "--sky-task",
            str(out), "--train-command", "python train.py", "--launch", *extra]


def test_launch_with_yes_hands_the_written_task_to_the_launcher(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    fake = FakeLauncher()
    _stub_sky(monkeypatch, fake)
    out = tmp_path / "run.yaml"
    assert main(_launch_argv(out, "--yes")) == 0
    stdout = capsys.readouterr().out
    assert "launched: job 1 on cluster gacost-run" in stdout
    ((config, name, managed),) = fake.calls
    assert name == "gacost-run" and managed is False
    assert yaml.safe_load(out.read_text(encoding="utf-8")) == config


def test_launch_asks_and_a_no_launches_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    fake = FakeLauncher()
    _stub_sky(monkeypatch, fake)
    out = tmp_path / "run.yaml"
    monkeypatch.setattr(sys.stdin, "isatty", lambda: False)
    code, err = _run(_launch_argv(out), capsys)  # no terminal to ask on: --yes needed
    assert code == 1 and "--yes" in err and not out.exists()
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True)
    monkeypatch.setattr("builtins.input", lambda: "n")
    code, err = _run(_launch_argv(out), capsys)
    assert code == 1 and "not launched" in err and "[y/N]" in err
    assert out.exists() and fake.calls == []
    monkeypatch.setattr("builtins.input", lambda: "y")
    assert main(_launch_argv(out, "--force")) == 0 and len(fake.calls) == 1


def test_a_failing_launch_is_one_line_and_keeps_the_task(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    _stub_sky(monkeypatch, FakeLauncher(fail=True))
    out = tmp_path / "run.yaml"
    code, err = _run(_launch_argv(out, "--yes"), capsys)
    assert code == 1 and err.count("\n") == 1
    assert "SkyPilot could not launch" in err and "no capacity in FIN-01" in err
    assert "sky check" in err and out.exists()


def test_spot_plans_launch_as_managed_jobs(monkeypatch: pytest.MonkeyPatch) -> None:
    import argparse

    from gacost.commands import sky as command

    fake = FakeLauncher()
    _stub_sky(monkeypatch, fake)
    plan = _plan(_offer("aws", "g6.xlarge"), spot=True)
    config = task_config(plan, "python train.py")
    command.launch(argparse.Namespace(yes=True), plan, config)
    assert fake.calls == [(config, "gacost-run", True)]


def test_launch_needs_sky_task(capsys: pytest.CaptureFixture[str]) -> None:
    code, err = _run(["recommend", "--job", str(EXAMPLE), "--launch"], capsys)
    assert code == 1 and "--launch applies only with --sky-task" in err


# --- SkyPilot's own checks, offline ----------------------------------------------------------


def _sky_env(tmp_path: Path) -> dict[str, str]:
    """A HOME whose SkyPilot catalogs are the fixture rows; no way out to the network."""
    home = tmp_path / "home"
    shutil.copytree(SKY / "catalogs", home / ".sky" / "catalogs")
    env = {k: v for k, v in os.environ.items()
           if k not in ("SKY_RUNTIME_DIR", "SKYPILOT_CONFIG")}
    closed = "http://127.0.0.1:9"
    env.update(HOME=str(home), SKYPILOT_DISABLE_USAGE_COLLECTION="1", HTTP_PROXY=closed,
               HTTPS_PROXY=closed, http_proxy=closed, https_proxy=closed, NO_PROXY="",
               GACOST_HOME=str(tmp_path / "gacost-home"))
    return env


def _resolve_all(configs: list[dict[str, Any]], tmp_path: Path) -> list[Any]:
    """gacost.launch.skypilot.resolve on each config in one SkyPilot process: a list of
    resolved resources or ``{"error": message}`` per config."""
    script = (
        "import dataclasses, json, sys\n"
        "from gacost.base.errors import LaunchError\n"
        "from gacost.launch.skypilot import resolve\n"
        "out = []\n"
        "for config in json.load(sys.stdin):\n"
        "    try:\n"
        "        out.append([dataclasses.asdict(r) for r in resolve(config)])\n"
        "    except LaunchError as exc:\n"
        "        out.append({'error': str(exc)})\n"
        "print(json.dumps(out))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], input=json.dumps(configs),
                          capture_output=True, text=True, env=_sky_env(tmp_path), cwd=tmp_path,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    meta = tmp_path / "home" / ".sky" / "catalogs" / "v8" / ".meta"
    assert not list(meta.glob("**/*.md5")), "SkyPilot downloaded a catalog"
    result: list[Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


PLANS = [  # (provider, instance type, spot, instances, world): each a test of its own below
    ("verda", "1V100.6V", False, 1, 1),
    ("aws", "g6.xlarge", True, 1, 1),
    ("aws", "g5g.xlarge", False, 1, 1),
    ("aws", "g6.12xlarge", False, 2, 4),
    ("gcp", "n1-highmem-4+1xT4", False, 1, 1),
    ("gcp", "g2-standard-4", True, 1, 1),
    ("gcp", "a2-highgpu-1g", False, 1, 1),
    ("lambda", "gpu_1x_a100_sxm4", False, 1, 1),
    ("runpod", "2x_L4_SECURE", False, 1, 2),
    ("azure", "Standard_NC24ads_A100_v4", False, 1, 1),
    ("azure", "Standard_ND96isr_H100_v5", False, 1, 8),  # SkyPilot's catalog says 12 GPUs
    ("vast", "8x-RTX_4090-32-65536", False, 1, 8),  # region ", CN, AS" in the catalog
]


def test_skypilot_resolves_each_task_to_the_offer(tmp_path: Path) -> None:
    pytest.importorskip("sky")
    plans = [_plan(_offer(p, it), spot=spot, instances=n, world=w, split=(1, 1) if w > 1
                   else (4, 1)) for p, it, spot, n, w in PLANS]
    configs = [task_config(plan, "python train.py") for plan in plans]
    results = _resolve_all(configs, tmp_path)
    for plan, config, result in zip(plans, configs, results, strict=True):
        assert isinstance(result, list), (plan.label, result)
        (r,) = result
        o = plan.offer
        assert (r["cloud"], r["region"]) == (o.provider, sky_region(o))
        assert r["instance_type"] == config["resources"]["instance_type"]
        name, count = config["resources"]["accelerators"].split(":")
        assert r["accelerators"] == {name: int(count)}
        assert r["use_spot"] == (plan.pricing == "spot")
        assert r["num_nodes"] == plan.instances
        # SkyPilot's price of the instance is the rate gacost planned with
        assert r["hourly_cost"] == pytest.approx(plan.rate_hour, rel=1e-6), plan.label


def test_skypilot_refuses_what_the_catalog_does_not_have(tmp_path: Path) -> None:
    pytest.importorskip("sky")
    good = task_config(_plan(_offer("verda", "1V100.6V")), "python train.py")
    wrong_gpu = json.loads(json.dumps(good))
    wrong_gpu["resources"]["accelerators"] = "A100:1"
    wrong_region = json.loads(json.dumps(good))
    wrong_region["resources"]["infra"] = "verda/XX-99"
    lambda_spot = task_config(_plan(_offer("lambda", "gpu_1x_a100_sxm4")), "python train.py")
    lambda_spot["resources"]["use_spot"] = True
    results = _resolve_all([wrong_gpu, wrong_region, lambda_spot], tmp_path)
    assert "Infeasible" in results[0]["error"] or "accelerators" in results[0]["error"]
    assert "no Verda XX-99" in results[1]["error"]
    assert "Spot" in results[2]["error"] or "spot" in results[2]["error"]
    assert all("\n" not in r["error"] for r in results)


def test_recommend_writes_a_task_skypilot_resolves(tmp_path: Path) -> None:
    pytest.importorskip("sky")
    env = _sky_env(tmp_path)
    out = tmp_path / "run.yaml"
    argv = [sys.executable, "-m", "gacost", "recommend", "--job", str(EXAMPLE), "--prices",
            str(PRICES), "--sky-task", str(out), "--train-command", "python train.py",
            "--format", "json"]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=tmp_path,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert report["sky_task"] == str(out)
    task = yaml.safe_load(out.read_text(encoding="utf-8"))
    best = report["recommended"]
    assert task["resources"]["infra"] == f"{best['provider']}/{best['region']}"
    assert task["envs"]["GACOST_MICRO_BATCH"] == str(best["micro_batch"])
    assert task["envs"]["GACOST_GRAD_ACCUM"] == str(best["grad_accum"])
    assert task["run"].count("python -m gacost.calibration.wire train.py") == 1
    # the file stays unless --force
    out.write_text("mine\n", encoding="utf-8")
    again = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=tmp_path,
                           timeout=300, check=False)
    assert again.returncode == 1 and "--force" in again.stderr
    assert out.read_text(encoding="utf-8") == "mine\n"
    forced = subprocess.run([*argv, "--force"], capture_output=True, text=True, env=env,
                            cwd=tmp_path, timeout=300, check=False)
    assert forced.returncode == 0, forced.stderr[-3000:]
    assert yaml.safe_load(out.read_text(encoding="utf-8")) == task


def test_launchable_providers_are_skypilot_clouds() -> None:
    pytest.importorskip("sky")
    from sky.utils import registry

    assert set(LAUNCHABLE) <= set(registry.CLOUD_REGISTRY), (
        set(LAUNCHABLE) - set(registry.CLOUD_REGISTRY))
    for provider in ("daytona", "hyperstack", "jarvislabs", "lium", "spheron"):
        assert provider not in registry.CLOUD_REGISTRY


# --- calibrate --sky's tasks and its SkyPilot adapter, offline ------------------------------

CALIBRATIONS = [  # (provider, instance type, spot, GPUs): the offer a calibration rents
    ("verda", "1V100.6V", False, 1),
    ("aws", "g6.xlarge", True, 1),
    ("aws", "g5g.xlarge", False, 1),
    ("gcp", "n1-highmem-4+1xT4", False, 1),
    ("gcp", "g2-standard-4", True, 1),
    ("lambda", "gpu_1x_a100_sxm4", False, 1),
    ("runpod", "2x_L4_SECURE", False, 2),
]


def _calibration_configs(tmp_path: Path) -> tuple[list[Any], list[dict[str, Any]]]:
    import argparse

    from gacost.advisor.calibration_time import CalibrationTime
    from gacost.commands.calibrate_sky import forwarded
    from gacost.launch.remote_calibration import Target, calibration_task, cluster_name
    from gacost.launch.staging import stage

    workdir = stage(tmp_path / "workdir", load_job(EXAMPLE))
    args = argparse.Namespace(warmup=3, max_updates=40, max_seconds=12.0, tolerance=0.02,
                              passes=1, isolation="auto", splits=None, compile=False,
                              liger=False, trace=True, trace_all=False)
    targets, configs = [], []
    for provider, instance, spot, world in CALIBRATIONS:
        offer = _offer(provider, instance)
        rate = offer.spot_hour if spot else offer.price_hour
        assert rate is not None
        t = Target(offer.gpu, offer, "spot" if spot else "on-demand", rate, world,
                   CalibrationTime(300.0, 3, 3, 0, "predicted"))
        name = cluster_name(t.gpu, "beef")
        targets.append(t)
        configs.append(calibration_task(t, str(workdir), forwarded(args, world), name))
    return targets, configs


def test_skypilot_resolves_each_calibration_task_to_its_offer(tmp_path: Path) -> None:
    pytest.importorskip("sky")
    targets, configs = _calibration_configs(tmp_path)
    results = _resolve_all(configs, tmp_path)
    for t, config, result in zip(targets, configs, results, strict=True):
        assert isinstance(result, list), (t.label, result)
        (r,) = result
        assert (r["cloud"], r["region"]) == (t.offer.provider, sky_region(t.offer))
        assert r["instance_type"] == sky_resources(t.offer)[0]
        name, count = config["resources"]["accelerators"].split(":")
        assert r["accelerators"] == {name: int(count)} and int(count) == t.world
        assert r["use_spot"] == (t.pricing == "spot") and r["num_nodes"] == 1
        # SkyPilot prices the instance at the rate the cost preview used
        assert r["hourly_cost"] == pytest.approx(t.rate_hour, rel=1e-6), t.label


ADAPTER = """
import inspect, json, sys, types
from pathlib import Path
import sky
from sky import exceptions
from sky.client import sdk
from gacost.launch.skypilot import SkyClusterLauncher

calls = []

def checked(module, name, result):
    signature = inspect.signature(getattr(module, name))
    def fake(*args, **kwargs):
        signature.bind(*args, **kwargs)  # a TypeError if SkyPilot 0.14 takes no such call
        calls.append(name)
        return result(*args, **kwargs) if callable(result) else result
    return fake

def stream_and_get(request, **kwargs):
    print("streamed", request, file=kwargs["output_stream"])
    if request == "down-missing":
        raise exceptions.ClusterDoesNotExist("no such cluster")
    return (3, None) if request == "launch-request" else None

def tail_logs(cluster, job_id, follow, **kwargs):
    print("(gacost, pid=1) GACOST-PROFILE-BEGIN", file=kwargs["output_stream"])
    return 0

launcher = SkyClusterLauncher(Path(sys.argv[1]), 15)
launcher.sky = types.SimpleNamespace(
    Task=sky.Task,
    get=checked(sky, "get", lambda request: request),
    launch=checked(sky, "launch", "launch-request"),
    stream_and_get=checked(sky, "stream_and_get", stream_and_get),
    job_status=checked(sky, "job_status", {3: sky.JobStatus.FAILED_SETUP}),
    tail_logs=checked(sky, "tail_logs", tail_logs),
    down=checked(sky, "down", lambda cluster: "down-missing" if cluster == "gone" else "down"),
    api_cancel=checked(sky, "api_cancel", "cancel-request"),
)
launcher.sdk = types.SimpleNamespace(enabled_clouds=checked(sdk, "enabled_clouds", ["AWS", "gcp"]))
config = json.load(sys.stdin)
out = {"enabled": sorted(launcher.enabled_clouds())}
out["job"] = launcher.launch(config, cluster="gacost-cal-l4-beef")
state = launcher.status("gacost-cal-l4-beef", 3)
out["state"] = [state.phase, state.detail]
out["logs"] = launcher.logs("gacost-cal-l4-beef", 3)
launcher.down("gacost-cal-l4-beef")
launcher._requests["pending"] = "launch-request"  # a launch still streaming
launcher.down("pending")
launcher.down("gone")  # a cluster that does not exist: no error
out["calls"] = calls
print(json.dumps(out))
"""


def test_the_calibration_adapter_calls_skypilot_as_it_is(tmp_path: Path) -> None:
    """SkyClusterLauncher's calls bind to SkyPilot 0.14's own signatures (sky.launch,
    stream_and_get, job_status, tail_logs, down, api_cancel, get, sdk.enabled_clouds) and
    its answers are read as SkyPilot gives them; the task is parsed by sky.Task."""
    pytest.importorskip("sky")
    _, configs = _calibration_configs(tmp_path)
    done = subprocess.run([sys.executable, "-c", ADAPTER, str(tmp_path / "logs")],
                          input=json.dumps(configs[0]), capture_output=True, text=True,
                          env=_sky_env(tmp_path), cwd=tmp_path, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["enabled"] == ["aws", "gcp"] and out["job"] == 3
    assert out["state"] == ["failed", "FAILED_SETUP"]
    assert "GACOST-PROFILE-BEGIN" in out["logs"]
    assert out["calls"] == [
        "enabled_clouds", "get", "launch", "stream_and_get", "job_status", "get", "tail_logs",
        "down", "stream_and_get", "api_cancel", "get", "down", "stream_and_get", "down",
        "stream_and_get"]
    log = (tmp_path / "logs" / "gacost-cal-l4-beef.log").read_text(encoding="utf-8")
    assert "streamed launch-request" in log and "streamed down" in log
