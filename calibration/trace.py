"""Where the time of a split goes: a few extra updates under torch.profiler, analysed.

This module owns the trace that ``gacost calibrate`` records per split (``--no-trace`` turns
it off). The method is the one of ``bench/h200_sweep.py`` (bench/H200-SWEEP.md, "Protocol"):

* **capture** (:class:`Capture`, driven by the sweep's trainer callback): after a split's
  timed updates the same trainer runs ``n`` more updates (:func:`updates_for`) under
  torch.profiler (CPU activity, plus CUDA on a GPU, with FLOPs). Each update is a host range
  from ``on_step_end`` to ``on_step_end``, each micro-step a range around
  ``Trainer.training_step`` (forward, loss, backward), the optimizer step a range from
  ``on_pre_optimizer_step`` to ``on_optimizer_step``;
* :func:`events_from_profiler` reduces the profiler's events to plain :class:`Event` records;
* :func:`analyse` (pure Python, no torch) turns the records into a
  :class:`~gacost.base.profile.SplitTrace`. Each GPU event is attributed to the phase in
  which it was *launched* (the CUDA runtime call with the same correlation id, else the
  operator it is linked to), so a kernel launched in the backward counts for the micro-step
  even when it runs later. Kernels are classed by name (:data:`KERNEL_CLASSES`); GPU busy is
  the union of the GPU intervals over the wall time of the profiled updates; GEMM TFLOP/s are
  the profiler's FLOPs of the mm-family operators launched in micro-steps over the GEMM
  kernel time of those micro-steps;
* :class:`UtilisationSampler` averages NVML GPU utilisation over the timed (unprofiled)
  updates through ``torch.cuda.utilization`` (needs ``pynvml``, from ``nvidia-ml-py``;
  without it the mean is ``None``).

torch is imported only inside the capture functions, so the analysis runs without it. On the
CPU the profiler records host operators only: the GPU fields stay ``None``.
"""

from __future__ import annotations

import bisect
import contextlib
import os
import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

from gacost.base.profile import SplitTrace

if TYPE_CHECKING:
    import torch
    from torch.profiler import profile

# Host ranges that mark the phases of an update (record_function names).
UPDATE = "gacost::update"
MICROSTEP = "gacost::microstep"
OPTIMIZER = "gacost::optimizer"
PHASES = (UPDATE, MICROSTEP, OPTIMIZER)

# Kernel classes: the first pattern that matches (case-insensitive) wins; anything else is
# OTHER (memory-bound work); bench/h200_sweep.py classes with these too. Checked against the
# kernel names torch.profiler reported on an H200 (torch 2.11 + cu130, cuBLAS/cuDNN,
# bitsandbytes 0.50, liger-kernel 0.8; bench/H200-SWEEP.md):
#   memcpy:    "Memcpy DtoD (Device -> Device)", "Memset (Device)" (counted apart from kernels)
#   dequant:   "kDequantizeBlockwise<__nv_bfloat16, ...>" and the double-quant absmax dequant
#   attention: "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_...",
#              "..._sdpa_sm90_flash_bprop_wgmma_f16_knob_..." (before gemm: they say "wgmma")
#   gemm:      cuBLAS "nvjet_sm90_tst_*", "nvjet_sm90_tss_*_badd_*", some "*_splitK_*"
#   other:     "direct_copy_kernel", "bfloat16_copy_kernel", elementwise add/mul,
#              "reduce_kernel", "CatArrayBatchedCopy", norms, the loss, Liger's Triton kernels
KERNEL_CLASSES: tuple[tuple[str, str], ...] = (
    ("memcpy", r"^(memcpy|memset)"),
    ("dequant", r"dequant|kquantize|nf4|4bit|bnb_|gemv_4bit"),
    ("attention", r"flash|fmha|attention|attn|sdpa|scaled_dot"),
    (
        "gemm",
        r"gemm|cutlass|xmma|nvjet|cublas|wgmma|sm90_|sm80_|ampere_|hopper_|splitk|gemv"
        r"|triton_tem_fused.*mm",
    ),
)
OTHER = "other"
COPIES = "memcpy"
CLASSES = (*(name for name, _ in KERNEL_CLASSES), OTHER)
_PATTERNS = tuple((name, re.compile(rx, re.IGNORECASE)) for name, rx in KERNEL_CLASSES)
# Operators whose profiler FLOPs count as GEMM work (attention FLOPs are not counted).
GEMM_OPS = frozenset({"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::_scaled_mm"})

