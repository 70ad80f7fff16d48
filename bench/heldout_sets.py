"""The held-out result sets: one row per folder of user runs, in the order they were measured.

A new held-out session is one more row here (its folder, day, and whether it is a session of
new workloads and a probed machine start); ``heldout_user_runs.py`` (``SETS``, ``DAY``,
``SESSIONS``) and ``host_speed.py`` (``HELDOUT_STARTS``) read their lists from this table.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
RUNS = RESULTS / "calibrate-vs-user"
FIRST_DAY = "2026-12-03"


@dataclass(frozen=True)
class HeldoutSet:
    """One folder of held-out user runs.

    ``day``: the day it was measured (a split's runs in one day are repeats of one
    measurement). ``session``: a session of new workloads, every split in its own process
    (the issue's held-out targets), most with a same-session calibration of one other
    workload (``other-workload-profile.json``; the fourteenth session's has none).
    ``probed_start``: the name of its machine start where every run followed a host probe
    (``calibrate_vs_user.py --probe-before``), empty if none."""

    folder: Path
    day: str = FIRST_DAY
    session: bool = False
    probed_start: str = ""

    @property
    def name(self) -> str:
        return self.folder.name


HELDOUT = (
    HeldoutSet(RUNS),
    HeldoutSet(RESULTS / "heldout-2026-12-03", session=True),
    # later sessions of 2026-12-03: the held-out workloads h01, h02, h04 and h07 again
    # (calibrate rounds, traces) and h07's LoRA twin (bench/calibrate_rounds_h200.sh)
    HeldoutSet(RUNS / "run5"),
    HeldoutSet(RUNS / "run6"),
    # the fifth session: full fine-tunes of three models beside their LoRA twins, and
    # Phi-3-mini with LoRA off its fused projections (their traces' memory-bound GPU time
    # is in the model's fit, bench/model_v2.py, their times are not); four workloads
    # predicted before they ran (bench/jobs/heldout2/, run7/predicted-before.json)
    HeldoutSet(RUNS / "run7"),
    # the sixth session (2026-12-04): six workloads nobody fitted, predicted before they
    # ran (bench/jobs/heldout3/, predicted-before.json), and a calibration of one other
    # workload (bench/heldout_h200.sh C and D)
    HeldoutSet(RESULTS / "heldout-2026-12-04", "2026-12-04", session=True),
    # the same day: that session's host-bound splits farthest from the model, again in
    # fresh processes (bench/calibrate_rounds_h200.sh repeat3)
    HeldoutSet(RUNS / "run8", "2026-12-04"),
    # the seventh session (2026-12-04): six more workloads, predicted before they ran
    # with that session's memory terms (bench/jobs/heldout4/, predicted-before.json), and
    # the calibration of the other workload (bench/heldout_h200.sh E and F)
    HeldoutSet(RESULTS / "heldout-2026-12-04b", "2026-12-04", session=True),
    # the eighth session (2026-12-04): six more, three of them QLoRA, predicted before they
    # ran with that session's QLoRA terms (bench/jobs/heldout5/, predicted-before.json), and
    # the calibration of the other workload (bench/heldout_h200.sh G and H)
    HeldoutSet(RESULTS / "heldout-2026-12-04c", "2026-12-04", session=True),
    # the ninth session (2026-12-05): six more (bench/jobs/heldout6/, predicted-before.json),
    # each host-bound split in three processes (bench/heldout_h200.sh I, J and K)
    HeldoutSet(RESULTS / "heldout-2026-12-05", "2026-12-05", session=True),
    # the fourteenth session (2026-12-06): six more (bench/jobs/heldout7/,
    # predicted-before*.json), a host probe before every run (bench/heldout_h200.sh L, M)
    HeldoutSet(RESULTS / "heldout-2026-12-06", "2026-12-06", session=True,
               probed_start="heldout7"),
    # the fifteenth session (2026-12-06): six more (bench/jobs/heldout8/), predicted before
    # they ran by the model with the LoRA path by input and output width (bench/heldout_h200.sh
    # N, O)
    HeldoutSet(RESULTS / "heldout-2026-12-06b", "2026-12-06", session=True,
               probed_start="heldout8"),
    # the nineteenth session (2026-12-06): six more (bench/jobs/heldout9/), predicted before
    # they ran by the model with the H200's stream rate from gpu-stream and the GEMM
    # efficiency shared within an architecture (bench/heldout_h200.sh P, Q; a lent H100)
    HeldoutSet(RESULTS / "heldout-2026-12-06c", "2026-12-06", session=True,
               probed_start="heldout9"),
    # the same session: the host-bound miss (h48 1x4) in two more processes, and op tables
    # of three GPU-bound splits (bench/calibrate_rounds_h200.sh gpuside9)
    HeldoutSet(RUNS / "run20", "2026-12-06"),
    # the twenty-first session (2026-12-07): six more (bench/jobs/heldout10/), predicted
    # before they ran by the shipped model of that day, and four host-bound splits in two
    # more processes (bench/heldout_h200.sh R, S, T and T2; a lent H100)
    HeldoutSet(RESULTS / "heldout-2026-12-07", "2026-12-07", session=True,
               probed_start="heldout10"),
    # the twenty-third session (2026-12-07): six more (bench/jobs/heldout11/), predicted
    # in the twenty-second session, before they ran, and four host-bound splits in two more
    # processes (bench/heldout_h200.sh U, V, W and W2; a lent H100)
    HeldoutSet(RESULTS / "heldout-2026-12-07b", "2026-12-07", session=True,
               probed_start="heldout11"),
    # the twenty-fourth session (2026-12-07): six more (bench/jobs/heldout12/), predicted
    # before they ran by the shipped model (bench/heldout_h200.sh X and Y; a lent H100; the
    # device time left no room for the repeats, Z and Z2)
    HeldoutSet(RESULTS / "heldout-2026-12-07c", "2026-12-07", session=True,
               probed_start="heldout12"),
    # the twenty-fifth session (2026-12-07): four GPU-bound splits with checkpointing and
    # their no-checkpointing twins (bench/jobs/gctwins/), each in its own process
    # (bench/calibrate_rounds_h200.sh gctwins; a lent H100), then three of six new workloads
    # (bench/jobs/heldout13/, predicted before they ran; bench/heldout_h200.sh AB on the same
    # start; the device time left no room for AA, with the other workload's calibration)
    HeldoutSet(RUNS / "run25", "2026-12-07"),
    HeldoutSet(RESULTS / "heldout-2026-12-07d", "2026-12-07", session=True,
               probed_start="heldout13"),
    # the twenty-sixth session (2026-12-07), one lent H100 start: the other three workloads
    # of session 13 and the other workload's calibration (bench/heldout_h200.sh AA; h76 8x1
    # in a second call, AA2, after the first ran past its limit), four host-bound splits in
    # two more processes (AC, AC2), and op tables of two checkpointed splits and their
    # no-checkpointing twins (bench/calibrate_rounds_h200.sh gctwinops)
    HeldoutSet(RESULTS / "heldout-2026-12-07e", "2026-12-07", session=True,
               probed_start="heldout13b"),
    HeldoutSet(RUNS / "run26", "2026-12-07"),
    # the twenty-seventh session (2026-12-07), one lent H100 start: session 14, six new
    # workloads (bench/jobs/heldout14/, predicted in the twenty-sixth session before they
    # ran) and the other workload's calibration (bench/heldout_h200.sh AD, AE), four
    # host-bound splits in two more processes (AF, AF2), then op tables with shapes of the
    # two Qwen2.5-0.5B full fine-tunes and h78 (calibrate_rounds_h200.sh vocab26, run 27)
    HeldoutSet(RESULTS / "heldout-2026-12-07f", "2026-12-07", session=True,
               probed_start="heldout14"),
    HeldoutSet(RUNS / "run27", "2026-12-07"),
    # the twenty-eighth session (2026-12-07), one lent H100 start, then no machine lent: five
    # LoRA dropout twins, dropout 0 first (bench/calibrate_rounds_h200.sh dropouttwins1; run
    # 28), and half of session 15, three new workloads (bench/jobs/heldout15/, predicted in
    # the twenty-seventh session before they ran) with the other workload's calibration
    # (bench/heldout_h200.sh AG; AH, AI and AI2 wait for a machine)
    HeldoutSet(RUNS / "run28", "2026-12-07"),
    HeldoutSet(RESULTS / "heldout-2026-12-07g", "2026-12-07", session=True,
               probed_start="heldout15"),
    # the twenty-ninth session (2026-12-07): run 28's second call (dropout 0.05 first, no
    # probe on that start), then session 15's case AH on another start, cut at the device
    # budget after three runs (h85 2x4 and 8x1, h86 1x4; predicted in the twenty-seventh
    # session, heldout-2026-12-07g/predicted-before*.json); no end probe
    HeldoutSet(RESULTS / "heldout-2026-12-07h", "2026-12-07", session=True,
               probed_start="heldout15b"),
)
