"""Plan fields shared by the budget and compare reports: the splits of every group, and
per-group details."""

from __future__ import annotations

from typing import Any

from gacost.advisor.planner import Plan


def splits_text(p: Plan) -> str:
    """``4x1`` for one group, ``name=4x1 other=2x2`` for several."""
    if len(p.groups) == 1:
        return p.split
    return " ".join(f"{g.group.name}={g.estimate.split}" for g in p.groups)


def groups_dict(p: Plan) -> list[dict[str, Any]]:
    """Per-group details of one plan (for JSON)."""
    return [
        {"group": g.group.name, "runs": g.group.runs, "updates": g.group.updates,
         "sequence_length": g.group.sequence_length,
         "effective_batch": g.group.effective_batch,
         "micro_batch": g.estimate.micro_batch, "grad_accum": g.estimate.grad_accum,
         "seconds_per_update": g.seconds_per_update, "time_source": g.estimate.time_source,
         "hours_per_run": g.hours_per_run, "wall_hours_per_run": p.wall_hours_per_run(g),
         "checkpoints": g.group.saves, "checkpoint_seconds": g.checkpoint_seconds}
        for g in p.groups
    ]