EventKind = Literal["range", "op", "launch", "gpu"]


@dataclass(frozen=True, slots=True)
class Event:
    """One profiler event, reduced to what :func:`analyse` reads (times in ns).

    ``range``: a phase marker on the host (``name`` is one of :data:`PHASES`);
    ``op``: a host operator (``aten::mm``...), ``correlation_id`` its id, ``flops`` its FLOPs;
    ``launch``: a CUDA runtime/driver call, ``correlation_id`` pairs it with its GPU work;
    ``gpu``: a kernel, memcpy or memset on the device, ``correlation_id`` the launching call's,
    ``linked_id`` the operator's (used when the launch was not recorded).
    """

    kind: EventKind
    name: str
    start_ns: int
    end_ns: int
    correlation_id: int = 0
    linked_id: int = 0
    flops: float = 0.0


def classify(kernel_name: str) -> str:
    """The class of a GPU kernel (or copy) by its name: one of :data:`CLASSES`."""
    for name, pattern in _PATTERNS:
        if pattern.search(kernel_name):
            return name
    return OTHER


# What the OTHER (memory-bound) kernels are, for a breakdown of their GPU time (the H200
# sweep's, bench/H200-SWEEP.md): the first pattern that matches (case-insensitive) wins;
# anything else is REST.
OTHER_SUBCLASSES: tuple[tuple[str, str], ...] = (
    ("foreach_optimizer", r"multi_tensor_apply|foreach|adam"),
    ("loss_softmax", r"cross_entropy|log_softmax|nll_loss|softmax"),
    ("norm", r"norm"),
    ("reduce", r"reduce"),
    ("cast_copy", r"copy|cast|convert"),
    ("triton", r"triton"),
    ("elementwise", r"elementwise"),
)
REST = "rest"
_SUB_PATTERNS = tuple((name, re.compile(rx, re.IGNORECASE)) for name, rx in OTHER_SUBCLASSES)


def subclassify(kernel_name: str) -> str:
    """What an OTHER kernel is by its name: one of :data:`OTHER_SUBCLASSES`' names or
    :data:`REST`."""
    for name, pattern in _SUB_PATTERNS:
        if pattern.search(kernel_name):
            return name
    return REST


MAX_UPDATES = 2  # the most updates :func:`updates_for` profiles


def updates_for(grad_accum: int) -> int:
    """Profiled updates per split: 2 when an update has few micro-steps (k < 4), else 1."""
    return MAX_UPDATES if grad_accum < 4 else 1


class Windows:
    """Disjoint host time ranges ``[start, end)`` of one phase, sorted; membership by bisection."""

    def __init__(self, spans: Iterable[tuple[int, int]]) -> None:
        self.spans = sorted(spans)
        self._starts = [s for s, _ in self.spans]

    def __contains__(self, t: object) -> bool:
        if not isinstance(t, int):
            return False
        i = bisect.bisect_right(self._starts, t) - 1
        return i >= 0 and t < self.spans[i][1]

    def __len__(self) -> int:
        return len(self.spans)

    def total_ns(self) -> int:
        """Summed length of the ranges."""
        return sum(e - s for s, e in self.spans)


def union_within(intervals: Iterable[tuple[int, int]], windows: Windows) -> int:
    """Length of the union of ``intervals``, clipped to ``windows`` (ns)."""
    ordered = sorted(intervals)
    total = 0
    for w0, w1 in windows.spans:
        cur: tuple[int, int] | None = None
        for s, e in ordered:
            if s >= w1:
                break
            s, e = max(s, w0), min(e, w1)
            if e <= s:
                continue
            if cur is None or s > cur[1]:
                if cur is not None:
                    total += cur[1] - cur[0]
                cur = (s, e)
            else:
                cur = (cur[0], max(cur[1], e))
        if cur is not None:
            total += cur[1] - cur[0]
    return total


