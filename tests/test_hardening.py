"""Issue 14's defects, one by one, through the real CLI: bad job files, model configs and
profiles give short ``error:`` lines naming the field; nothing hangs or runs away."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

from gacost.base.job import parse_job
from gacost.base.profile import profile_from_dict
from gacost.commands.cli import main

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "qwen3-1.7b-lora.yaml"
T4 = ROOT / "data" / "profiles" / "T4--Qwen3-1.7B--lora-r16-seq512-fp16-B4--published.json"
QWEN = ROOT / "data" / "models" / "Qwen--Qwen3-1.7B.json"


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def job_text(**changes: object) -> str:
    data = yaml.safe_load(EXAMPLE.read_text())
    data.update(changes)
    return yaml.safe_dump(data)


def recommend_text(tmp_path: Path, text: str | bytes) -> tuple[int, str, str]:
    path = tmp_path / "job.yaml"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return run("recommend", "--job", str(path))


@pytest.mark.parametrize(
    ("replace", "message"),
    [
        ("effective_batch: 1:20", "effective_batch: must be a valid integer, got '1:20'"),
        ("effective_batch: 1e400", "effective_batch: must be a valid integer"),
        ("effective_batch: " + "9" * 500, "effective_batch: must be less than or equal to 65536"),
        ("effective_batch: " + "9" * 5000, "(5002 characters)"),
        ("runs: .inf", "runs: must be a valid integer"),
        ("vram_margin: .nan", "vram_margin: must be a finite number"),
        ("spot: yes", "spot: must be a valid boolean, got 'yes'"),
    ],
)
def test_yaml_1_2_numbers_and_finite_values(tmp_path: Path, replace: str, message: str) -> None:
    key = replace.split(":")[0]
    lines = [ln for ln in EXAMPLE.read_text().splitlines() if not ln.startswith(f"{key}:")]
    code, _, err = recommend_text(tmp_path, "\n".join([*lines, replace]) + "\n")
    assert code == 2 and message.lower() in err.lower(), err
    assert len(err) < 400 and "Traceback" not in err


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"deadline_hours": float("inf"), "objective": "min_cost_under_deadline"},
         "deadline_hours: must be a finite number, got inf"),
        ({"work": {"updates": 10**18}}, "work.updates: must be less than or equal to 10000000000"),
        ({"work": {"updates": 10**9}, "sequence_length": 8192, "effective_batch": 64},
         "work: 5.24e+14 tokens per run"),
        ({"lora": {"target_modules": ["", "x"]}},
         "lora.target_modules[0]: String should have at least 1 character"),
        ({"gpus": ["T4", ""]}, "gpus[1]: String should have at least 1 character"),
        ({"model": "m" * 300}, "model: 'mmmmmmmm"),
        ({"model": "x" * 2000}, "model: String should have at most 1024 characters"),
    ],
)
def test_out_of_range_values_are_one_line(tmp_path: Path, changes: dict[str, object],
                                          message: str) -> None:
    code, _, err = recommend_text(tmp_path, job_text(**changes))
    assert code == 2 and message in err, err
    assert err.count("\n") <= 2 and len(err) < 500


def test_long_values_are_cut_and_errors_fill_at_most_a_screen(tmp_path: Path) -> None:
    many = "".join(f"bogus{i}: {i}\n" for i in range(12_000))
    start = time.perf_counter()
    code, _, err = recommend_text(tmp_path, EXAMPLE.read_text() + many)
    assert time.perf_counter() - start < 15  # 30 s before the cap; slower CI machines
    assert code == 2 and len(err.splitlines()) <= 22
    assert "and 11980 more problems" in err
    code, _, err = recommend_text(tmp_path, job_text(precision="y" * 50_000))
    assert code == 2 and "(50002 characters)" in err and len(err) < 400


def test_alias_bomb_and_deep_nesting_stop_early(tmp_path: Path) -> None:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for prev, cur in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"{cur}: &{cur} [" + ",".join([f"*{prev}"] * 9) + "]")
    start = time.perf_counter()
    code, _, err = recommend_text(tmp_path, "\n".join(lines) + "\n")
    assert code == 2 and "aliases expand to over 50000 values" in err
    code, _, err = recommend_text(tmp_path, "model: " + "[" * 5000 + "]" * 5000)
    assert code == 2 and "nested more than 32 levels deep" in err
    assert time.perf_counter() - start < 15  # the bomb ran 83 s before; slower CI machines


def test_duplicate_keys_and_non_utf8(tmp_path: Path) -> None:
    code, _, err = recommend_text(tmp_path, EXAMPLE.read_text() + "runs: 5\n")
    assert code == 2 and "key 'runs' appears twice" in err
    code, _, err = recommend_text(tmp_path, b"model: Qwen/Qwen3-1.7B\nx: \xff\xfe\n")
    assert code == 2 and "is not UTF-8 text (byte 26)" in err


def test_fifo_device_and_folder_are_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "job.fifo"
    os.mkfifo(fifo)
    for path in (fifo, Path("/dev/zero"), tmp_path):
        start = time.perf_counter()
        code, _, err = run("recommend", "--job", str(path))
        assert code == 2 and "give a file" in err, err
        assert time.perf_counter() - start < 10  # a FIFO hung forever before
    code, _, err = run("recommend", "--job", str(EXAMPLE), "--profile", "/dev/zero")
    assert code == 1 and "--profile: /dev/zero is not a regular file" in err


def _config_job(tmp_path: Path, **changes: object) -> Path:
    cfg = json.loads(QWEN.read_text())
    cfg.update(changes)
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    job = tmp_path / "job.yaml"
    job.write_text(EXAMPLE.read_text().replace("model: Qwen/Qwen3-1.7B", "model: ./config.json"))
    return job


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"num_attention_heads": 0}, "num_attention_heads 0; it must be an integer from 1"),
        ({"num_hidden_layers": -3}, "num_hidden_layers -3"),
        ({"num_hidden_layers": 0}, "num_hidden_layers 0"),
        ({"hidden_size": 1e300}, "hidden_size 1e+300"),
        ({"vocab_size": "151936"}, "vocab_size '151936'"),
        ({"num_key_value_heads": 7}, "num_key_value_heads 7, which must divide"),
        ({"intermediate_size": None}, "lacks the field intermediate_size"),
    ],
)
def test_model_configs_are_validated(tmp_path: Path, changes: dict[str, object],
                                     message: str) -> None:
    code, _, err = run("recommend", "--job", str(_config_job(tmp_path, **changes)))
    assert code == 1 and message in err, err


@pytest.mark.parametrize("whole", ["[1, 2]", "null", "3", '"x"'])
def test_a_model_config_that_is_not_an_object(tmp_path: Path, whole: str) -> None:
    job = _config_job(tmp_path)
    (tmp_path / "config.json").write_text(whole)
    code, _, err = run("recommend", "--job", str(job))
    assert code == 1 and "must hold a JSON object" in err, err


def _t4(**split_changes: object) -> dict[str, object]:
    data = json.loads(T4.read_text())
    data["splits"][0].update(split_changes)
    return data


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (_t4(seconds_per_update=1e-12), "seconds_per_update must be a finite number from 0.0001"),
        (_t4(seconds_per_update=1e300), "seconds_per_update must be a finite number"),
        (_t4(peak_reserved_gib=float("nan")), "NaN is not a number gacost accepts"),
        (_t4(micro_batch="one"), "splits[0].micro_batch must be an integer from 1"),
        (_t4(micro_batch=3, grad_accum=7), "splits[0]: 3x7 does not make the effective batch 4"),
        ({**_t4(), "gpu": {"name": "T4", "memory_gib": "15"}}, "gpu.memory_gib must be a finite"),
    ],
)
def test_bad_profiles_are_one_line(tmp_path: Path, data: dict[str, object],
                                   message: str) -> None:
    path = tmp_path / "p.json"
    path.write_text(json.dumps(data))
    code, out, err = run("recommend", "--job", str(EXAMPLE), "--profile", str(path))
    assert code == 1 and message in err and not out, err
    assert len(err.splitlines()) == 1


def test_binary_profile(tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff")
    code, _, err = run("recommend", "--job", str(EXAMPLE), "--profile", str(path))
    assert code == 1 and "is not UTF-8 text" in err


def test_a_profile_matches_by_model_config_content_not_path(tmp_path: Path) -> None:
    """A profile measured with one copy of a custom config applies to a job that names
    another copy, by another spelling of the path."""
    cfg = {**json.loads(QWEN.read_text()), "num_hidden_layers": 20}  # not a shipped model
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "config.json").write_text(json.dumps(cfg))
    (tmp_path / "b" / "config.json").write_text(json.dumps(cfg, indent=4))
    profile = json.loads(T4.read_text())
    profile["workload"]["model"] = str(tmp_path / "a" / "config.json")
    (tmp_path / "p.json").write_text(json.dumps(profile))
    job = tmp_path / "job.yaml"
    job.write_text(EXAMPLE.read_text().replace("model: Qwen/Qwen3-1.7B", "model: ./b/../b")
                   .replace("spot: false", "spot: false\ngpus: [T4]"))
    code, out, err = run("recommend", "--job", str(job), "--profile", str(tmp_path / "p.json"),
                         "--format", "json")
    assert code == 0, err
    assert json.loads(out)["recommended"]["time_source"] == "measured"
    # another architecture does not match
    (tmp_path / "b" / "config.json").write_text(json.dumps({**cfg, "num_hidden_layers": 21}))
    code, out, err = run("recommend", "--job", str(job), "--profile", str(tmp_path / "p.json"),
                         "--format", "json")
    assert code == 0 and json.loads(out)["recommended"]["time_source"] == "predicted"


def test_a_shipped_architecture_in_a_local_file_is_the_shipped_model(tmp_path: Path) -> None:
    shutil.copy(QWEN, tmp_path / "config.json")
    profile = profile_from_dict(json.loads(T4.read_text()))
    job = parse_job({**yaml.safe_load(EXAMPLE.read_text()),
                     "model": str(tmp_path / "config.json")})
    assert job.workload().fingerprint() == profile.fingerprint


def gacost_cli(*argv: str, torch_seen: bool = False) -> subprocess.CompletedProcess[str]:
    """``gacost ARGV`` in a fresh process; with ``torch_seen`` its stdout is only whether
    the command imported torch (a fact, where a time limit would depend on the machine)."""
    if not torch_seen:
        return subprocess.run([sys.executable, "-m", "gacost", *argv], capture_output=True,
                              text=True, timeout=120)
    probe = ("import contextlib, io, sys; from gacost.commands.cli import main\n"
             "with contextlib.redirect_stdout(io.StringIO()): code = main(sys.argv[1:])\n"
             "print('torch imported:', 'torch' in sys.modules); sys.exit(code)")
    return subprocess.run([sys.executable, "-c", probe, *argv], capture_output=True,
                          text=True, timeout=120)


def test_calibrate_flags_are_checked_before_torch(tmp_path: Path) -> None:
    for argv, message in (
        (["--device", "mps"], "--device: 'mps' is not supported"),
        (["--splits", ""], "--splits: give at least one split"),
        (["--splits", "3x7"], "--splits: 3x7 does not multiply"),
        (["--vram-limit", "lots"], "--vram-limit: 'lots' is not a size"),
        (["--max-seconds", "inf"], "--max-seconds > 0 (at most 86400)"),
        (["--tolerance", "nan"], "0 < --tolerance < 1"),
        (["--warmup", "99999999999"], "--warmup >= 0 (at most 1000)"),
        (["--device", "cpu"], "precision: fp16 mixed precision needs a CUDA GPU"),
    ):
        result = gacost_cli("calibrate", "--job", str(EXAMPLE), *argv, torch_seen=True)
        assert result.returncode == 1 and message in result.stderr, result.stderr
        assert "Traceback" not in result.stderr and len(result.stderr.splitlines()) == 1
        assert result.stdout.strip() == "torch imported: False"  # checked before the import


def test_calibrate_never_overwrites_another_file_without_force(tmp_path: Path) -> None:
    other = tmp_path / "notes.yaml"
    other.write_text("important: true\n")
    code, _, err = run("calibrate", "--job", str(EXAMPLE), "--out", str(other))
    assert code == 1 and "exists and is not a gacost profile" in err
    assert other.read_text() == "important: true\n"
    profile = json.loads(T4.read_text())
    profile["workload"]["sequence_length"] = 1024
    theirs = tmp_path / "other.json"
    theirs.write_text(json.dumps(profile))
    code, _, err = run("calibrate", "--job", str(EXAMPLE), "--out", str(theirs))
    assert code == 1 and "holds a profile of another workload" in err and "--force" in err


def test_calibrate_checks_its_default_path_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without --out the default ``<gpu>--<model>--<id>.json`` gets --out's check (on the
    CPU before torch is imported)."""
    from gacost.calibration.request import default_out

    job_file = tmp_path / "job.yaml"
    job_file.write_text(EXAMPLE.read_text().replace("precision: fp16", "precision: bf16"))
    job = parse_job(yaml.safe_load(job_file.read_text()))
    monkeypatch.chdir(tmp_path)
    default = tmp_path / default_out("CPU", "Qwen/Qwen3-1.7B", job.workload().fingerprint())
    default.write_text("important: true\n")
    code, _, err = run("calibrate", "--job", str(job_file), "--device", "cpu")
    assert code == 1 and err.strip().splitlines()[-1] == (
        f"error: {default.name} (the default --out) exists and is not a gacost profile; pass "
        "another --out, or pass --force to overwrite it")
    assert default.read_text() == "important: true\n"
    profile = json.loads(T4.read_text())
    profile["workload"]["sequence_length"] = 1024
    default.write_text(json.dumps(profile))
    code, _, err = run("calibrate", "--job", str(job_file), "--device", "cpu")
    assert code == 1 and "(the default --out) holds a profile of another workload" in err


