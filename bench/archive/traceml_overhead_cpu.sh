#!/usr/bin/env bash
# 2026-12-06 (twentieth session); the numbers: bench/RESULTS.md, "TraceML's own cost", from
# bench/results/traceml-overhead-cpu.jsonl (two invocations: 8 rounds, then 16 from round 9).
# Does TraceML's instrumentation slow a host-bound run? The published T4 and L4 rows ran
# under `traceml run` (data/profiles/SOURCES.md). On the CPU, a tiny 8-layer Llama (hidden
# 64) with LoRA on every linear, 64 tokens at 1x4, is all operator dispatch, the part of a
# host-bound GPU run that per-call instrumentation adds to. The user's script
# (bench/user_script.py) runs plain and with TraceML attached (bench/archive/traceml_attach.py)
# in alternating order, each in its own process; one JSON line per run to OUT.
#   pip install --target SITE traceml-ai==0.5.0 rich psutil nvidia-ml-py msgspec
#   TRACEML_SITE=SITE bash bench/archive/traceml_overhead_cpu.sh OUT [ROUNDS [FIRST]]
# (OUT is appended to; FIRST numbers the rounds of a later invocation on.)
set -euo pipefail
OUT=$(realpath "$1"); ROUNDS=${2:-6}; FIRST=${3:-1}
ROOT=$(pwd)
SITE=${TRACEML_SITE:?the folder traceml-ai was installed into (pip install --target)}
JOB=$(mktemp -d)
python - "$JOB" "$ROOT" <<'PY'
import json, sys
from pathlib import Path
folder = Path(sys.argv[1])
config = json.loads((Path(sys.argv[2]) / "bench/jobs/tiny-llama.json").read_text())
config.update(num_hidden_layers=8, torch_dtype="float32")
(folder / "config.json").write_text(json.dumps(config))
(folder / "tiny.yaml").write_text(
    "model: ./config.json\nmethod: lora\n"
    "lora: {r: 16, alpha: 32, dropout: 0.0, target_modules: all-linear}\n"
    "sequence_length: 64\neffective_batch: 4\nprecision: fp32\ngradient_checkpointing: true\n")
PY
cd "$JOB"  # TraceML writes its logs/ into the working folder
PYTHONPATH=$SITE python "$SITE/bin/traceml" serve > serve.log 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null; cd "$ROOT"; rm -rf "$JOB"' EXIT
sleep 8
ARGS=("$JOB/tiny.yaml" --micro-batch 1 --grad-accum 4 --warmup 3 --updates 40)
run() {
  if [ "$1" = plain ]; then python "$ROOT/bench/user_script.py" "${ARGS[@]}"
  else PYTHONPATH=$SITE python "$ROOT/bench/archive/traceml_attach.py" \
         "$ROOT/bench/user_script.py" "${ARGS[@]}"
  fi 2>/dev/null | grep '^{"' | python -c "import json, sys; r = json.loads(sys.stdin.read()); \
r['job'] = 'tiny.yaml'; r['variant'] = '$1'; r['round'] = $2; print(json.dumps(r))" >> "$OUT"
  tail -n 1 "$OUT" | python -c "import json, sys; r = json.loads(sys.stdin.read()); \
print(r['round'], r['variant'], round(r['median_s'], 4))"
}
for round in $(seq "$FIRST" $((FIRST + ROUNDS - 1))); do
  if [ $((round % 2)) = 1 ]; then run plain "$round"; run traceml "$round"
  else run traceml "$round"; run plain "$round"; fi
done