def analyse(
    events: Iterable[Event],
    *,
    grad_accum: int,
    seconds_per_update: float | None = None,
    on_gpu: bool = False,
) -> SplitTrace:
    """The trace of profiled updates from their events.

    ``grad_accum`` (micro-steps per update) checks that every micro-step was seen;
    ``seconds_per_update`` (the unprofiled median) gives the host time per launched kernel;
    ``on_gpu`` says whether GPU activity was expected (a note when none was recorded).
    """
    spans: dict[str, list[tuple[int, int]]] = {p: [] for p in PHASES}
    launched_at: dict[int, int] = {}
    op_start: dict[int, int] = {}
    ops: list[Event] = []
    gpu: list[Event] = []
    for e in events:
        if e.kind == "range":
            if e.name in spans:
                spans[e.name].append((e.start_ns, e.end_ns))
        elif e.kind == "launch":
            launched_at[e.correlation_id] = e.start_ns
        elif e.kind == "op":
            ops.append(e)
            op_start[e.correlation_id] = e.start_ns
        else:
            gpu.append(e)
    update, micro, optim = (Windows(spans[p]) for p in PHASES)
    n_upd, n_micro = len(update), len(micro)
    if not n_upd or not n_micro:
        return SplitTrace(note="the profiler recorded no complete update; no trace")
    notes: list[str] = []
    if n_micro != n_upd * grad_accum:
        notes.append(f"{n_micro} micro-steps profiled, expected {n_upd * grad_accum}")
    ops_micro = sum(1 for o in ops if o.start_ns in micro)
    base = SplitTrace(
        profiled_updates=n_upd,
        profiled_microsteps=n_micro,
        ops_per_microstep=round(ops_micro / n_micro, 1),
    )
    if not gpu:
        notes.append(
            "no GPU activity recorded (CUPTI unavailable?)" if on_gpu else "CPU: host ops only"
        )
        return replace(base, note="; ".join(notes))

    count: Counter[tuple[str, str]] = Counter()  # (phase, class) -> events
    gpu_ns: Counter[tuple[str, str]] = Counter()  # (phase, class) -> GPU time
    unattributed = 0
    for g in gpu:
        t = launched_at.get(g.correlation_id)
        if t is None:
            t = op_start.get(g.linked_id)
        if t is None:
            unattributed += 1
            t = g.start_ns
        phase = (
            MICROSTEP if t in micro else OPTIMIZER if t in optim else UPDATE if t in update
            else "outside"
        )
        cls = classify(g.name)
        count[phase, cls] += 1
        gpu_ns[phase, cls] += g.end_ns - g.start_ns
    if unattributed:
        notes.append(f"{unattributed} of {len(gpu)} GPU events without a launch record")

    kernels_micro = sum(count[MICROSTEP, c] for c in CLASSES if c != COPIES)
    in_update = sum(v for (phase, _c), v in count.items() if phase != "outside")
    gemm_ns = gpu_ns[MICROSTEP, "gemm"]
    gemm_flops = sum(o.flops for o in ops if o.name in GEMM_OPS and o.start_ns in micro)
    busy_ns = union_within(((g.start_ns, g.end_ns) for g in gpu), update)
    wall_ns = update.total_ns()
    per_update = in_update / n_upd
    return replace(
        base,
        kernels_per_microstep=round(kernels_micro / n_micro, 1),
        copies_per_microstep=round(count[MICROSTEP, COPIES] / n_micro, 1),
        gpu_ms_per_microstep_by_class={
            c: round(gpu_ns[MICROSTEP, c] / n_micro / 1e6, 3) for c in CLASSES
        },
        busy_fraction=round(busy_ns / wall_ns, 4) if wall_ns else None,
        gemm_tflops=round(gemm_flops / (gemm_ns / 1e9) / 1e12, 1)
        if gemm_ns and gemm_flops
        else None,
        host_us_per_kernel=round(seconds_per_update * 1e6 / per_update, 2)
        if seconds_per_update and per_update
        else None,
        note="; ".join(notes),
    )


# ---------------------------------------------------------------------------- capture (torch)


def _activity(e: Any) -> str:
    """The kineto activity type of an event (``kernel``, ``cuda_runtime``...), or ``""`` where
    this torch build does not report it."""
    try:
        text = str(e.activity_type()).lower()
    except Exception:  # noqa: BLE001 - raised on some builds (bench/H200-SWEEP.md)
        return ""
    return text.rsplit(".", 1)[-1]


