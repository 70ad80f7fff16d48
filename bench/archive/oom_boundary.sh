#!/usr/bin/env bash
# ARCHIVED 2026-12-03 (issue 21), not maintained: a one-off on the lent H200 on 2026-12-02
# (issue 4). It produced bench/results/h200-qwen3-8b-seq*-{cap16,cap24,uncapped}.json and
# bench/results/h200-oom-boundary-log.txt; the numbers are in bench/RESULTS.md, "OOM boundary
# under `--vram-limit`", and bench/model_validation.py reads the JSON files.
# OOM boundary of Qwen3-8B LoRA under capped GPU memory (16 and 24 GiB), and the
# uncapped peaks, with `gacost calibrate --vram-limit`. Usage: bench/archive/oom_boundary.sh OUTDIR
set -euo pipefail
out=${1:-bench/results}
mkdir -p "$out"
quick=(--warmup 1 --max-seconds 2 --max-updates 5 --quiet)
for seq in 1024 2048; do
  for cap in 16 24; do
    python3 -m gacost calibrate --job "bench/jobs/qwen3-8b-lora-seq$seq.yaml" \
      --vram-limit "${cap}GiB" --out "$out/h200-qwen3-8b-seq$seq-cap$cap.json" "${quick[@]}"
  done
  python3 -m gacost calibrate --job "bench/jobs/qwen3-8b-lora-seq$seq.yaml" \
    --out "$out/h200-qwen3-8b-seq$seq-uncapped.json" "${quick[@]}"
done
