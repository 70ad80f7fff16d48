"""The job spec (``job.yaml``): a strict pydantic schema and a loader with friendly errors.

Why pydantic: strict types, ``extra="forbid"`` and error locations come for free, and
the same model documents every key. Errors are re-rendered as
``<field path>: <message>`` lines with a "did you mean" for unknown keys.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from gacost.base.errors import JobSpecError, did_you_mean
from gacost.base.grid import grid_problem
from gacost.base.inputfile import clip, parse_yaml, read_text
from gacost.base.profile import Workload
from gacost.base.split import Split

Objective = Literal["min_cost", "min_time", "min_cost_under_deadline", "min_time_under_budget"]
LINEAR_MODULES = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
CHOOSE_WORLD_SIZES = (1, 2, 4, 8)  # GPUs per run considered with ``gpus_per_run: choose``
MAX_GPUS_PER_RUN = 64
# Tokens one run trains on, at most: ten times the largest published pretraining run
# (Llama 3, about 15T tokens); a fine-tune is orders of magnitude below it.
MAX_TOKENS_PER_RUN = 1.5e14
MAX_ERRORS = 20  # error lines shown for one file; the rest are counted

PRINTABLE = r"^[^\x00-\x1f\x7f]*$"  # no control characters (they would break error lines)
Name = Annotated[str, Field(min_length=1, max_length=200, pattern=PRINTABLE)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, allow_inf_nan=False)


class LoraSpec(_Strict):
    """LoRA adapter settings (ignored for ``method: full``)."""

    r: int = Field(16, gt=0, le=4096)
    alpha: float | None = Field(None, gt=0, le=1e6)
    dropout: float = Field(0.0, ge=0, lt=1)
    target_modules: str | Annotated[list[Name], Field(max_length=100)] = "all-linear"

    @field_validator("target_modules")
    @classmethod
    def _targets(cls, value: str | list[str]) -> str | list[str]:
        if isinstance(value, str) and value != "all-linear":
            raise ValueError("give 'all-linear' or a list of module names like [q_proj, v_proj]")
        if isinstance(value, list) and not value:
            raise ValueError("give at least one module name, or 'all-linear'")
        return value

    @property
    def effective_alpha(self) -> float:
        """``alpha``, defaulting to ``2 * r``."""
        return self.alpha if self.alpha is not None else 2.0 * self.r

    @property
    def targets(self) -> tuple[str, ...]:
        """The linear-layer names the adapters wrap."""
        if isinstance(self.target_modules, str):
            return LINEAR_MODULES
        return tuple(self.target_modules)

    @property
    def targets_label(self) -> str:
        """``all-linear`` or the comma-joined module names."""
        return (
            self.target_modules
            if isinstance(self.target_modules, str)
            else ",".join(self.target_modules)
        )


class QloraSpec(_Strict):
    """How the user's script prepares a 4-bit model (``method: qlora`` only).

    ``prepare_for_kbit: false`` (default) is what TRL's ``SFTTrainer`` does when given a
    ``peft_config``; ``true`` is the older recipe that calls PEFT's
    ``prepare_model_for_kbit_training`` by hand first (it upcasts embeddings, norms and the
    LM head to fp32: more memory, slower).
    """

    prepare_for_kbit: bool = False


class WorkSpec(_Strict):
    """How much training: ``updates`` directly, or ``samples`` x ``epochs``."""

    updates: int | None = Field(None, gt=0, le=10**10)
    samples: int | None = Field(None, gt=0, le=10**13)
    epochs: float = Field(1.0, gt=0, le=10_000)

    @model_validator(mode="after")
    def _one_way(self) -> WorkSpec:
        if (self.updates is None) == (self.samples is None):
            raise ValueError("give exactly one of 'updates' or 'samples' (with 'epochs')")
        if self.updates is not None and "epochs" in self.model_fields_set:
            raise ValueError("'epochs' only applies with 'samples'")
        return self


class RunGroup(_Strict):
    """One group of a sweep: ``runs`` copies, or one run per point of a ``grid``.

    Grid values (learning rates, seeds, ...) do not change the cost; only the count does.
    Known hyper-parameters are checked and keys that would change the work are refused
    (:mod:`gacost.base.grid`). ``sequence_length``, ``effective_batch`` and ``work``
    override the job's for this group.
    """

    name: str = Field(min_length=1, max_length=100, pattern=PRINTABLE)
    grid: dict[Name, Annotated[list[Any], Field(max_length=100_000)]] | None = None
    runs: int | None = Field(None, gt=0, le=100_000)
    sequence_length: int | None = Field(None, gt=0, le=1_048_576)
    effective_batch: int | None = Field(None, gt=0, le=65_536)
    work: WorkSpec | None = None

    @field_validator("grid")
    @classmethod
    def _grid(cls, value: dict[str, list[Any]] | None) -> dict[str, list[Any]] | None:
        if value is not None:
            if not value:
                raise ValueError("give at least one hyper-parameter, e.g. {seed: [1, 2, 3]}")
            for key, values in value.items():
                if not values:
                    raise ValueError(f"{key}: give at least one value")
        return value

    @model_validator(mode="after")
    def _one_count(self) -> RunGroup:
        if (self.grid is None) == (self.runs is None):
            raise ValueError(
                f"group '{self.name}': give exactly one of 'grid' (hyper-parameter lists) "
                "or 'runs' (a count)"
            )
        return self

    @property
    def run_count(self) -> int:
        """``runs``, or the product of the grid's list lengths."""
        if self.runs is not None:
            return self.runs
        return math.prod(len(v) for v in (self.grid or {}).values())


