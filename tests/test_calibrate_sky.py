"""``calibrate --sky``: calibrations on rented GPUs through SkyPilot, offline.

The clusters are a fake :class:`~gacost.launch.remote_calibration.ClusterLauncher` (the
interface :class:`~gacost.launch.skypilot.SkyClusterLauncher` implements with SkyPilot's
SDK; tests/test_sky_task.py checks that adapter's calls against SkyPilot 0.14 and
resolves the calibration tasks with SkyPilot's own parser and catalogs). Covered here:
the command end to end (two GPUs in parallel, profiles coming back next to existing ones
without replacing them, a failing task, a launch that fails, Ctrl-C from the launcher),
the cost preview and its question, the one-line errors, the profile folder ``recommend``
reads and what it says changed, the profile's way back through the job log, the staged
gacost the task installs, and (slow) the task's own ``run`` script calibrating on the CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from gacost.advisor.calibration_time import (
    LOAD_SECONDS,
    TRACE_SECONDS,
    TRACE_UPDATES,
    CalibrationTime,
    calibration_time,
    timed_updates,
)
from gacost.advisor.split_estimates import SplitEstimate
from gacost.base import models
from gacost.base.errors import DataError, LaunchError
from gacost.base.job import load_job
from gacost.base.profile import Profile, SplitResult, profile_to_dict, read_profile
from gacost.base.profile_dir import SEEN_FILE, profile_dir, profile_files, write_new
from gacost.base.records import Offer
from gacost.calibration.request import SweepOptions, default_out
from gacost.commands import calibrate_sky as command
from gacost.commands.cli import main
from gacost.launch import profile_transfer, remote_calibration, staging
from gacost.launch.remote_calibration import (
    JobState,
    RemoteInterrupted,
    RemoteRun,
    Target,
    calibration_task,
    choose_offer,
    cluster_name,
    preview,
    run_remote,
)
from gacost.pricing.snapshot import read_offers_csv

ROOT = Path(__file__).resolve().parents[1]
SKY = Path(__file__).parent / "fixtures" / "sky"
PRICES = SKY / "prices.csv"
EXAMPLE = ROOT / "examples" / "qwen3-1.7b-lora.yaml"
TINY = Path(__file__).parent / "fixtures" / "calib" / "tiny-job.yaml"
TOKEN = "beef"
ALL_CLOUDS = frozenset({"aws", "azure", "gcp", "lambda", "runpod", "vast", "verda"})


def _profile(gpu: str, job_path: Path = EXAMPLE, seconds: float = 0.5) -> Profile:
    job = load_job(job_path)
    workload = job.workload(models.load_model_config(job.model)[0])
    splits = tuple(SplitResult(m, k, "ok", seconds_per_update=seconds * (1 + 0.1 * k),
                               timed_updates=5, warmup_updates=3)
                   for m, k in job.splits())
    return Profile(gpu, 16.0, workload, splits, "measured by gacost calibrate",
                   raw_gpu_name=gpu, created_at="2026-12-03T00:00:00Z")


def _bytes(p: Profile) -> bytes:
    return (json.dumps(profile_to_dict(p), indent=2) + "\n").encode()


class FakeClusters:
    """The clusters of SkyPilot, faked: what each GPU's cluster does is ``behaviour[gpu]``
    (``ok``, ``fail``, ``launch-fails``, ``interrupt``, ``running``, ``garbled``);
    ``together`` makes that many launches wait for each other (proof they run in
    parallel; a deadlock guard, not a timing)."""

    def __init__(self, behaviour: dict[str, str], *, enabled: frozenset[str] = ALL_CLOUDS,
                 together: int = 0) -> None:
        self.behaviour = behaviour
        self.enabled = enabled
        self.barrier = threading.Barrier(together) if together else None
        self.lock = threading.Lock()
        self.events: list[tuple[str, str]] = []
        self.configs: dict[str, dict[str, Any]] = {}
        self.profiles = {gpu: _bytes(_profile(gpu)) for gpu in behaviour}

    def _gpu(self, cluster: str) -> str:
        return next(g for g in self.behaviour if cluster_name(g, TOKEN) == cluster)

    def _event(self, what: str, cluster: str = "") -> None:
        with self.lock:
            self.events.append((what, cluster))

    def calls(self, what: str) -> list[str]:
        return [c for w, c in self.events if w == what]

    def enabled_clouds(self) -> set[str]:
        self._event("enabled_clouds")
        if "server-down" in self.enabled:  # SkyPilot's API server would not start
            raise RuntimeError("SkyPilot API server process exited unexpectedly.\nView logs")
        return set(self.enabled)

    def launch(self, config: dict[str, Any], *, cluster: str) -> int:
        self._event("launch", cluster)
        with self.lock:
            self.configs[cluster] = config
        if self.barrier is not None:
            self.barrier.wait(timeout=120)
        if self.behaviour[self._gpu(cluster)] == "launch-fails":
            raise RuntimeError("ResourcesUnavailableError: no capacity\nin us-east-1")
        return 7

    def status(self, cluster: str, job_id: int) -> JobState:
        self._event("status", cluster)
        assert job_id == 7
        what = self.behaviour[self._gpu(cluster)]
        if what == "interrupt":
            raise KeyboardInterrupt
        if what == "running":
            return JobState("running", "RUNNING")
        if what == "fail":
            return JobState("failed", "FAILED")
        return JobState("succeeded", "SUCCEEDED")

    def logs(self, cluster: str, job_id: int) -> str:
        self._event("logs", cluster)
        gpu = self._gpu(cluster)
        if self.behaviour[gpu] == "fail":
            return ("(gacost-calibrate, pid=42) error: precision: fp16 mixed precision needs "
                    "a CUDA GPU\n")
        lines = profile_transfer.encode(self.profiles[gpu])
        if self.behaviour[gpu] == "garbled":
            lines = lines[:1] + lines[2:]
        prefixed = [f"(gacost-calibrate, pid=42) {line}" for line in lines]
        return "\n".join(["(gacost-calibrate, pid=42) calibrating...", *prefixed, *prefixed])

    def down(self, cluster: str) -> None:
        self._event("down", cluster)


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Install a fake launcher made by the returned function."""
    def install(behaviour: dict[str, str], **kw: Any) -> FakeClusters:
        clusters = FakeClusters(behaviour, **kw)
        monkeypatch.setattr(command, "launcher_factory", lambda: clusters)
        monkeypatch.setattr(command, "token_factory", lambda: TOKEN)
        monkeypatch.setattr(command, "poll_seconds", 0.001)
        return clusters
    return install