@pytest.mark.usefixtures("snapshot_day")
def test_an_os_error_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A full disk (ENOSPC) anywhere a command writes is one line, exit 1."""
    import gacost.commands.recommend as command

    def full(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device", str(tmp_path / "p.json"))

    monkeypatch.setattr(command, "recommend", full)
    code, _, err = run("recommend", "--job", str(EXAMPLE))
    assert code == 1 and len(err.splitlines()) == 1
    assert f"cannot read or write {tmp_path / 'p.json'} (No space left on device)" in err


# Where a SIGINT lands in `gacost calibrate`'s start-up: (a shared library whose mapping
# marks the phase, or None for the start; seconds after that). libtorch_cpu is mapped when
# torch's C++ part loads: there, and while torch registers its operators just after, a
# KeyboardInterrupt raised inside a C++ callback aborted the process or was lost.
SIGINT_POINTS = [
    (None, 0.2),  # the commands import (pydantic, yaml)
    ("libtorch_cpu", 0.0),
    ("libtorch_cpu", 0.3),
    ("libtorch_cpu", 1.0),
    ("tokenizers", 0.0),  # transformers
]


def _interrupt_at(proc: subprocess.Popen[str], marker: str | None, after: float) -> None:
    """Send SIGINT ``after`` s once ``marker`` shows in the process's memory map."""
    maps = Path(f"/proc/{proc.pid}/maps")
    while marker is not None and proc.poll() is None:
        with contextlib.suppress(OSError):
            if marker in maps.read_text():
                break
        time.sleep(0.005)
    time.sleep(after)
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # a background job inherits it ignored


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs /proc/<pid>/maps")
def test_ctrl_c_in_the_first_second_is_one_line(tmp_path: Path) -> None:
    """Ctrl-C at any point of the start-up (the commands' imports, torch's C++ loading and
    operator registration, transformers) is exit 130 and one ``error: interrupted`` line:
    never an abort, a death by signal, a traceback or an interrupt lost."""
    job = tmp_path / "job.yaml"
    job.write_text(EXAMPLE.read_text().replace("precision: fp16", "precision: bf16"))
    procs = [subprocess.Popen([sys.executable, "-m", "gacost", "calibrate", "--job", str(job),
                               "--device", "cpu", "--out", str(tmp_path / f"p{i}.json")],
                              stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                              preexec_fn=_default_sigint)
             for i in range(len(SIGINT_POINTS))]
    senders = [threading.Thread(target=_interrupt_at, args=(proc, *point))
               for proc, point in zip(procs, SIGINT_POINTS, strict=True)]
    for sender in senders:
        sender.start()
    outcomes = []
    for proc, sender, point in zip(procs, senders, SIGINT_POINTS, strict=True):
        sender.join()
        try:
            _, err = proc.communicate(timeout=240)
        except subprocess.TimeoutExpired:  # the interrupt was lost: it went on calibrating
            proc.kill()
            _, err = proc.communicate()
        outcomes.append((point, proc.returncode, err.strip().splitlines()[-1:]))
        assert "Traceback" not in err and "terminate called" not in err, (point, err)
    for _point, code, last in outcomes:  # stale-price warnings may come first: the last line
        assert code == 130 and last and last[0].startswith("error: interrupted"), outcomes


def test_profiles_are_written_with_the_usual_file_mode(tmp_path: Path) -> None:
    """A new profile gets what open() would give (0666 less the umask), not mkstemp's 0600;
    an existing file keeps its mode."""
    from gacost.base.profile import write_profile

    profile = profile_from_dict(json.loads(T4.read_text()))
    old = os.umask(0o022)
    try:
        write_profile(tmp_path / "new.json", profile)
        assert (tmp_path / "new.json").stat().st_mode & 0o777 == 0o644
        (tmp_path / "kept.json").write_text("{}")
        (tmp_path / "kept.json").chmod(0o640)
        write_profile(tmp_path / "kept.json", profile)
        assert (tmp_path / "kept.json").stat().st_mode & 0o777 == 0o640
    finally:
        os.umask(old)
