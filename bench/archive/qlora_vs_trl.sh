#!/usr/bin/env bash
# ARCHIVED 2026-12-03 (issue 21), not maintained: a one-off on the lent H200 on 2026-12-02. It
# produced bench/results/h200-calibrate-qwen3-8b-qlora-plain.json (shipped as a reference
# profile: data/profiles/SOURCES.md) and its .log; the numbers are in bench/RESULTS.md, "QLoRA
# as TRL builds it".
# gacost calibrate on the QLoRA workload that bench/h200_sweep.py measured with plain TRL
# (bench/results/h200-sweep/w06-*: Qwen3-8B, NF4, r16 all-linear, seq 1024, batch 8), on the
# lent H200. Run there with the wheels carried (.wheels/, gacost's own wheel included):
#   bash bench/archive/qlora_vs_trl.sh
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site \
  .wheels/*.whl || exit 1
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
out="${OUT:-/tmp/out}"
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee "$out/gpu.txt"
/usr/bin/time -v python3 -m gacost calibrate --job bench/jobs/qwen3-8b-qlora-seq1024-plain.yaml \
  --device cuda --quiet --out "$out/h200-qwen3-8b-qlora-plain.json" 2>&1 \
  | tee "$out/qlora-plain.log" | grep -v "^\s" | tail -25
