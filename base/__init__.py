"""The shared base: records, errors, the GPU table, model configs, profiles, the job, the
atomic writer. It imports nothing else of gacost, and nothing heavy (no torch, no httpx)."""