def _argv(*extra: str, job: Path = EXAMPLE) -> list[str]:
    return ["calibrate", "--job", str(job), "--prices", str(PRICES), *extra]


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# --- end to end, through the command line ---------------------------------------------------


def test_two_gpus_in_parallel_come_back_next_to_existing_profiles(
        fake: Any, capsys: pytest.CaptureFixture[str]) -> None:
    clusters = fake({"L4": "ok", "T4": "ok"}, together=2)
    folder = profile_dir()
    p = _profile("L4")
    mine = folder / default_out("L4", p.workload.model, p.fingerprint).name
    folder.mkdir(parents=True)
    mine.write_text("my own notes\n", encoding="utf-8")
    code, out, err = _run(_argv("--sky", "L4,T4", "--yes"), capsys)
    assert code == 0, err
    l4, t4 = cluster_name("L4", TOKEN), cluster_name("T4", TOKEN)
    assert sorted(clusters.calls("launch")) == sorted([l4, t4])
    assert sorted(clusters.calls("down")) == sorted([l4, t4])  # both torn down when done
    # the cheapest on-demand offer of each GPU on an enabled cloud (fixture prices)
    assert clusters.configs[l4]["resources"] == {
        "infra": "gcp/us-central1", "instance_type": "g2-standard-4",
        "accelerators": "L4:1", "use_spot": False}
    assert clusters.configs[t4]["resources"]["instance_type"] == "g5g.xlarge"
    # nothing the user had is overwritten: the L4 profile takes the next free name
    assert mine.read_text(encoding="utf-8") == "my own notes\n"
    saved = {f.name for f in profile_files(folder)}
    assert mine.with_name(mine.stem + "-2.json").name in saved
    assert read_profile(mine.with_name(mine.stem + "-2.json")).gpu == "L4"
    assert len(saved) == 3
    assert "2 of 2 profile(s) saved" in out and "gacost recommend --job" in out
    # the cost came before the launches
    assert "device min" in err and "total" in err


