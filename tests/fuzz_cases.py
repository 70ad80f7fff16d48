"""Generated bad inputs for the fuzz tests (``test_fuzz_inputs.py``) and ``bench/fuzz.py``.

Each case is a file (job, profile, price file or model config) and the ``gacost`` argv
that reads it; :func:`run_cli` runs ``gacost.commands.cli.main`` on it in a forked child, so a hang
is killed at a timeout, memory is capped and measured (the child's peak RSS), and a crash
cannot take the test process down. :func:`verdict` says what is wrong with a result (None
when it is a sensible answer or a short error naming the field).
"""

from __future__ import annotations

import copy
import json
import math
import os
import re
import resource
import signal
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE_JOB = ROOT / "examples" / "qwen3-1.7b-lora.yaml"
T4_PROFILE = ROOT / "data" / "profiles" / "T4--Qwen3-1.7B--lora-r16-seq512-fp16-B4--published.json"
SNAPSHOT = ROOT / "data" / "prices" / "snapshot.csv"
QWEN_CONFIG = ROOT / "data" / "models" / "Qwen--Qwen3-1.7B.json"
CODES = (0, 1, 2, 3)  # ok, data problem, bad job, infeasible
MAX_STDERR_LINES = 30
MAX_LINE = 600
# inf or nan where the report prints a number: "$inf", "inf h", "0.3-inf", a table cell
# of its own is not enough (a provider or region may be named "nan")
NON_FINITE = re.compile(
    r"\$-?(?:inf|nan)\b|\b(?:inf|nan) ?(?:h|s|GiB|x|%)\b|\d-(?:inf|nan)\b|"
    r"\b(?:inf|nan)-\d|(?:=|:) ?-?(?:inf|nan)\b", re.IGNORECASE)

# -- running


@dataclass(frozen=True)
class Result:
    """One CLI run: exit code, output, wall seconds and the child's peak RSS (MiB)."""

    code: int
    stdout: str
    stderr: str
    seconds: float
    peak_mib: float
    timed_out: bool = False


def _address_space() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def run_cli(argv: list[str], timeout: float = 10.0, extra_mib: int = 3072) -> Result:
    """``gacost.commands.cli.main(argv)`` in a forked child, killed after ``timeout`` seconds, its
    address space capped at the parent's plus ``extra_mib``."""
    from gacost.commands.cli import main

    with tempfile.TemporaryDirectory() as tmp:
        out_path, err_path = Path(tmp) / "out", Path(tmp) / "err"
        limit = _address_space() + extra_mib * 2**20
        start = time.perf_counter()
        pid = os.fork()
        if pid == 0:  # the child: run and exit, never return into the caller
            code = 99
            try:
                resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
                sys.stdout = open(out_path, "w", encoding="utf-8")  # noqa: SIM115
                sys.stderr = open(err_path, "w", encoding="utf-8")  # noqa: SIM115
                code = main(argv)
            except BaseException:  # noqa: BLE001 - report it as a traceback, like the CLI would
                traceback.print_exc()
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        timed_out = False
        while True:
            wpid, status, usage = os.wait4(pid, os.WNOHANG)
            if wpid:
                break
            if time.perf_counter() - start > timeout:
                os.kill(pid, signal.SIGKILL)
                _, status, usage = os.wait4(pid, 0)
                timed_out = True
                break
            time.sleep(0.002)
        seconds = time.perf_counter() - start
        code = os.waitstatus_to_exitcode(status)
        return Result(code, out_path.read_text(errors="replace"),
                      err_path.read_text(errors="replace"), seconds,
                      usage.ru_maxrss / 1024, timed_out)


def verdict(result: Result, max_seconds: float = 10.0) -> str | None:
    """What is wrong with a result, or None: exit 0 with a finite answer, or a known
    non-zero exit with short ``error:`` lines and no traceback."""
    if result.timed_out:
        return f"ran over {max_seconds} s"
    if "Traceback" in result.stderr or "internal error" in result.stderr:
        return "traceback: " + result.stderr.strip().splitlines()[-1][:300]
    if result.code not in CODES:
        return f"exit code {result.code}"
    lines = result.stderr.splitlines()
    if len(lines) > MAX_STDERR_LINES:
        return f"{len(lines)} lines on stderr"
    if any(len(line) > MAX_LINE for line in lines):
        return f"a stderr line of {max(map(len, lines))} characters"
    if result.code == 0:
        if not result.stdout.strip():
            return "exit 0 without output"
        if NON_FINITE.search(result.stdout):
            return "exit 0 with inf or nan in the answer"
        return None
    errors = [line for line in lines if line.startswith("error: ")]
    if not errors:
        return "non-zero exit without an error: line"
    if len(errors[0]) < len("error: x: y"):
        return "an error line that names nothing"
    return None