def _is_runtime_call(name: str) -> bool:
    """CUDA runtime/driver API names: ``cudaLaunchKernel``, ``cuLaunchKernelEx``..."""
    return name.startswith("cuda") or (name.startswith("cu") and name[2:3].isupper())


def events_from_profiler(prof: profile) -> list[Event]:
    """The events of a stopped torch.profiler session as :class:`Event` records."""
    from torch._C._autograd import DeviceType

    inner = prof.profiler
    results = inner.kineto_results if inner is not None else None
    if results is None:
        return []
    out: list[Event] = []
    for e in results.events():
        name, act = e.name(), _activity(e)
        start, end = e.start_ns(), e.end_ns()
        device = e.device_type()
        if device == DeviceType.CPU:
            if act == "user_annotation" or e.is_user_annotation():
                if name in PHASES:
                    out.append(Event("range", name, start, end))
            elif act in ("cuda_runtime", "cuda_driver") or (not act and _is_runtime_call(name)):
                out.append(Event("launch", name, start, end, e.correlation_id()))
            elif act in ("cpu_op", ""):
                flops = float(e.flops() or 0) if name in GEMM_OPS else 0.0
                out.append(Event("op", name, start, end, e.correlation_id(), flops=flops))
        elif device == DeviceType.CUDA:
            if act in ("gpu_memcpy", "gpu_memset") and not name.lower().startswith(
                ("memcpy", "memset")
            ):
                name = f"Memcpy {name}"
            gpu_work = act in ("kernel", "gpu_memcpy", "gpu_memset") or (
                not act
                and not e.is_user_annotation()
                and not name.startswith(("gacost::", "ProfilerStep"))
            )
            if gpu_work:
                out.append(
                    Event("gpu", name, start, end, e.correlation_id(), e.linked_correlation_id())
                )
    return out


@contextlib.contextmanager
def _quiet_native_stderr() -> Iterator[None]:
    """Silence file descriptor 2 (kineto prints ``STAGE:``/``USDT:`` lines at start and stop,
    which would break the progress bars); Python's ``sys.stderr`` is flushed first."""
    import sys

    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):
        yield
        return
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


