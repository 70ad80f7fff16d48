"""Classify out-of-memory failures (pure: no torch import)."""

from __future__ import annotations

OOM_MESSAGES = (
    "out of memory",
    "CUBLAS_STATUS_ALLOC_FAILED",
    "CUDNN_STATUS_NOT_SUPPORTED",
    "DefaultCPUAllocator: can't allocate memory",
    "cudaErrorMemoryAllocation",
)


def is_oom(exc: BaseException) -> bool:
    """True for torch's OutOfMemoryError or a RuntimeError whose message says memory ran out."""
    if type(exc).__name__ == "OutOfMemoryError":
        return True
    if isinstance(exc, RuntimeError) and exc.args:
        text = str(exc.args[0])
        return any(m in text for m in OOM_MESSAGES)
    return False