# -- values


HUGE = st.sampled_from([10**400, -(10**400), 10**18, 2**63, 1e308, -1e308, 1e-12, 1e-300])
NUMBERS = st.one_of(
    st.integers(min_value=-(10**6), max_value=10**6),
    st.floats(allow_nan=True, allow_infinity=True),
    HUGE,
    st.sampled_from([0, 1, -1, 0.0, 0.5]),
)
TEXT = st.one_of(
    st.text(max_size=20),
    st.sampled_from(["", " ", "1:20", "yes", "no", "on", "0x1F", "0o17", "1_000", "~", "null",
                     ".inf", "-.inf", ".nan", "1e400", "10^18", "NaN", "Infinity",
                     "all-linear", "auto", "choose", "\x00", "../../etc/passwd", "~nobody/x",
                     "ünïcödé", "a/b", "x" * 300]),
    st.builds(lambda n: "y" * n, st.integers(min_value=200, max_value=20_000)),
)
SCALARS = st.one_of(NUMBERS, TEXT, st.booleans(), st.none())
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(st.text(max_size=8), inner, max_size=4)),
    max_leaves=8,
)


def _dump_yaml(data: Any) -> str:
    """YAML text of ``data`` (PyYAML writes .inf/.nan and big integers as YAML 1.2 reads
    them); a float the dumper cannot write falls back to JSON."""
    try:
        return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    except (yaml.YAMLError, ValueError, OverflowError):
        return json.dumps(data, default=str)


# -- job files

JOB_KEYS = [
    ("model",), ("method",), ("lora",), ("lora", "r"), ("lora", "alpha"), ("lora", "dropout"),
    ("lora", "target_modules"), ("qlora",), ("sequence_length",), ("effective_batch",),
    ("micro_batches",), ("work",), ("work", "updates"), ("work", "samples"),
    ("work", "epochs"), ("precision",), ("gradient_checkpointing",), ("torch_compile",),
    ("liger",), ("runs",), ("gpus_per_run",), ("gpus",), ("providers",), ("spot",),
    ("objective",), ("deadline_hours",), ("budget_usd",), ("max_instances",),
    ("spot_allowance",), ("vram_margin",), ("sweep",),
]


def base_job() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(EXAMPLE_JOB.read_text())
    data["lora"]["target_modules"] = ["q_proj", "v_proj"]
    data["gpus"] = ["T4", "L4", "A100"]
    return data


