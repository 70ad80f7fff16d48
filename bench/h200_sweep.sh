#!/usr/bin/env bash
# Runs workloads of bench/h200_sweep.py one after another, one process each, on the lent H200.
#
#   bash bench/h200_sweep.sh BUDGET_SECONDS ID [ID ...]
#
# BUDGET_SECONDS: wall seconds this call may take in all; a workload is started only if enough is
# left (its process gets --deadline and a hard `timeout`). IDs are the workload numbers below.
# Each workload writes $OUT/wNN-NAME.json (rewritten after every split, so a killed one keeps what
# it had); logs go to /tmp/h200-sweep-logs and are packed into $OUT/logs-<first id>.tar.gz; a short
# table per workload is printed last and kept in $OUT/summary-<first id>.txt. A failing workload is
# recorded (exit code in the summary) and the sweep goes on.
#
# On the device: python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
#   --target /tmp/site .wheels/*.whl && export PYTHONPATH=/tmp/site || exit; bash bench/h200_sweep.sh 560 1 12
# (with the project installed into /tmp/site too: bench/h200_sweep.py imports gacost's trainer
# settings, placeholder data and kernel classes)
set -u
BUDGET=${1:?budget seconds}
shift
START=$(date +%s)
END=$((START + BUDGET))
OUT=${OUT:-/tmp/h200-sweep-out}
LOGS=/tmp/h200-sweep-logs
mkdir -p "$OUT" "$LOGS"
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1
export HF_DATASETS_DISABLE_PROGRESS_BARS=1 TRANSFORMERS_VERBOSITY=warning
PY=${PYTHON:-python3}
S=bench/h200_sweep.py
M=data/models
CK=/tmp/gs-qwen3-8b-ckpt   # shared random checkpoint for workloads 6 and 7

workload() {  # id -> "name|min_seconds|args"
  case $1 in
    0) echo "tiny-llama-cpu-smoke|20|--device cpu --config bench/jobs/tiny-llama.json --seq 64 --batch 4 --splits 1x4,4x1 --timed-seconds 1" ;;
    1) echo "qwen3-1.7b-r16-s512-b4|60|--config $M/Qwen--Qwen3-1.7B.json --rank 16 --targets all-linear --seq 512 --batch 4 --gc on --splits 1x4,2x2,4x1" ;;
    2) echo "qwen3-0.6b-r16-s256-b16|60|--config $M/Qwen--Qwen3-0.6B.json --rank 16 --targets all-linear --seq 256 --batch 16 --gc on --splits 2x8,4x4,16x1" ;;
    3) echo "llama3.2-1b-r64-s2048-b8-nogc|60|--config $M/meta-llama--Llama-3.2-1B.json --rank 64 --targets all-linear --seq 2048 --batch 8 --gc off --splits 1x8,2x4,8x1" ;;
    4) echo "llama3.2-3b-r8attn-s1024-b8|60|--config $M/meta-llama--Llama-3.2-3B.json --rank 8 --targets attention --seq 1024 --batch 8 --gc on --splits 1x8,4x2,8x1" ;;
    5) echo "qwen3-4b-r32-s4096-b4|70|--config $M/Qwen--Qwen3-4B.json --rank 32 --targets all-linear --seq 4096 --batch 4 --gc on --splits 1x4,2x2,4x1" ;;
    6) echo "qwen3-8b-qlora-r16-s1024-b8-plain|120|--config $M/Qwen--Qwen3-8B.json --method qlora --rank 16 --targets all-linear --seq 1024 --batch 8 --gc on --splits 1x8,4x2,8x1 --ckpt-dir $CK" ;;
    7) echo "qwen3-8b-qlora-r16-s1024-b8-prepare|90|--config $M/Qwen--Qwen3-8B.json --method qlora --prepare-kbit on --rank 16 --targets all-linear --seq 1024 --batch 8 --gc on --splits 1x8,4x2,8x1 --ckpt-dir $CK" ;;
    8) echo "qwen3-8b-r16-s512-b16|70|--config $M/Qwen--Qwen3-8B.json --rank 16 --targets all-linear --seq 512 --batch 16 --gc on --splits 2x8,8x2,16x1" ;;
    9) echo "gemma2-2b-r16-s1024-b8|60|--config $M/google--gemma-2-2b.json --rank 16 --targets all-linear --seq 1024 --batch 8 --gc on --splits 2x4,8x1" ;;
    10) echo "qwen3-1.7b-r16-s512-b4-liger|60|--config $M/Qwen--Qwen3-1.7B.json --rank 16 --targets all-linear --seq 512 --batch 4 --gc on --liger on --splits 1x4,4x1" ;;
    11) echo "qwen3-1.7b-r16-s512-b4-compile|170|--config $M/Qwen--Qwen3-1.7B.json --rank 16 --targets all-linear --seq 512 --batch 4 --gc on --compile on --warmup 3 --splits 1x4,4x1" ;;
    12) echo "qwen3-1.7b-r16-s512-b4-nogc|45|--config $M/Qwen--Qwen3-1.7B.json --rank 16 --targets all-linear --seq 512 --batch 4 --gc off --splits 1x4,4x1" ;;
    *) echo "" ;;
  esac
}