def test_recommend_reads_the_folder_and_says_what_changed(
        fake: Any, capsys: pytest.CaptureFixture[str]) -> None:
    rec = ["recommend", "--job", str(EXAMPLE), "--prices", str(PRICES)]
    code, out, _ = _run(rec, capsys)
    assert code == 0 and "profile folder" not in out  # nothing there, nothing said
    fake({"V100-SXM2-16GB": "ok"})
    code, out, err = _run(_argv("--sky", "--yes"), capsys)  # the recommendation's GPU
    assert code == 0, err
    assert "V100-SXM2-16GB" in err and "the recommendation says to calibrate" in err
    code, out, _ = _run(rec, capsys)
    assert code == 0
    assert "profile folder: 1 profile(s) of this workload used" in out
    assert "newly used: V100-SXM2-16GB--Qwen3-1.7B--" in out
    code, out, _ = _run(rec, capsys)
    assert "no change since the last recommend" in out and "newly used" not in out
    code, out, _ = _run([*rec, "--no-profile-folder"], capsys)
    assert "profile folder" not in out
    # a file there that is not a profile is skipped with a note, never an error
    (profile_dir() / "broken.json").write_text("{", encoding="utf-8")
    code, out, _ = _run(rec, capsys)
    assert code == 0 and "skipped broken.json" in out
    code, out, _ = _run([*rec, "--format", "json"], capsys)
    assert json.loads(out)["profile_folder"]["used"][0].startswith("V100-SXM2-16GB")
    assert (profile_dir() / SEEN_FILE).exists()


def test_a_failing_task_is_torn_down_and_the_others_are_collected(
        fake: Any, capsys: pytest.CaptureFixture[str]) -> None:
    clusters = fake({"L4": "ok", "T4": "fail"})
    code, out, err = _run(_argv("--sky", "L4,T4", "--yes"), capsys)
    assert code == 1
    last = err.strip().splitlines()[-1]
    assert last.startswith("error: calibrate --sky: 1 of 2 calibration(s) failed: T4")
    assert "the job ended FAILED: precision: fp16 mixed precision" in last
    assert sorted(clusters.calls("down")) == sorted(
        [cluster_name("L4", TOKEN), cluster_name("T4", TOKEN)])
    assert [read_profile(f).gpu for f in profile_files(profile_dir())] == ["L4"]
    assert "1 of 2 profile(s) saved" in err


def test_a_launch_that_fails_is_one_line_and_its_cluster_goes_down(
        fake: Any, capsys: pytest.CaptureFixture[str]) -> None:
    clusters = fake({"T4": "launch-fails"})
    code, _, err = _run(_argv("--sky", "T4", "--yes"), capsys)
    assert code == 1 and err.strip().splitlines()[-1].count("error:") == 1
    assert "no capacity in us-east-1" in err  # SkyPilot's message, on one line
    assert clusters.calls("down") == [cluster_name("T4", TOKEN)]
    assert profile_files(profile_dir()) == []


def test_a_garbled_profile_is_an_error_not_a_file(
        fake: Any, capsys: pytest.CaptureFixture[str]) -> None:
    fake({"T4": "garbled"})
    code, _, err = _run(_argv("--sky", "T4", "--yes"), capsys)
    assert code == 1 and "cut short" in err
    assert profile_files(profile_dir()) == []


def test_ctrl_c_downs_every_cluster_launched(
        fake: Any, capsys: pytest.CaptureFixture[str]) -> None:
    clusters = fake({"L4": "interrupt", "T4": "running"}, together=2)
    code, _, err = _run(_argv("--sky", "L4,T4", "--yes"), capsys)
    assert code == 130
    launched = clusters.calls("launch")
    assert sorted(launched) == sorted([cluster_name("L4", TOKEN), cluster_name("T4", TOKEN)])
    assert sorted(clusters.calls("down")) == sorted(launched)
    last = err.strip().splitlines()[-1]
    assert last.startswith("error: calibrate --sky: interrupted; every cluster launched was "
                           "torn down")


def test_the_cost_comes_first_and_a_no_launches_nothing(
        fake: Any, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    clusters = fake({"L4": "ok"})
    real_ask = command.ask

    def ask(text: str, question: str, yes: bool) -> None:
        clusters.events.append(("ask", ""))
        real_ask(text, question, yes)

    monkeypatch.setattr(command, "ask", ask)
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True)
    monkeypatch.setattr("builtins.input", lambda: "n")
    code, _, err = _run(_argv("--sky", "L4"), capsys)
    assert code == 1 and "not launched (answered no)" in err
    assert "launch 1 calibration(s), about $" in err and "[y/N]" in err
    assert "L4" in err and "$/h" in err and "device min" in err
    assert clusters.calls("launch") == []
    monkeypatch.setattr("builtins.input", lambda: "y")
    code, _, err = _run(_argv("--sky", "L4"), capsys)
    assert code == 0, err
    kinds = [w for w, _ in clusters.events]
    assert kinds.index("ask") < kinds.index("launch")