def _set(data: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    node = data
    for part in path[:-1]:
        if not isinstance(node.get(part), dict):
            node[part] = {}
        node = node[part]
    node[path[-1]] = value


def _delete(data: dict[str, Any], path: tuple[str, ...]) -> None:
    node: Any = data
    for part in path[:-1]:
        node = node.get(part) if isinstance(node, dict) else None
    if isinstance(node, dict):
        node.pop(path[-1], None)


PLAUSIBLE = st.one_of(
    st.integers(min_value=1, max_value=64),
    st.sampled_from([0.05, 0.5, 2.0, 24.0, 100.0, 1000, 4096, 10**6, "lora", "qlora", "full",
                     "fp16", "bf16", "fp32", "min_time", "min_cost_under_deadline",
                     "min_time_under_budget", "choose", "auto", True, False, ["T4"],
                     ["aws", "gcp"], [1, 2], {"updates": 100}, {"samples": 1000, "epochs": 2},
                     "Qwen/Qwen3-0.6B", "meta-llama/Llama-3.1-8B"]),
)
MUTATION = st.one_of(
    st.tuples(st.just("set"), st.sampled_from(JOB_KEYS), PLAUSIBLE),
    st.tuples(st.just("set"), st.sampled_from(JOB_KEYS), VALUES),
    st.tuples(st.just("list"), st.sampled_from([("gpus",), ("providers",),
                                                ("lora", "target_modules"),
                                                ("micro_batches",)]),
              st.lists(SCALARS, max_size=4)),
    st.tuples(st.just("delete"), st.sampled_from(JOB_KEYS), st.none()),
    st.tuples(st.just("unknown"), st.tuples(st.text(max_size=30)), VALUES),
    st.tuples(st.just("sweep"), st.just(("sweep",)),
              st.lists(st.fixed_dictionaries(
                  {"name": TEXT},
                  optional={"runs": NUMBERS, "grid": st.dictionaries(TEXT, st.lists(SCALARS,
                                                                                    max_size=3),
                                                                     max_size=2),
                            "sequence_length": NUMBERS, "effective_batch": NUMBERS,
                            "work": st.dictionaries(st.sampled_from(["updates", "samples",
                                                                     "epochs"]), NUMBERS)}),
                  max_size=3)),
)


def _mutated_job(mutations: list[tuple[str, tuple[str, ...], Any]]) -> str:
    data = base_job()
    for kind, path, value in mutations:
        if kind == "delete":
            _delete(data, path)
        elif kind == "unknown":
            _set(data, (str(path[0]) or "k",), value)
        else:
            _set(data, path, copy.deepcopy(value))
    return _dump_yaml(data)


def _alias_bomb(width: int, depth: int) -> str:
    lines = ["a: &a [" + ", ".join(["lol"] * width) + "]"]
    for i in range(1, depth):
        prev, cur = chr(ord("a") + i - 1), chr(ord("a") + i)
        lines.append(f"{cur}: &{cur} [" + ", ".join([f"*{prev}"] * width) + "]")
    return "\n".join(lines) + "\nmodel: Qwen/Qwen3-1.7B\n"


RAW_JOBS = st.one_of(
    st.builds(_alias_bomb, st.integers(2, 12), st.integers(2, 9)),
    st.builds(lambda n, o, c: "model: " + o * n + "1" + c * n, st.integers(1, 3000),
              st.sampled_from(["[", "{a: "]), st.sampled_from(["]", "}"])),
    st.builds(lambda n: "".join(f"k{i}: {i}\n" for i in range(n)) + EXAMPLE_JOB.read_text(),
              st.integers(1, 20_000)),
    st.builds(lambda v: EXAMPLE_JOB.read_text().replace("effective_batch: 4",
                                                         f"effective_batch: {v}"),
              st.sampled_from(["1:20", "0x10", "0o4", "4.0", "yes", "1e400", ".inf", "'4'",
                               "4 # ok", "[4]", "!!int 4", "!!python/object:os.system x"])),
    st.text(max_size=300),
    st.builds(lambda t: EXAMPLE_JOB.read_text() + t, st.text(max_size=100)),
)
JOB_TEXTS = st.one_of(
    st.builds(_mutated_job, st.lists(MUTATION, min_size=1, max_size=3)),
    st.builds(_mutated_job, st.lists(st.tuples(st.just("set"), st.sampled_from(JOB_KEYS),
                                               PLAUSIBLE), min_size=1, max_size=2)),
    RAW_JOBS,
)
JOB_BYTES = st.one_of(
    JOB_TEXTS.map(lambda t: t.encode("utf-8", "surrogatepass")),
    st.binary(max_size=200),
    st.builds(lambda b: EXAMPLE_JOB.read_bytes() + b, st.binary(min_size=1, max_size=20)),
)


# -- TRL configs (``--trl-config`` with the example's extra job file)

TRL_CONFIG = ROOT / "examples" / "trl" / "sft-lora.yaml"
TRL_EXTRA = ROOT / "examples" / "trl" / "extra.yaml"
TRL_KEYS = ["model_name_or_path", "num_train_epochs", "per_device_train_batch_size",
            "gradient_accumulation_steps", "max_length", "max_seq_length", "bf16", "fp16",
            "gradient_checkpointing", "use_peft", "load_in_4bit", "load_in_8bit", "lora_r",
            "lora_alpha", "lora_dropout", "lora_target_modules", "max_steps", "torch_compile",
            "use_liger_kernel", "packing", "dtype"]


def _mutated_trl(changes: list[tuple[str, Any]], deletes: list[str]) -> str:
    data = yaml.safe_load(TRL_CONFIG.read_text())
    for key, value in changes:
        data[key] = copy.deepcopy(value)
    for key in deletes:
        data.pop(key, None)
    return _dump_yaml(data)


TRL_CONFIGS = st.one_of(
    st.builds(_mutated_trl,
              st.lists(st.tuples(st.sampled_from(TRL_KEYS), st.one_of(PLAUSIBLE, VALUES)),
                       min_size=1, max_size=3),
              st.lists(st.sampled_from(TRL_KEYS), max_size=2)),
    st.text(max_size=200),
)


# -- model configs (a job whose model: is a local config.json)

ARCH_KEYS = ["hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
             "num_key_value_heads", "head_dim", "vocab_size", "tie_word_embeddings"]


def _mutated_config(changes: list[tuple[str, Any]], whole: Any) -> str:
    if whole is not None:
        return json.dumps(whole)
    cfg = json.loads(QWEN_CONFIG.read_text())
    for key, value in changes:
        if value is None:
            cfg.pop(key, None)
        else:
            cfg[key] = value
    return json.dumps(cfg)


MODEL_CONFIGS = st.builds(
    _mutated_config,
    st.lists(st.tuples(st.sampled_from(ARCH_KEYS), st.one_of(NUMBERS, st.none(), TEXT,
                                                              st.lists(NUMBERS, max_size=2))),
             min_size=1, max_size=3),
    st.one_of(st.none(), st.none(), st.sampled_from([[], None, 0, "x", [1, 2]])),
)


# -- profiles

SPLIT_KEYS = ["micro_batch", "grad_accum", "status", "seconds_per_update", "peak_allocated_gib",
              "peak_reserved_gib", "update_times", "ci_low_s", "timed_updates", "trace"]
PROFILE_KEYS = [("gpu", "name"), ("gpu", "memory_gib"), ("gpu", "count"), ("workload", "model"),
                ("workload", "effective_batch"), ("workload", "lora_r"),
                ("workload", "sequence_length"), ("workload", "precision"),
                ("workload", "gradient_checkpointing"), ("version",), ("splits",),
                ("host",), ("gpu_seconds",)]


def _mutated_profile(split_changes: list[tuple[int, str, Any]],
                     changes: list[tuple[tuple[str, ...], Any]]) -> str:
    data = json.loads(T4_PROFILE.read_text())
    for i, key, value in split_changes:
        data["splits"][i % len(data["splits"])][key] = copy.deepcopy(value)
    for path, value in changes:
        _set(data, path, copy.deepcopy(value))
    return json.dumps(data)  # NaN and Infinity as JSON's non-standard tokens


PROFILES = st.one_of(
    st.builds(
        _mutated_profile,
        st.lists(st.tuples(st.integers(0, 5), st.sampled_from(SPLIT_KEYS),
                           st.one_of(NUMBERS, TEXT, st.none(), st.lists(NUMBERS, max_size=3))),
                 max_size=3),
        st.lists(st.tuples(st.sampled_from(PROFILE_KEYS), VALUES), max_size=2),
    ),
    st.builds(lambda n: _mutated_profile([(0, "seconds_per_update", n)], []),
              st.sampled_from([1e-12, 1e300, 0.0, -1.0, math.inf, math.nan, "2.4", 1e-5])),
    st.text(max_size=200),
)
PROFILE_BYTES = st.one_of(PROFILES.map(lambda t: t.encode()), st.binary(max_size=200))


# -- price files

PRICE_COLUMNS = SNAPSHOT.read_text().splitlines()[0].split(",")


def _price_rows() -> list[list[str]]:
    rows = [line.split(",") for line in SNAPSHOT.read_text().splitlines()[1:]]
    return [r for r in rows if r[3] in ("T4", "L4", "A100-40GB-SXM")][:30]


PRICE_CELL = st.one_of(st.sampled_from(["0", "-1", "", "nan", "inf", "1e308", "abc", "0.0001",
                                        "99999999", "1", "T4", "A100", "x" * 300]),
                       st.text(alphabet=st.characters(blacklist_characters=",\n\r\"",
                                                      blacklist_categories=("Cs",)),
                               max_size=10))


def _mutated_prices(header_perm: list[int] | None, cells: list[tuple[int, int, str]],
                    duplicates: int, drop: int | None) -> str:
    header = list(PRICE_COLUMNS)
    rows = [list(r) for r in _price_rows()]
    for i, j, value in cells:
        rows[i % len(rows)][j % len(header)] = value
    rows += [list(r) for r in rows[:duplicates]]
    for r in rows[-duplicates:] if duplicates else []:
        r[8] = "0.01"  # a conflicting price for the same offer
    if header_perm is not None:
        header = [header[i] for i in header_perm]
    if drop is not None:
        header = header[:drop] + header[drop + 1:]
        rows = [r[:drop] + r[drop + 1:] for r in rows]
    return "\n".join(",".join(r) for r in [header, *rows]) + "\n"


PRICE_FILES = st.one_of(
    st.builds(
        _mutated_prices,
        st.one_of(st.none(), st.permutations(list(range(len(PRICE_COLUMNS))))),
        st.lists(st.tuples(st.integers(0, 29), st.integers(0, len(PRICE_COLUMNS) - 1),
                           PRICE_CELL), max_size=4),
        st.integers(0, 5),
        st.one_of(st.none(), st.integers(0, len(PRICE_COLUMNS) - 1)),
    ),
    st.text(max_size=200),
)
PRICE_BYTES = st.one_of(PRICE_FILES.map(lambda t: t.encode()), st.binary(max_size=200))


# -- cases


@dataclass(frozen=True)
class Target:
    """One fuzz target: a strategy of file contents and the argv that reads the file."""

    name: str
    contents: st.SearchStrategy[bytes]
    suffix: str
    argv: Callable[[Path], list[str]]


def _job_argv(command: str) -> Callable[[Path], list[str]]:
    return lambda p: [command, "--job", str(p)]


def _model_argv(p: Path) -> list[str]:
    job = p.with_name("job.yaml")
    job.write_text(EXAMPLE_JOB.read_text().replace("model: Qwen/Qwen3-1.7B",
                                                   f"model: ./{p.name}"))
    return ["recommend", "--job", str(job)]


TARGETS = {
    "job-recommend": Target("job-recommend", JOB_BYTES, ".yaml", _job_argv("recommend")),
    "job-budget": Target("job-budget", JOB_BYTES, ".yaml", _job_argv("budget")),
    "trl-config": Target("trl-config", TRL_CONFIGS.map(str.encode), ".yaml",
                         lambda p: ["recommend", "--trl-config", str(p), "--job",
                                    str(TRL_EXTRA), "--samples", "16000"]),
    "model-config": Target("model-config", MODEL_CONFIGS.map(str.encode), ".json",
                           _model_argv),
    "profile": Target("profile", PROFILE_BYTES, ".json",
                      lambda p: ["recommend", "--job", str(EXAMPLE_JOB), "--profile", str(p)]),
    "prices": Target("prices", PRICE_BYTES, ".csv",
                     lambda p: ["recommend", "--job", str(EXAMPLE_JOB), "--prices", str(p)]),
}


def run_case(target: Target, content: bytes, folder: Path, timeout: float = 10.0) -> Result:
    """Write ``content`` as the target's file in ``folder`` and run its command."""
    path = folder / f"input{target.suffix}"
    path.write_bytes(content)
    return anonymous(run_cli(target.argv(path), timeout=timeout), folder)


def anonymous(result: Result, folder: Path) -> Result:
    """The result with the temporary folder's path written as ``<dir>``."""
    return replace(result, stdout=result.stdout.replace(str(folder), "<dir>"),
                   stderr=result.stderr.replace(str(folder), "<dir>"))


def special_files(folder: Path) -> list[tuple[str, list[str]]]:
    """Job paths that are not plain small files: a FIFO, a device, a folder, a big file."""
    fifo = folder / "fifo.yaml"
    if not fifo.exists():
        os.mkfifo(fifo)
    big = folder / "big.yaml"
    big.write_text("model: Qwen/Qwen3-1.7B\n" + "#" * (2 << 20) + "\n")
    link = folder / "zero.yaml"
    if not link.exists():
        link.symlink_to("/dev/zero")
    cases = [("fifo", fifo), ("/dev/zero", Path("/dev/zero")), ("symlink to /dev/zero", link),
             ("folder", folder), ("2 MiB file", big), ("missing", folder / "missing.yaml"),
             ("name of 5000 characters", folder / ("n" * 5000))]
    out = []
    for name, path in cases:
        for flag, rest in (("--job", []), ("--profile", ["--job", str(EXAMPLE_JOB)]),
                           ("--prices", ["--job", str(EXAMPLE_JOB)])):
            out.append((f"{flag} {name}", ["recommend", *rest, flag, str(path)]))
    return out