@dataclass(frozen=True)
class GroupJob:
    """One run group resolved to a plain job (``job.runs`` is the group's run count)."""

    name: str
    runs: int
    job: Job


class Job(_Strict):
    """One fine-tune (possibly repeated ``runs`` times, or a ``sweep``) to plan."""

    model: str = Field(min_length=1, max_length=1024, pattern=PRINTABLE)
    method: Literal["lora", "qlora", "full"] = "lora"
    lora: LoraSpec = Field(default_factory=LoraSpec)
    qlora: QloraSpec = Field(default_factory=QloraSpec)
    sequence_length: int = Field(gt=0, le=1_048_576)
    effective_batch: int = Field(gt=0, le=65_536)
    micro_batches: Annotated[list[Annotated[int, Field(gt=0, le=65_536)]],
                             Field(max_length=1000)] | None = None
    work: WorkSpec
    precision: Literal["fp16", "bf16", "fp32"] = "bf16"
    gradient_checkpointing: bool = True
    torch_compile: bool | Literal["auto"] = False
    liger: bool | Literal["auto"] = False
    runs: int = Field(1, gt=0, le=100_000)
    gpus: Annotated[list[Name], Field(max_length=200)] | None = None
    providers: Annotated[list[Name], Field(max_length=200)] | None = None
    spot: bool = False
    objective: Objective = "min_cost"
    deadline_hours: float | None = Field(None, gt=0, le=1e6)
    budget_usd: float | None = Field(None, gt=0, le=1e12)
    vram_margin: float = Field(0.10, ge=0, lt=0.9)
    max_instances: int = Field(8, ge=1, le=1000)
    spot_allowance: float = Field(0.2, ge=0, le=10)
    # checkpoints as the user's Trainer writes them, by TrainingArguments' names: every
    # ``save_steps`` updates and at the end (0: none; below 1: a share of the run)
    save_steps: float = Field(500, ge=0, le=1e10)
    save_only_model: bool = False
    sweep: Annotated[list[RunGroup], Field(max_length=1000)] | None = None
    gpus_per_run: int | Literal["choose"] = 1
    # the command a run of the plan runs (``recommend --sky-task``); one line, no control
    # characters; ``--train-command`` overrides it
    train_command: str | None = Field(None, min_length=1, max_length=4096, pattern=PRINTABLE)

    @field_validator("gpus_per_run", mode="before")
    @classmethod
    def _world(cls, value: Any) -> Any:
        ok = value == "choose" or (
            isinstance(value, int) and not isinstance(value, bool)
            and 1 <= value <= MAX_GPUS_PER_RUN
        )
        if not ok:
            raise ValueError(
                f"must be a GPU count from 1 to {MAX_GPUS_PER_RUN}, or 'choose', got {clip(value)}"
            )
        return value

    @field_validator("train_command")
    @classmethod
    def _command(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("give the command that trains, e.g. 'python train.py', or leave "
                             "the key out")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> Job:
        self._check_sweep()
        self._check_world()
        if self.objective == "min_cost_under_deadline" and self.deadline_hours is None:
            raise ValueError("deadline_hours: required when objective is min_cost_under_deadline")
        if self.objective == "min_time_under_budget" and self.budget_usd is None:
            raise ValueError("budget_usd: required when objective is min_time_under_budget")
        for m in self.micro_batches or ():
            if m <= 0 or self.effective_batch % m:
                raise ValueError(
                    f"micro_batches: {m} does not divide effective_batch {self.effective_batch}"
                )
        if self.save_steps > 1 and self.save_steps != int(self.save_steps):
            raise ValueError(f"save_steps: {self.save_steps} is neither a whole number of "
                             "updates nor a share of the run below 1 (0: no checkpoints)")
        if "qlora" in self.model_fields_set and self.method != "qlora":
            raise ValueError("qlora: only applies with method: qlora")
        if self.gpus is not None and not self.gpus:
            raise ValueError("gpus: give at least one GPU, or leave the key out for all")
        if self.providers is not None and not self.providers:
            raise ValueError("providers: give at least one provider, or leave the key out for all")
        self._check_tokens()
        return self

    def _check_tokens(self) -> None:
        """Each run's tokens (updates x effective batch x sequence length) stay below
        :data:`MAX_TOKENS_PER_RUN`, for the job and every sweep group."""
        groups = [("work", self.work, self.effective_batch, self.sequence_length)]
        for i, g in enumerate(self.sweep or ()):
            groups.append((f"sweep[{i}].work", g.work or self.work,
                           g.effective_batch or self.effective_batch,
                           g.sequence_length or self.sequence_length))
        for where, work, batch, length in groups:
            tokens = _updates(work, batch) * batch * length
            if tokens > MAX_TOKENS_PER_RUN:
                raise ValueError(
                    f"{where}: {tokens:.3g} tokens per run (updates x effective_batch x "
                    f"sequence_length) is over {MAX_TOKENS_PER_RUN:.3g}, ten times the largest "
                    "published pretraining run; check updates/samples/epochs"
                )

    def _check_world(self) -> None:
        world = self.gpus_per_run
        if not isinstance(world, int) or world == 1:
            return
        batches = {self.effective_batch} | {
            g.effective_batch for g in self.sweep or () if g.effective_batch is not None
        }
        for b in sorted(batches):
            if b % world:
                raise ValueError(
                    f"gpus_per_run: effective_batch {b} is not divisible by {world} GPUs "
                    f"(effective batch = micro-batch x grad-accum x GPUs)"
                )
            for m in self.micro_batches or ():
                if (b // world) % m:
                    raise ValueError(
                        f"micro_batches: {m} does not divide the per-GPU batch {b // world} "
                        f"(effective_batch {b} / {world} GPUs)"
                    )

    def world_sizes(self) -> tuple[int, ...]:
        """GPUs per run to plan for: ``gpus_per_run``, or for ``choose`` every count of
        :data:`CHOOSE_WORLD_SIZES` that divides the effective batch."""
        if isinstance(self.gpus_per_run, int):
            return (self.gpus_per_run,)
        return tuple(w for w in CHOOSE_WORLD_SIZES if self.effective_batch % w == 0)

    def _check_sweep(self) -> None:
        if self.sweep is None:
            return
        if not self.sweep:
            raise ValueError("sweep: give at least one run group, or leave the key out")
        if "runs" in self.model_fields_set:
            raise ValueError(
                "runs: give either runs or sweep, not both; put the count in a sweep group "
                "('runs: N') or add seeds to its grid"
            )
        seen: set[str] = set()
        for i, group in enumerate(self.sweep):
            if group.name in seen:
                raise ValueError(f"sweep[{i}].name: '{group.name}' is used by another group")
            seen.add(group.name)
            problem = grid_problem(group.grid or {})
            if problem:
                key, index, message = problem
                where = _path(("sweep", i, "grid", key, *(() if index is None else (index,))))
                raise ValueError(f"{where}: {message}")
            batch = group.effective_batch or self.effective_batch
            for m in self.micro_batches or ():
                if batch % m:
                    raise ValueError(
                        f"sweep[{i}]: micro_batches {m} does not divide the group's "
                        f"effective_batch {batch}"
                    )
        total = self.total_runs
        if total > 100_000:
            raise ValueError(f"sweep: {total} runs in all; at most 100000")

    @property
    def updates(self) -> int:
        """Optimizer updates per run."""
        return _updates(self.work, self.effective_batch)

    @property
    def total_runs(self) -> int:
        """Runs in all: the sweep's groups summed, else ``runs``."""
        if self.sweep is None:
            return self.runs
        return sum(g.run_count for g in self.sweep)

    def run_groups(self) -> tuple[GroupJob, ...]:
        """The job as run groups, each a plain job with the group's overrides applied.

        Without a sweep there is one group, named ``job``, of ``runs`` runs. The group
        jobs carry no sweep and keep every other setting (objective, gpus, spot, ...).
        """
        if self.sweep is None:
            return (GroupJob("job", self.runs, self),)
        out = []
        for g in self.sweep:
            update: dict[str, Any] = {"runs": g.run_count, "sweep": None}
            if g.sequence_length is not None:
                update["sequence_length"] = g.sequence_length
            if g.effective_batch is not None:
                update["effective_batch"] = g.effective_batch
            if g.work is not None:
                update["work"] = g.work
            out.append(GroupJob(g.name, g.run_count, self.model_copy(update=update)))
        return tuple(out)

    def splits(self, world: int | None = None) -> tuple[Split, ...]:
        """Candidate splits ``m x k`` with ``m * k * world = effective_batch`` (m per GPU).

        ``world`` defaults to ``gpus_per_run`` (1 for ``choose``); every divisor pair of the
        per-GPU batch, or the chosen ``micro_batches`` that divide it.
        """
        if world is None:
            world = self.gpus_per_run if isinstance(self.gpus_per_run, int) else 1
        if world < 1 or self.effective_batch % world:
            return ()
        b = self.effective_batch // world
        ms = self.micro_batches or tuple(m for m in range(1, b + 1) if b % m == 0)
        return tuple(Split(m, b // m) for m in sorted(set(ms)) if b % m == 0)

    def workload(self, model_name: str | None = None) -> Workload:
        """The profile-matching view of this job."""
        return Workload(
            model=model_name or self.model,
            method=self.method,
            lora_r=self.lora.r if self.method != "full" else 0,
            lora_alpha=self.lora.effective_alpha if self.method != "full" else 0.0,
            target_modules=self.lora.targets_label if self.method != "full" else "",
            sequence_length=self.sequence_length,
            precision=self.precision,
            gradient_checkpointing=self.gradient_checkpointing,
            effective_batch=self.effective_batch,
            torch_compile=self.torch_compile is True,
            liger=self.liger is True,
            prepare_for_kbit=self.method == "qlora" and self.qlora.prepare_for_kbit,
            lora_dropout=self.lora.dropout if self.method != "full" else 0.0,
        )


def _updates(work: WorkSpec, effective_batch: int) -> int:
    if work.updates is not None:
        return work.updates
    samples, epochs = work.samples or 0, work.epochs
    if epochs == int(epochs):  # the trainer rounds each epoch up to a whole update
        return math.ceil(samples / effective_batch) * int(epochs)
    return math.ceil(samples * epochs / effective_batch)


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The schema model inside an annotation (``X``, ``X | None``, ``list[X]``)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in get_args(annotation):
        found = _model_in(arg)
        if found is not None:
            return found
    return None


def _fields_of(model: type[BaseModel], path: tuple[Any, ...]) -> list[str]:
    """Known keys at ``path`` (for "did you mean"); list indices are skipped."""
    current: type[BaseModel] | None = model
    for part in path:
        if isinstance(part, int):
            continue
        info = current.model_fields.get(part) if current is not None else None
        if info is None:
            return []
        current = _model_in(info.annotation)
        if current is None:
            return []
    return list(current.model_fields) if current is not None else []


_UNION_TAGS = {"str", "int", "float", "bool", "none"}


def _clean_loc(loc: tuple[Any, ...]) -> tuple[Any, ...]:
    """Drop pydantic's union-branch tags (``str``, ``list[str]``) from an error location."""
    return tuple(
        p for p in loc if isinstance(p, int) or ("[" not in str(p) and p not in _UNION_TAGS)
    )


def _path(loc: tuple[Any, ...]) -> str:
    parts = [f"[{p}]" if isinstance(p, int) else _clip_key(p) for p in loc]
    return ".".join(parts).replace(".[", "[")


def _clip_key(key: Any) -> str:
    text = str(key)
    return text if len(text) <= 40 and text.isprintable() else clip(text, 40)


def _render(err: dict[str, Any]) -> str:
    loc = _clean_loc(err["loc"])
    path = _path(loc)
    kind = err["type"]
    if kind == "extra_forbidden":
        known = _fields_of(Job, loc[:-1])
        hint = did_you_mean(str(loc[-1])[:100], known) or (
            f"; known keys here: {', '.join(known)}" if known else ""
        )
        return f"{path}: unknown key{hint}"
    if kind == "missing":
        return f"{path}: required key is missing"
    msg = str(err["msg"]).removeprefix("Value error, ")
    if kind == "literal_error":
        msg = f"must be one of {msg.removeprefix('Input should be ')}"
        if isinstance(err.get("input"), str):
            expected = str(err["ctx"]["expected"]).replace(" or ", ",")
            msg += did_you_mean(err["input"][:100],
                                [c.strip(" '") for c in expected.split(",")])
        msg += f", got {clip(err.get('input'))}"
    elif kind == "finite_number":
        msg = f"must be a finite number, got {clip(err.get('input'))}"
    elif kind == "string_pattern_mismatch":
        msg = f"must not contain control characters (tabs, newlines), got {clip(err.get('input'))}"
    elif msg.startswith("Input should be "):
        msg = f"must be {msg.removeprefix('Input should be ')}, got {clip(err.get('input'))}"
    return f"{path}: {msg}" if path else msg


def parse_job(data: Any, origin: str = "job") -> Job:
    """Validate a parsed YAML document."""
    if not isinstance(data, dict):
        raise JobSpecError(
            f"{origin}: the job must be a YAML mapping of keys (see README 'Job keys')"
        )
    try:
        return Job.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        # A union (e.g. target_modules) reports one error per branch: keep the deepest one.
        locs = [_clean_loc(e["loc"]) for e in errors]
        prefixes = {loc[:i] for loc in locs for i in range(len(loc))}
        lines: list[str] = []
        seen: set[str] = set()
        more = 0
        for err, loc in zip(errors, locs, strict=True):
            if loc in prefixes:
                continue
            if len(lines) >= MAX_ERRORS:  # not rendered: "did you mean" is slow on many
                more += 1
                continue
            line = _render(dict(err))
            if line not in seen:
                seen.add(line)
                lines.append(line)
        if more:
            lines.append(f"... and {more} more problems (fix these first)")
        raise JobSpecError("\nerror: ".join(lines)) from None


def load_job(path: str | Path) -> Job:
    """Read and validate ``job.yaml``."""
    return parse_job(read_job_file(path), origin=str(path))


def read_job_file(path: str | Path, flag: str = "--job") -> Any:
    """The parsed YAML document of a job file, not yet validated (a local ``model`` path
    made relative to the file); ``flag`` names the option in a read error."""
    p = Path(path)
    data = read_yaml(p, flag)
    if isinstance(data, dict) and isinstance(data.get("model"), str):
        data["model"] = _relative_to(p.parent, data["model"])
    return data


def read_yaml(path: Path, flag: str) -> Any:
    """A YAML file parsed with YAML 1.2 scalars and size, nesting and alias limits
    (:mod:`gacost.base.inputfile`); one-line errors for an unreadable file
    (``<flag>: cannot read ...``) or bad syntax (``<file>: line L, column C: ...``)."""
    text = read_text(path, flag, JobSpecError)
    return parse_yaml(text, str(path), JobSpecError)


def _relative_to(base: Path, model: str) -> str:
    """A relative local config path is read relative to the job file."""
    try:
        candidate = Path(model).expanduser()
        looks_local = model.startswith((".", "~", "/")) or candidate.suffix == ".json"
        if looks_local and not candidate.is_absolute() and (base / candidate).exists():
            return str(base / candidate)
    except (OSError, ValueError, RuntimeError):  # too long, a NUL byte, ~unknown-user
        pass  # left as written: the model loader reports it
    return model