FIRST=$(printf '%02d' "${1:-0}")
SUMMARY=$OUT/summary-w$FIRST.txt
(
  date -u; uname -a; nproc; grep -m1 'model name' /proc/cpuinfo; free -g
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,power.limit,temperature.gpu,utilization.gpu --format=csv
  nvidia-smi
  [ "${SWEEP_ENV:-0}" = 1 ] || exit 0
  $PY -c 'import sys,torch,transformers,peft,accelerate; print(sys.version); print("torch",torch.__version__,torch.version.cuda,"transformers",transformers.__version__,"peft",peft.__version__,"accelerate",accelerate.__version__)'
  $PY -c 'import trl,datasets; print("trl",trl.__version__,"datasets",datasets.__version__)'
  $PY -c 'import bitsandbytes; print("bitsandbytes",bitsandbytes.__version__)'
  $PY -c 'import liger_kernel, importlib.metadata as m; print("liger-kernel", m.version("liger-kernel"))'
  $PY -c 'import triton; print("triton", triton.__version__)'
) > "$OUT/env-w$FIRST.txt" 2>&1
head -4 "$OUT/env-w$FIRST.txt" | tail -2; grep -E '^(torch|trl|bitsandbytes|liger|triton) ' "$OUT/env-w$FIRST.txt"
JSONS=()
: > "$LOGS/status.txt"
for id in "$@"; do
  spec=$(workload "$id")
  if [ -z "$spec" ]; then echo "unknown workload $id" | tee -a "$LOGS/status.txt"; continue; fi
  name=${spec%%|*}; rest=${spec#*|}; minsec=${rest%%|*}; args=${rest#*|}
  tag=w$(printf '%02d' "$id")-$name
  now=$(date +%s); left=$((END - now))
  if [ "$left" -lt "$minsec" ]; then
    echo "$tag: SKIPPED (only ${left}s left, needs >= ${minsec}s)" | tee -a "$LOGS/status.txt"
    continue
  fi
  echo "=== $(date -u +%H:%M:%S) $tag (left ${left}s): $args" | tee -a "$LOGS/status.txt"
  t0=$(date +%s)
  # shellcheck disable=SC2086
  timeout --signal=TERM --kill-after=10 $((left - 12)) $PY $S --name "$tag" $args \
    --deadline $((END - 15)) --out "$OUT/$tag.json" > "$LOGS/$tag.log" 2>&1
  rc=$?
  echo "$tag: rc=$rc wall=$(( $(date +%s) - t0 ))s" | tee -a "$LOGS/status.txt"
  grep -E "^\[$tag\]|Error|error:" "$LOGS/$tag.log" | grep -v -i "warn" | tail -8
  JSONS+=("$OUT/$tag.json")
done
{
  cat "$LOGS/status.txt"
  if [ ${#JSONS[@]} -gt 0 ]; then $PY $S --summarize "${JSONS[@]}"; fi
} > "$SUMMARY" 2>&1
tar -czf "$OUT/logs-w$FIRST.tar.gz" -C "$LOGS" . 2>/dev/null
echo
cat "$SUMMARY"
echo "sweep wall $(( $(date +%s) - START ))s"