def test_without_a_terminal_yes_is_needed(
        fake: Any, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    clusters = fake({"L4": "ok"})
    monkeypatch.setattr(sys.stdin, "isatty", lambda: False)
    code, _, err = _run(_argv("--sky", "L4"), capsys)
    assert code == 1 and err.count("\n") == 1 and "--yes" in err
    assert clusters.events == []


@pytest.mark.parametrize(("argv", "enabled", "message"), [
    (["--sky", "A100-80GB-SXM"], ALL_CLOUDS, "no provider in the job offers A100-80GB-SXM"),
    (["--sky", "RTX-4090"], ALL_CLOUDS, "no provider in the job offers RTX-4090"),
    (["--sky", "A100-40GB-SXM"], frozenset({"aws"}), "none of them enabled in SkyPilot"),
    (["--sky", "L4"], frozenset(), "no enabled cloud; run `sky check`"),
    (["--sky", "L4"], frozenset({"server-down"}), "could not say which clouds are enabled"),
    (["--sky", "A100"], ALL_CLOUDS, "name the one to calibrate"),
    (["--sky", "L4", "--out", "x.json"], ALL_CLOUDS, "--out applies to a calibration on this"),
    (["--yes"], ALL_CLOUDS, "--yes applies only with --sky"),
])
def test_errors_are_one_line(fake: Any, capsys: pytest.CaptureFixture[str],
                             argv: list[str], enabled: frozenset[str], message: str) -> None:
    clusters = fake({"L4": "ok"}, enabled=enabled)
    code, _, err = _run(_argv(*argv) + (["--yes"] if "--sky" in argv else []), capsys)
    assert code != 0 and err.count("\n") == 1 and message in err, err
    assert clusters.calls("launch") == []


def test_skypilot_not_installed_is_one_line(monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "sky", None)  # `import sky` raises ImportError
    code, _, err = _run(_argv("--sky", "L4", "--yes"), capsys)
    assert code == 1 and err.count("\n") == 1
    assert "calibrate --sky needs SkyPilot" in err and "pip install 'gacost[sky]'" in err


def test_nothing_to_calibrate_launches_nothing(
        fake: Any, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from gacost.advisor import recommend as advisor

    real = advisor.recommend

    def settled(*a: Any, **kw: Any) -> Any:
        from dataclasses import replace

        return replace(real(*a, **kw), calibrate=[])

    monkeypatch.setattr(command, "recommend", settled)
    clusters = fake({"L4": "ok"})
    code, out, _ = _run(_argv("--sky", "--yes"), capsys)
    assert code == 0 and "nothing launched" in out and "--sky V100-SXM2-16GB" in out
    assert clusters.calls("launch") == []


def test_spot_jobs_calibrate_on_spot_where_cheaper(
        fake: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    job = tmp_path / "job.yaml"
    job.write_text(EXAMPLE.read_text(encoding="utf-8").replace("spot: false", "spot: true"),
                   encoding="utf-8")
    clusters = fake({"L4": "ok"})
    code, _, err = _run(_argv("--sky", "L4", "--yes", job=job), capsys)
    assert code == 0, err
    r = clusters.configs[cluster_name("L4", TOKEN)]["resources"]
    assert (r["instance_type"], r["use_spot"]) == ("g2-standard-4", True)


# --- the pieces -----------------------------------------------------------------------------


def _offers() -> list[Offer]:
    return list(read_offers_csv(PRICES))


def test_choose_offer_picks_the_cheapest_launchable_enabled_one() -> None:
    offers = _offers()
    o, pricing, rate = choose_offer("L4", offers, 1, spot=False, enabled=set(ALL_CLOUDS))
    assert (o.instance_type, pricing, rate) == ("g2-standard-4", "on-demand", 0.70683)
    o, pricing, rate = choose_offer("L4", offers, 1, spot=False, enabled={"aws"})
    assert (o.instance_type, rate) == ("g6.xlarge", 0.8048)
    o, pricing, _ = choose_offer("L4", offers, 1, spot=True, enabled={"aws"})
    assert (o.instance_type, pricing) == ("g6.xlarge", "spot")
    o, _, _ = choose_offer("L4", offers, 2, spot=False, enabled=set(ALL_CLOUDS))
    assert o.instance_type == "2x_L4_SECURE"
    lium = Offer("lium", "UA", "1x_RTX4090", "RTX-4090", 1, 24, 8, 32, 0.28, None, "t", "")
    with pytest.raises(LaunchError, match="lium only, which SkyPilot 0.14.0 cannot launch"):
        choose_offer("RTX-4090", [lium], 1, spot=False, enabled=set(ALL_CLOUDS))


def test_calibration_time_follows_the_protocol() -> None:
    opts = SweepOptions(splits=((1, 4), (4, 1)), warmup=3, max_timed=40, max_seconds=12.0)
    assert timed_updates(0.5, opts) == 24 and timed_updates(10.0, opts) == 5
    assert timed_updates(0.01, opts) == 40
    estimates = [SplitEstimate("L4", 4, 1, 0.5, "predicted", 10.0, "predicted", 20.0, True),
                 SplitEstimate("L4", 1, 4, 1.0, "measured", 5.0, "predicted", 20.0, True)]
    t = calibration_time(((1, 4), (4, 1)), estimates, opts)
    first = (3 + 24) * 0.5 + TRACE_UPDATES * 0.5 + TRACE_SECONDS  # 4x1 runs first, traced
    second = (3 + 12) * 1.0
    assert t.seconds == pytest.approx(2 * LOAD_SECONDS + first + second)
    assert (t.processes, t.predicted_oom, t.basis) == (2, 0, "measured and predicted")
    # a split the model says does not fit costs its start and one update
    oom = [estimates[0], SplitEstimate("L4", 1, 4, 1.0, "predicted", 30.0, "predicted",
                                       20.0, False)]
    t2 = calibration_time(((1, 4), (4, 1)), oom, opts)
    assert t2.predicted_oom == 1 and t2.seconds == pytest.approx(2 * LOAD_SECONDS + first + 1.0)
    # shared: one process; two passes time every split again after one warm-up
    shared = calibration_time(((1, 4), (4, 1)), estimates,
                              SweepOptions(splits=(), isolation="shared", passes=2,
                                           trace=False))
    assert shared.processes == 1
    assert shared.seconds == pytest.approx(
        LOAD_SECONDS + (3 + 24 + 1 + 24) * 0.5 + (3 + 12 + 1 + 12) * 1.0)


def test_preview_prices_device_minutes_at_the_rate() -> None:
    offer = _offers()[1]  # aws g6.xlarge
    t = Target("L4", offer, "on-demand", 6.0, 1,
               CalibrationTime(600.0, 3, 3, 0, "predicted"), setup_minutes=10.0)
    assert (t.device_minutes, t.cost) == (20.0, 2.0)
    text = preview([t, t])
    assert "aws us-east-1 g6.xlarge (on-demand)" in text
    assert "$2.00" in text and "$4.00" in text and "40.0" in text
    assert "10 min stated allowance" in text


def test_the_profile_comes_back_through_the_log_only_whole() -> None:
    data = _bytes(_profile("L4"))
    lines = profile_transfer.encode(data)
    log = "\n".join(["noise", *(f"(task, pid=1) {x}" for x in lines), "more noise"])
    assert profile_transfer.decode(log) == data
    assert profile_transfer.decode(log + "\n" + log) == data  # a retried stream repeats
    with pytest.raises(DataError, match="no profile"):
        profile_transfer.decode("error: CUDA out of memory")
    with pytest.raises(DataError, match="cut short"):
        profile_transfer.decode("\n".join(lines[:-2]))
    tampered = [lines[0].replace(lines[0].split()[-1], "0" * 64), *lines[1:]]
    with pytest.raises(DataError, match="digest"):
        profile_transfer.decode("\n".join(tampered))


def test_write_new_never_replaces_a_file(tmp_path: Path) -> None:
    folder = tmp_path / "profiles"
    first = write_new(folder, "a.json", b"1")
    second = write_new(folder, "a.json", b"2")
    third = write_new(folder, "a.json", b"3")
    assert [p.name for p in (first, second, third)] == ["a.json", "a-2.json", "a-3.json"]
    assert [p.read_bytes() for p in (first, second, third)] == [b"1", b"2", b"3"]
    assert sorted(p.name for p in folder.iterdir()) == ["a-2.json", "a-3.json", "a.json"]


def test_profile_dir_location(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from gacost.base.profile_dir import profile_dir as where

    assert where({"GACOST_PROFILE_DIR": "/p", "GACOST_HOME": "/h"}) == Path("/p")
    assert where({"GACOST_HOME": "/h"}) == Path("/h/profiles")
    assert where({}).name == "profiles"


def _args(**kw: Any) -> argparse.Namespace:
    base = dict(warmup=1, max_updates=6, max_seconds=0.05, tolerance=0.02, passes=1,
                isolation="auto", splits=None, compile=False, liger=False, trace=False,
                trace_all=False)
    return argparse.Namespace(**{**base, **kw})


def _target(gpu: str = "L4") -> Target:
    offer = _offers()[1]
    return Target(gpu, offer, "on-demand", offer.price_hour or 0.0, 1,
                  CalibrationTime(60.0, 3, 3, 0, "predicted"))


def test_the_task_installs_the_staged_gacost_and_prints_the_profile(tmp_path: Path) -> None:
    config = calibration_task(_target(), str(tmp_path), command.forwarded(_args(), 1),
                              "gacost-cal-l4-beef")
    assert config["workdir"] == str(tmp_path)
    assert "pip install -q -r requirements.txt" in config["setup"]
    assert "gacost[calibrate]==" not in config["setup"]  # no release needed
    run = config["run"]
    assert 'export PYTHONPATH="$PWD/src' in run
    assert ("python3 -m gacost calibrate --job job.yaml --device cuda --quiet --warmup 1"
            in run)
    assert "--no-trace" in run and "--nproc 1" in run
    assert "python3 -m gacost.launch.profile_transfer" in run and 'exit "$code"' in run


def test_staging_copies_the_running_gacost_and_the_job(tmp_path: Path) -> None:
    job = load_job(TINY)
    folder = staging.stage(tmp_path / "w", job)
    reqs = (folder / "requirements.txt").read_text(encoding="utf-8").split("\n")
    names = {r.split(">")[0].split("=")[0].split(";")[0].strip() for r in reqs if r}
    assert {"torch", "trl", "peft", "transformers", "pydantic", "pyyaml"} <= names
    assert not {"pytest", "skypilot", "matplotlib"} & names
    assert (folder / "src" / "gacost" / "calibration" / "worker.py").is_file()
    assert (folder / "src" / "gacost" / "launch" / "profile_transfer.py").is_file()
    assert not list(folder.rglob("__pycache__"))
    # the job reads back the same there, its local model config copied next to it
    staged = load_job(folder / "job.yaml")
    assert staged.model_dump(exclude={"model"}) == job.model_dump(exclude={"model"})
    assert Path(staged.model).name == staging.STAGED_MODEL
    # the staged copy is what runs: it imports, and frames a profile the way back
    env = {**os.environ, "PYTHONPATH": str(folder / "src")}
    done = subprocess.run(
        [sys.executable, "-c", "import gacost, gacost.calibration.request; "
         "print(gacost.__file__)"], capture_output=True, text=True, env=env, check=True)
    assert done.stdout.strip().startswith(str(folder / "src"))
    profile = tmp_path / "p.json"
    profile.write_bytes(_bytes(_profile("L4")))
    done = subprocess.run([sys.executable, "-m", "gacost.launch.profile_transfer",
                           str(profile)], capture_output=True, text=True, env=env, check=True)
    assert profile_transfer.decode(done.stdout) == profile.read_bytes()


def test_a_profile_of_the_staged_model_config_is_saved_under_the_local_name(
        tmp_path: Path) -> None:
    from dataclasses import replace

    job = load_job(TINY)
    local = models.load_model_config(job.model)[0]
    remote = _profile("CPU", TINY)
    remote = replace(remote, workload=replace(
        remote.workload, model=f"/home/ubuntu/sky_workdir/{staging.STAGED_MODEL}"))
    assert remote.fingerprint != job.workload(local).fingerprint()  # would not match here
    run = RemoteRun(_target(), "t", {})
    (kept,) = command.save([remote_calibration.Outcome(run, True, _bytes(remote))],
                           tmp_path, local)
    assert kept.path is not None
    assert read_profile(kept.path).fingerprint == job.workload(local).fingerprint()


def test_requirements_keep_the_calibrate_extra_only() -> None:
    declared = ["pydantic>=2.6", 'torch>=2.2; extra == "calibrate"',
                'pytest>=8; extra == "test"',
                'bitsandbytes; python_version >= "3.10" and extra == "calibrate"']
    assert staging.requirements(declared) == [
        "pydantic>=2.6", "torch>=2.2", 'bitsandbytes; python_version >= "3.10"']


def test_run_remote_downs_what_it_launched_when_interrupted_directly() -> None:
    clusters = FakeClusters({"L4": "interrupt", "T4": "ok"})
    runs = [RemoteRun(_target(g), cluster_name(g, TOKEN), {"name": g}) for g in ("L4", "T4")]
    with pytest.raises(RemoteInterrupted) as info:
        run_remote(runs, clusters, say=lambda _line: None, poll_seconds=0.0)
    assert info.value.exit_code == 130
    assert sorted(clusters.calls("down")) == sorted(clusters.calls("launch"))
    assert cluster_name("L4", TOKEN) in clusters.calls("down")


def test_interrupted_message_names_what_may_still_be_up() -> None:
    text = remote_calibration.interrupted_message(["a", "b"], [("b", "timeout")])
    assert "could not tear down b: timeout" in text and "`sky down b`" in text
    assert "before any cluster" in remote_calibration.interrupted_message([], [])


# --- slow: the task's own run script, on the CPU --------------------------------------------


@pytest.mark.slow
def test_the_task_run_script_calibrates_and_frames_the_profile(tmp_path: Path) -> None:
    """The ``run:`` of a calibration task, as the cloud machine runs it (bash in the staged
    workdir, ``python3`` on PATH; the requirements are this venv's), on the CPU with the
    tiny model: the framing in its output decodes to a profile of the local job."""
    job = load_job(TINY)
    workdir = staging.stage(tmp_path / "w", job)
    config = calibration_task(_target(), str(workdir), command.forwarded(_args(), 1), "t",
                              device="cpu")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    wrapper = bindir / "python3"  # a script, not a link: a venv's python finds its venv
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n', encoding="utf-8")
    wrapper.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(HOME=str(tmp_path / "home"), PATH=f"{bindir}{os.pathsep}{env['PATH']}")
    done = subprocess.run(["bash", "-c", config["run"]], cwd=workdir, env=env,
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    data = profile_transfer.decode(done.stdout)
    assert json.loads(data)["gpu"]["name"] == "CPU"
    # saved here, it names the local model config again and matches the local job
    local_name = models.load_model_config(job.model)[0]
    run = RemoteRun(_target(), "t", config)
    (kept,) = command.save([remote_calibration.Outcome(run, True, data)],
                           tmp_path / "profiles", local_name)
    assert kept.path is not None
    profile = read_profile(kept.path)
    assert profile.workload.model == local_name
    assert profile.fingerprint == job.workload(local_name).fingerprint()


def test_recommend_says_how_to_calibrate_where_you_would_rent(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["recommend", "--job", str(ROOT / "examples" / "qwen3-1.7b-lora.yaml"),
                 "--no-profile-folder"]) in (0, None)
    text = capsys.readouterr().out
    assert main(["recommend", "--job", str(ROOT / "examples" / "qwen3-1.7b-lora.yaml"),
                 "--no-profile-folder", "--format", "json"]) in (0, None)
    named = json.loads(capsys.readouterr().out)["calibrate"]
    assert named, "the example's recommendation names GPUs to calibrate"
    assert f"`gacost calibrate --sky {','.join(named)} --job JOB`" in text


def test_budget_and_compare_read_the_folder_too(capsys: pytest.CaptureFixture[str]) -> None:
    common = ["--job", str(EXAMPLE), "--prices", str(PRICES)]
    before = {cmd: _run([cmd, *common, "--format", "json"], capsys)[1]
              for cmd in ("budget", "compare")}
    write_new(profile_dir(), "V100.json", _bytes(_profile("V100-SXM2-16GB", seconds=0.2)))
    for cmd in ("budget", "compare"):
        code, out, err = _run([cmd, *common], capsys)
        assert code == 0, err
        assert "profile folder: 1 profile(s) of this workload used" in out and "V100.json" in out
        code, out, _ = _run([cmd, *common, "--format", "json"], capsys)
        assert out != before[cmd]  # the measured V100 times change the plan's figures
        code, out, _ = _run([cmd, *common, "--format", "json", "--no-profile-folder"], capsys)
        assert out == before[cmd]