class Capture:
    """Runs ``updates`` more updates of a trainer under torch.profiler and analyses them.

    The sweep's trainer callback drives it: :meth:`install` once on the trainer (wraps
    ``training_step`` in the micro-step range while profiling), :meth:`begin` when the timed
    updates end, :meth:`pre_optimizer`/:meth:`post_optimizer` around the optimizer step,
    :meth:`step_end` at every ``on_step_end`` (True once the profiled updates are done: stop
    training), :meth:`abort` when training failed meanwhile, then :meth:`result`. A failure of
    the trace is a note in its result, never an exception.
    """

    def __init__(
        self, sync: Callable[[], None], on_gpu: bool, updates: int, grad_accum: int
    ) -> None:
        self.sync, self.on_gpu = sync, on_gpu
        self.updates, self.grad_accum = updates, grad_accum
        self.active = False  # profiling now
        self.note = ""  # why there is no trace, when there is none
        self._prof: profile | None = None
        self._start_step = 0
        self._done = 0
        self._began = 0.0
        self._update: Any = None  # the open record_function ranges
        self._optimizer: Any = None

    def install(self, trainer: Any) -> None:
        """Wrap ``trainer.training_step`` so that each profiled micro-step is a range."""
        from torch.profiler import record_function

        original = trainer.training_step

        def training_step(*args: Any, **kwargs: Any) -> Any:
            if not self.active:
                return original(*args, **kwargs)
            with record_function(MICROSTEP):
                return original(*args, **kwargs)

        trainer.training_step = training_step

    def begin(self, step: int) -> bool:
        """Start profiling after update ``step`` (the last timed one); False if it cannot."""
        from torch.profiler import ProfilerActivity, profile

        self._began = time.perf_counter()
        activities = [ProfilerActivity.CPU]
        if self.on_gpu:
            activities.append(ProfilerActivity.CUDA)
        try:
            prof = profile(activities=activities, with_flops=True)
            with _quiet_native_stderr():
                prof.start()
        except Exception as exc:  # noqa: BLE001 - the trace never fails a split
            self.note = f"trace skipped: the profiler did not start ({brief(exc)})"
            return False
        self._prof, self.active = prof, True
        self._start_step, self._done = step, 0
        self._open_update()
        return True

    def pre_optimizer(self) -> None:
        """``on_pre_optimizer_step``: open the optimizer range."""
        if self.active and self._optimizer is None:
            from torch.profiler import record_function

            self._optimizer = record_function(OPTIMIZER)
            self._optimizer.__enter__()

    def post_optimizer(self) -> None:
        """``on_optimizer_step``: close the optimizer range."""
        if self._optimizer is not None:
            self._optimizer.__exit__(None, None, None)
            self._optimizer = None

    def step_end(self, step: int) -> bool:
        """``on_step_end`` of update ``step``: True when the profiled updates are done."""
        if not self.active or step <= self._start_step:
            return False
        self.sync()
        self._close_ranges()
        self._done += 1
        if self._done < self.updates:
            self._open_update()
            return False
        self._stop()
        return True

    def abort(self, reason: str) -> None:
        """Training failed (or stopped) while profiling: stop the profiler, note ``reason``."""
        if self.active:
            self._close_ranges()
            self._stop()
            self.note = f"trace skipped: {reason}"

    def result(self, seconds_per_update: float | None, nvml_util_mean: float | None) -> SplitTrace:
        """The analysed trace (or a note saying why there is none)."""
        if self.active:
            self.abort("the profiled updates did not finish")
        if self.note or self._prof is None:
            trace = SplitTrace(note=self.note or "trace not run")
        else:
            try:
                trace = analyse(
                    events_from_profiler(self._prof),
                    grad_accum=self.grad_accum,
                    seconds_per_update=seconds_per_update,
                    on_gpu=self.on_gpu,
                )
            except Exception as exc:  # noqa: BLE001 - the trace never fails a split
                trace = SplitTrace(note=f"trace analysis failed ({brief(exc)})")
        self._prof = None
        wall = round(time.perf_counter() - self._began, 3) if self._began else None
        return replace(trace, wall_seconds=wall, nvml_util_mean=nvml_util_mean)

    def _open_update(self) -> None:
        from torch.profiler import record_function

        self._update = record_function(UPDATE)
        self._update.__enter__()

    def _close_ranges(self) -> None:
        self.post_optimizer()
        if self._update is not None:
            self._update.__exit__(None, None, None)
            self._update = None

    def _stop(self) -> None:
        self.active = False
        if self._prof is None:
            return
        try:
            with _quiet_native_stderr():
                self._prof.stop()
        except Exception as exc:  # noqa: BLE001 - the trace never fails a split
            self._prof = None
            self.note = f"trace skipped: the profiler did not stop ({brief(exc)})"


def brief(exc: BaseException) -> str:
    """``Type: first line of the message`` (160 characters at most), for notes."""
    first = str(exc).splitlines()[0][:160] if str(exc) else ""
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


# ------------------------------------------------------------------------------------ NVML


class UtilisationSampler:
    """Averages a utilisation reading (percent) taken every ``period`` seconds on a thread.

    ``read`` is NVML's GPU utilisation in the sweep (:func:`nvml_reader`); a failing read
    ends the sampling and keeps the samples taken so far.
    """

    def __init__(self, read: Callable[[], float], period: float = 0.05) -> None:
        self.read, self.period = read, period
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start sampling (again, from no samples)."""
        self.stop()
        self.samples = []
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="gacost-nvml", daemon=True)
        self._thread.start()

    def stop(self) -> float | None:
        """Stop sampling; the mean of the samples, or None without any."""
        if self._thread is not None:
            self._stop.set()
            self._thread.join(timeout=2.0)
            self._thread = None
        return round(sum(self.samples) / len(self.samples), 1) if self.samples else None

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.samples.append(float(self.read()))
            except Exception:  # noqa: BLE001 - no NVML reading: keep what was sampled
                return
            self._stop.wait(self.period)


def nvml_reader(device: torch.device) -> Callable[[], float] | None:
    """NVML GPU utilisation of ``device`` (percent), or None: not a CUDA device, or pynvml
    (``pip install nvidia-ml-py``) or the driver's NVML is missing."""
    if device.type != "cuda":
        return None
    import torch

    def read() -> float:
        return float(torch.cuda.utilization(device))

    try:
        read()
    except Exception:  # noqa: BLE001 - optional: no NVML, no utilisation
        return None
    return read

