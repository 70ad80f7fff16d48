#!/usr/bin/env bash
# Issue 19 item 1 on the lent GPU: `gacost calibrate` against the user's own run, alternating
# rounds so that the host's drift between processes falls on both sides (bench/RESULTS.md,
# "Calibrate vs the user's run, rounds"). One workload per call (each fits the 600-s limit):
#   bash bench/calibrate_rounds_h200.sh h07    (on the device; installs .wheels and the project)
# Workloads: h07 (full fine-tune, host-bound; every split traced, for the full-FT host), h02
# and h01 (LoRA, host-bound), h04 (Mistral-7B, GPU-bound); runs 6 and 7 below. Results go to
# $OUT as they come.
set -uo pipefail
if [ ! -d /tmp/site/trl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .wheels/*.whl
fi
python3 -m pip install -q --no-index --no-deps --no-build-isolation --upgrade --target /tmp/site .
export PYTHONPATH=/tmp/site
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
  lscpu | grep -E "Model name|^CPU\(s\)|Hypervisor"; } > "$OUT/machine-$1.txt" 2>&1
H=bench/jobs/heldout
ROUNDS=(--rounds 2 --warmup 3 --updates 10)
# user FILE JOB SPLIT [ARGS...]: the user's script (bench/user_script.py) on JOB at SPLIT (MxK)
# after 3 warm-up updates, its JSON line appended to $OUT/FILE (ARGS: --updates N, --trace N...)
user() { python3 bench/user_script.py "$2" --micro-batch ${3%x*} --grad-accum ${3#*x} \
           --warmup 3 "${@:4}" 2>/dev/null | grep '^{"' >> "$OUT/$1"
         tail -c 300 "$OUT/$1"; echo; }
# full_twin_ops FILE: op tables (device time) of two full fine-tunes and their LoRA twins at
# 16x1, appended to $OUT/FILE (cases fullops, crossops-tables)
full_twin_ops() {
  local F=bench/jobs/fullft job
  for job in $H/h07-qwen2.5-0.5b-full-s512-b16 $F/qwen2.5-0.5b-lora-d0-s512-b16 \
             $F/qwen3-0.6b-full-s512-b16 $F/qwen3-0.6b-lora-d0-s512-b16; do
    user "$1" $job.yaml 16x1 --updates 3 --op-table 1
  done
}
# rates: bench/elementwise_rates.py on the attached GPU, into $OUT
rates() { python3 bench/elementwise_rates.py --out "$OUT/elementwise-rates.json" \
            > "$OUT/elementwise-rates.txt"; }
case "$1" in
  h07) python3 bench/calibrate_vs_user.py "${ROUNDS[@]}" --calibrate-args=--trace-all \
         --out "$OUT/run5-h07.json" $H/h07-qwen2.5-0.5b-full-s512-b16.yaml:4x4,16x1 ;;
  h02) python3 bench/calibrate_vs_user.py "${ROUNDS[@]}" \
         --out "$OUT/run5-h02.json" $H/h02-qwen2.5-1.5b-r32-s512-b8.yaml:4x2,8x1 ;;
  h01) python3 bench/calibrate_vs_user.py "${ROUNDS[@]}" \
         --out "$OUT/run5-h01.json" $H/h01-smollm2-360m-s1024-b16.yaml:8x2,16x1 ;;
  h04) python3 bench/calibrate_vs_user.py "${ROUNDS[@]}" \
         --out "$OUT/run5-h04.json" $H/h04-mistral-7b-s1024-b8.yaml:4x2,8x1 ;;
  # The user's runs traced (bench/user_script.py --trace): the full fine-tune h07 at two
  # splits beside a LoRA workload of the same host-bound kind, then a third round of h01.
  trace)
    for spec in h07-qwen2.5-0.5b-full-s512-b16:16x1 h07-qwen2.5-0.5b-full-s512-b16:4x4 \
                h02-qwen2.5-1.5b-r32-s512-b8:8x1; do
      user trace-user-runs.jsonl $H/${spec%%:*}.yaml ${spec##*:} --updates 10 --trace 2
    done
    python3 bench/calibrate_vs_user.py --warmup 3 --updates 10 \
      --out "$OUT/run5-h01-round3.json" $H/h01-smollm2-360m-s1024-b16.yaml:8x2,16x1 ;;
  # Run 6 (2026-12-03, fourth session). fullvslora: the full fine-tune h07 and its LoRA twin
  # alternating, two rounds of two splits (each run's host phases in the JSON), then the
  # twin's kernels traced and an op table of each at 16x1.
  fullvslora)
    TWIN=bench/jobs/qwen2.5-0.5b-lora-s512-b16.yaml; FULL=$H/h07-qwen2.5-0.5b-full-s512-b16.yaml
    run6() { user run6-fullvslora.jsonl "$1" "$2" --updates 10 "${@:3}"; }
    for round in 1 2; do
      for split in 16x1 4x4; do run6 $FULL $split; run6 $TWIN $split; done
    done
    run6 $TWIN 16x1 --trace 2; run6 $TWIN 4x4 --trace 2
    run6 $FULL 16x1 --op-table 2; run6 $TWIN 16x1 --op-table 2 ;;
  # h07cal: calibrate learned full fine-tunes after run 5; against the user's script here.
  h07cal) python3 bench/calibrate_vs_user.py "${ROUNDS[@]}" \
         --out "$OUT/run6-h07.json" $H/h07-qwen2.5-0.5b-full-s512-b16.yaml:4x4,16x1 ;;
  # h01nvml: h01's fully timed 16x1 (run 5's +14.5 % miss), three rounds of the user's run,
  # calibrate, and calibrate --no-trace (no NVML sampling thread during the timed updates).
  h01nvml) python3 bench/calibrate_vs_user.py --rounds 3 --warmup 3 --updates 10 \
         --variant=--no-trace --out "$OUT/run6-h01.json" $H/h01-smollm2-360m-s1024-b16.yaml:16x1 ;;
  # gpubound: the held-out GPU-side misses traced (h06 Phi-3-mini 8x1 -20 %, h03 Llama-3.2-3B
  # 2x2 +22 %): where the GPU's time goes by kernel class, against the model's parts.
  gpubound)
    for spec in h06-phi3-mini-attn-nogc-s1024-b8:8x1 h06-phi3-mini-attn-nogc-s1024-b8:2x4 \
                h03-llama3.2-3b-s2048-b4-d01:2x2 h03-llama3.2-3b-s2048-b4-d01:4x1; do
      user run6-gpubound.jsonl $H/${spec%%:*}.yaml ${spec##*:} --updates 10 --trace 2
    done ;;
  # gpuops: the ops' device time of the two GPU-bound splits (what the memory-bound work is)
  gpuops)
    for spec in h06-phi3-mini-attn-nogc-s1024-b8:8x1 h03-llama3.2-3b-s2048-b4-d01:4x1; do
      user run6-gpuops.jsonl $H/${spec%%:*}.yaml ${spec##*:} --updates 5 --op-table 1
    done ;;
  # Run 7 (2026-12-03, fifth session). fullft1 / fullft2: three models' full fine-tunes
  # against their LoRA twins (dropout 0), each pair run back to back in its own processes so
  # that the host's drift falls on both; round 2 runs the pairs in the other order and traces
  # the 16x1 splits (kernels, host per kernel, GPU time by class).
  fullft1|fullft2)
    F=bench/jobs/fullft
    run7() { user run7-fullft.jsonl "$1" "$2" --updates 10 "${@:3}"; }
    for pair in $H/h07-qwen2.5-0.5b-full-s512-b16:$F/qwen2.5-0.5b-lora-d0-s512-b16 \
                $F/qwen3-0.6b-full-s512-b16:$F/qwen3-0.6b-lora-d0-s512-b16 \
                $F/smollm2-360m-full-s512-b16:$F/smollm2-360m-lora-d0-s512-b16; do
      full=${pair%%:*}.yaml; twin=${pair##*:}.yaml
      if [ "$1" = fullft1 ]; then
        for split in 4x4 16x1; do run7 $full $split; run7 $twin $split; done
      else
        run7 $twin 4x4; run7 $full 4x4; run7 $twin 16x1 --trace 2; run7 $full 16x1 --trace 2
      fi
    done ;;
  # Run 10 (2026-12-05, ninth session). fullft3: the four held-out full fine-tunes (h33,
  # h26, h14, h19; host-bound splits 2-27 % under the model) beside their LoRA twins (dropout
  # 0, bench/jobs/fullft/twin-*), at the held-out split, each pair back to back, the order
  # alternating between pairs (h14 at 1x8: its 2x4 is not host-bound enough to count).
  fullft3)
    F=bench/jobs/fullft
    order=0
    for spec in heldout6/h33-smollm2-135m-full-s1024-b32:twin-h33-smollm2-135m-lora-d0-s1024-b32:8x4 \
                heldout5/h26-qwen3-0.6b-full-s1024-b16:twin-h26-qwen3-0.6b-lora-d0-s1024-b16:4x4 \
                heldout3/h14-qwen3-1.7b-full-nogc-s1024-b8:twin-h14-qwen3-1.7b-lora-d0-nogc-s1024-b8:1x8 \
                heldout4/h19-smollm2-360m-full-nogc-s512-b16:twin-h19-smollm2-360m-lora-d0-nogc-s512-b16:2x8; do
      IFS=: read -r full twin split <<< "$spec"
      full=bench/jobs/$full.yaml; twin=$F/$twin.yaml
      if [ $((order++ % 2)) = 0 ]; then pair=("$full" "$twin"); else pair=("$twin" "$full"); fi
      for job in "${pair[@]}"; do user run10-fullft.jsonl "$job" "$split" --updates 10; done
    done ;;
  # fused: Phi-3-mini's GPU-bound miss isolated: the same job (LoRA on o_proj and down_proj
  # only) as Phi-3 (fused qkv_proj, gate_up_proj) and with the same sizes as a Llama
  # (unfused), traced at 8x1 and 2x4, then an op table of each at 8x1.
  fused)
    J=bench/jobs/phi3-mini-od-nogc-s1024-b8.yaml
    for split in 8x1 2x4; do
      for build in phi3 llama; do
        user run7-fused.jsonl $J $split --updates 10 --trace 2 --model-type $build
      done
    done
    for build in phi3 llama; do
      user run7-fused.jsonl $J 8x1 --updates 3 --op-table 1 --model-type $build
    done ;;
  # fullops: where fullft's extra memory-bound GPU time goes: an op table (device time) of
  # two full fine-tunes and their twins at 16x1.
  fullops) full_twin_ops run7-fullops.jsonl ;;
  # heldout2: four workloads nobody fitted, predicted before they ran (run7/predicted-before.json),
  # GPU-bound splits first.
  heldout2)
    J=bench/jobs/heldout2
    for spec in h08-qwen2.5-7b-s1024-b8:8x1 h10-llama3.2-1b-qv-nogc-s2048-b8:8x1 \
                h09-gemma2-2b-full-s512-b16:16x1 h11-smollm2-1.7b-qlora-s1024-b8:8x1 \
                h08-qwen2.5-7b-s1024-b8:2x4 h10-llama3.2-1b-qv-nogc-s2048-b8:2x4 \
                h09-gemma2-2b-full-s512-b16:4x4 h11-smollm2-1.7b-qlora-s1024-b8:2x4; do
      user run7-heldout2.jsonl $J/${spec%%:*}.yaml ${spec##*:} --updates 8
    done ;;
  # repeat3 (run 8, 2026-12-04): the host-bound splits of held-out session 3 farthest from
  # the model, again in fresh processes, interleaved: structure or the host between processes?
  repeat3)
    J=bench/jobs/heldout3
    for spec in h17-mistral-7b-qv-nogc-s512-b8:2x4 h13-gemma2-2b-lora-s1024-b8:2x4 \
                h16-qwen2.5-1.5b-qlora-r64-s2048-b4:4x1 h17-mistral-7b-qv-nogc-s512-b8:2x4 \
                h13-gemma2-2b-lora-s1024-b8:2x4 h16-qwen2.5-1.5b-qlora-r64-s2048-b4:1x4 \
                h17-mistral-7b-qv-nogc-s512-b8:2x4 h13-gemma2-2b-lora-s1024-b8:2x4 \
                h16-qwen2.5-1.5b-qlora-r64-s2048-b4:4x1 h14-qwen3-1.7b-full-nogc-s1024-b8:2x4; do
      user run8-repeat3.jsonl $J/${spec%%:*}.yaml ${spec##*:} --updates 10
    done ;;
  # memory (run 8): the held-out peaks most below the model, allocated beside reserved
  # (2 timed updates each: memory only; kept in run8/memory/, which the time benches skip)
  memory)
    for spec in heldout3/h14-qwen3-1.7b-full-nogc-s1024-b8:2x4 heldout3/h14-qwen3-1.7b-full-nogc-s1024-b8:8x1 \
                qwen3-0.6b-lora-nogc-dropout:8x1 qwen3-0.6b-lora-nogc-dropout:2x4 \
                heldout/h01-smollm2-360m-s1024-b16:4x4 fullft/smollm2-360m-lora-d0-s512-b16:4x4 \
                heldout3/h17-mistral-7b-qv-nogc-s512-b8:8x1; do
      user run8-memory.jsonl bench/jobs/${spec%%:*}.yaml ${spec##*:} --updates 2
    done ;;
  # census (2026-12-04, seventh session): what is live at the peak of the held-out splits the
  # memory model is farthest from, both sides (user_script.py --memory-peak)
  census)
    for spec in fullft/qwen3-0.6b-full-s512-b16:16x1 fullft/qwen3-0.6b-lora-d0-s512-b16:16x1 \
                heldout2/h11-smollm2-1.7b-qlora-s1024-b8:8x1 heldout3/h16-qwen2.5-1.5b-qlora-r64-s2048-b4:4x1 \
                heldout3/h14-qwen3-1.7b-full-nogc-s1024-b8:2x4 fullft/smollm2-360m-lora-d0-s512-b16:4x4 \
                qwen3-1.7b-lora-bf16:4x1 heldout3/h13-gemma2-2b-lora-s1024-b8:8x1; do
      user census.jsonl bench/jobs/${spec%%:*}.yaml ${spec##*:} --updates 1 --memory-peak
    done ;;
  # census2: the two checkpointed LoRA splits with dropout the census's counted terms left low
  census2)
    for spec in qwen2.5-0.5b-lora-s512-b16:16x1 heldout/h01-smollm2-360m-s1024-b16:16x1; do
      user census2.jsonl bench/jobs/${spec%%:*}.yaml ${spec##*:} --updates 1 --memory-peak
    done ;;
  # qloratrace (2026-12-04, seventh session): held-out QLoRA leans low on time (bench/MODEL.md,
  # held-out session 4); the host-bound QLoRA split traced beside its LoRA twin, and another
  # (kept in run9/qlora/: the GPU-term fit of bench/model_v2.py reads run*/*.jsonl)
  qloratrace)
    for spec in heldout4/h22-qwen3-1.7b-qlora-d0-s2048-b4:1x4 heldout4/twin-h22-qwen3-1.7b-lora-d0-s2048-b4:1x4 \
                heldout4/h21-llama3.2-3b-qlora-s1024-b8:2x4; do
      user qlora-trace.jsonl bench/jobs/${spec%%:*}.yaml ${spec##*:} --updates 5 --trace 2
    done ;;
  # qloratrace2: the same pair again, the LoRA twin first (the order's drift on both sides)
  qloratrace2)
    for spec in heldout4/twin-h22-qwen3-1.7b-lora-d0-s2048-b4:1x4 heldout4/h22-qwen3-1.7b-qlora-d0-s2048-b4:1x4; do
      user qlora-trace2.jsonl bench/jobs/${spec%%:*}.yaml ${spec##*:} --updates 5 --trace 2
    done ;;
  # qloratwins1|qloratwins2 (eighth session): QLoRA's host cost per launch on four more
  # architectures, each host-bound QLoRA split beside its LoRA twin (bench/jobs/twins/), in
  # alternating order, untraced (the profiler slows the host; the counts held within 3 % in
  # the traces above), 10 timed updates each (run9/qlora/, out of model_v2.py's glob)
  qloratwins1)
    for spec in heldout4/h21-llama3.2-3b-qlora-s1024-b8:2x4 twins/twin-h21-llama3.2-3b-lora-s1024-b8:2x4 \
                twins/twin-h16-qwen2.5-1.5b-lora-r64-s2048-b4:1x4 heldout3/h16-qwen2.5-1.5b-qlora-r64-s2048-b4:1x4; do
      user qlora-twins.jsonl bench/jobs/${spec%%:*}.yaml ${spec##*:} --updates 10
    done ;;
  qloratwins2)
    for spec in heldout2/h11-smollm2-1.7b-qlora-s1024-b8:2x4 twins/twin-h11-smollm2-1.7b-lora-s1024-b8:2x4 \
                twins/twin-h05-qwen3-4b-lora-s1024-b8:2x4 heldout/h05-qwen3-4b-qlora-s1024-b8:2x4; do
      user qlora-twins.jsonl bench/jobs/${spec%%:*}.yaml ${spec##*:} --updates 10
    done ;;
  # Run 11 (2026-12-05, tenth session). sustain: does a call's first process run fast, and
  # does a short run's median stand for a long run's mean? The other workload of the held-out
  # sessions at its host-bound 4x1: calibrate, three short user runs, one user run of 350
  # updates, three short user runs, calibrate, all in one call; start times in sustain-at.txt.
  sustain)
    J=bench/jobs/qwen3-1.7b-lora-bf16-dropout.yaml
    cal() { echo "cal$1 $(date +%s.%N)" >> "$OUT/sustain-at.txt"
            python3 -m gacost calibrate --job $J --splits 4x1 --out "$OUT/sustain-cal$1.json" \
              --force --quiet > /dev/null 2>&1; }
    short() { echo "short$1 $(date +%s.%N)" >> "$OUT/sustain-at.txt"
              user sustain.jsonl $J 4x1 --updates 10; }
    cal 1; short 1; short 2; short 3
    echo "long $(date +%s.%N)" >> "$OUT/sustain-at.txt"
    user sustain-long.jsonl $J 4x1 --updates 350
    short 4; short 5; short 6; cal 2
    echo "end $(date +%s.%N)" >> "$OUT/sustain-at.txt" ;;
  # Run 12 (2026-12-05, eleventh session). saves: what a checkpoint costs, timed by the
  # Trainer's on_save (bench/MODEL.md, "Checkpoints"): full fine-tunes of four sizes and LoRA
  # of two, TRL's checkpoint (weights or adapter, optimizer, scheduler, RNG, trainer state)
  # every 2 updates, 6 updates: three saves each, the first to a cold output folder.
  saves)
    for spec in heldout6/h33-smollm2-135m-full-s1024-b32:32x1 heldout3/h14-qwen3-1.7b-full-nogc-s1024-b8:8x1 \
                heldout2/h09-gemma2-2b-full-s512-b16:16x1 fullft/qwen3-0.6b-full-s512-b16:16x1 \
                heldout2/h08-qwen2.5-7b-s1024-b8:8x1 twins/twin-h16-qwen2.5-1.5b-lora-r64-s2048-b4:4x1; do
      user saves.jsonl bench/jobs/${spec%%:*}.yaml ${spec##*:} --updates 3 --save-steps 2
    done ;;
  # saves2 (the same session): held out, predicted before it ran (bench/MODEL.md,
  # "Checkpoints"): a 24.1 GB save (Qwen3-4B full, 24.1 s predicted; one save at the end, the
  # device's disk holds no two) and QLoRA's bf16 adapters (Qwen3-8B, 0.26 GB, 0.26 s).
  saves2)
    df -h /tmp > "$OUT/df.txt" 2>&1
    user saves2.jsonl bench/jobs/checkpoints/qwen3-4b-full-s512-b4.yaml 4x1 --updates 3
    user saves2.jsonl bench/jobs/qwen3-8b-qlora-seq1024-plain.yaml 8x1 --updates 3 --save-steps 2 ;;
  # saves3 (planned 2026-12-05, not yet run: no device could be started): is the rate the
  # host's or the size's? On one machine, 10.3 GB three times (Qwen3-1.7B full), 24.1 GB once
  # and QLoRA's 0.26 GB three times.
  saves3)
    user saves3.jsonl bench/jobs/heldout3/h14-qwen3-1.7b-full-nogc-s1024-b8.yaml 8x1 --updates 3 --save-steps 2
    user saves3.jsonl bench/jobs/checkpoints/qwen3-4b-full-s512-b4.yaml 4x1 --updates 3
    user saves3.jsonl bench/jobs/qwen3-8b-qlora-seq1024-plain.yaml 8x1 --updates 3 --save-steps 2 ;;
  # Run 13 (2026-12-05, twelfth session). spread: why does one process run 10-30 % apart from
  # the next (bench/MODEL.md, "One run is one draw")? The sustain workload at 4x1, six rounds
  # of three conditions: as a user runs it; with the memory layout fixed (ASLR off, hash seed
  # 0: if the layout draws the level, these six agree); pinned to four CPUs. Each process
  # records where its threads ran, its context switches, huge pages and the VM's steal.
  spread)
    { lscpu -e; cat /sys/kernel/mm/transparent_hugepage/enabled; nproc; } > "$OUT/topology.txt" 2>&1
    J=bench/jobs/qwen3-1.7b-lora-bf16-dropout.yaml
    run() { echo "$1 $(date +%s.%N)" >> "$OUT/spread-at.txt"
            "${@:2}" python3 bench/user_script.py $J --micro-batch 4 --grad-accum 1 --warmup 3 \
              --updates 10 2>/dev/null | grep '^{"' | sed "s/^{/{\"condition\": \"$1\", /" \
              >> "$OUT/spread.jsonl"; tail -c 120 "$OUT/spread.jsonl"; echo; }
    for round in 1 2 3 4 5 6; do
      run user env
      run fixed env PYTHONHASHSEED=0 setarch "$(uname -m)" -R
      run pinned taskset -c 4-7
    done ;;
  # probe (the same session): does the host's CPU speed move with the training's time per
  # update? Six user runs of the sustain workload pinned to CPUs 4-7, 30 timed updates each,
  # while a fixed Python task is timed on CPUs 0 and 12 (bench/host_probe.py) and the GPU's
  # clocks and power are sampled every 0.5 s; each update's end is on the same wall clock.
  probe)
    J=bench/jobs/qwen3-1.7b-lora-bf16-dropout.yaml
    nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,utilization.gpu \
      --format=csv,noheader -lms 500 > "$OUT/probe-gpu.csv" 2>&1 & SMI=$!
    taskset -c 0 python3 bench/host_probe.py --seconds 560 > "$OUT/probe-cpu0.json" & P0=$!
    taskset -c 12 python3 bench/host_probe.py --seconds 560 > "$OUT/probe-cpu12.json" & P12=$!
    for round in 1 2 3 4 5 6; do
      taskset -c 4-7 python3 bench/user_script.py $J --micro-batch 4 --grad-accum 1 --warmup 3 \
        --updates 30 2>/dev/null | grep '^{"' >> "$OUT/probe-user.jsonl"
      tail -c 100 "$OUT/probe-user.jsonl"; echo
    done
    kill $SMI $P0 $P12; wait $P0 $P12 ;;
  # One machine start (runs 16-): an idle 10-s probe on two CPUs (what a probe before any
  # training sees), four processes of the host-bound 4x1 and two of the heavier 16x1 of the
  # same job with the probe on two other CPUs, an idle probe again; the VM's boot id tells
  # one start from another.
  probe2)
    J=bench/jobs/qwen3-1.7b-lora-bf16-dropout.yaml
    { cat /proc/sys/kernel/random/boot_id; grep -m1 "cpu MHz" /proc/cpuinfo
      cat /sys/class/dmi/id/product_name 2>/dev/null; } >> "$OUT/machine-probe2.txt"
    idle() { taskset -c 4 python3 bench/host_probe.py --seconds 10 > "$OUT/idle-$1-cpu4.json" &
             taskset -c 12 python3 bench/host_probe.py --seconds 10 > "$OUT/idle-$1-cpu12.json"
             wait; }
    idle before
    taskset -c 0 python3 bench/host_probe.py --seconds 560 > "$OUT/probe-cpu0.json" & P0=$!
    taskset -c 12 python3 bench/host_probe.py --seconds 560 > "$OUT/probe-cpu12.json" & P12=$!
    for split in 4x1 4x1 16x1 4x1 4x1 16x1; do
      taskset -c 4-7 python3 bench/user_script.py $J --micro-batch ${split%x*} \
        --grad-accum ${split#*x} --warmup 3 --updates 30 2>/dev/null | grep '^{"' \
        >> "$OUT/probe-user.jsonl"
      tail -c 100 "$OUT/probe-user.jsonl"; echo
    done
    kill $P0 $P12; wait $P0 $P12
    idle after ;;
  # e2e (2026-12-06, fourteenth session): the probe commands end to end on the GPU: `gacost
  # probe` idle, `gacost calibrate` (which records its probe) of the probe job's three splits,
  # `gacost probe --profile` against it, and `recommend --host-probe-ms` with that probe; a
  # fifth machine start for the reference probe (bench/host_speed.py CALIBRATED_STARTS)
  e2e)
    J=bench/jobs/qwen3-1.7b-lora-bf16-dropout.yaml
    python3 -m gacost probe --seconds 10 --quiet > "$OUT/e2e-probe-idle.txt" 2>&1
    python3 -m gacost calibrate --job $J --splits 1x4,2x2,4x1 --out "$OUT/e2e-profile.json" \
      --force > "$OUT/e2e-calibrate.txt" 2>&1
    python3 -m gacost probe --seconds 10 --quiet --profile "$OUT/e2e-profile.json" \
      > "$OUT/e2e-probe-profile.txt" 2>&1
    MS=$(sed -n 's/^host probe: \([0-9.]*\) ms.*/\1/p' "$OUT/e2e-probe-profile.txt")
    python3 -m gacost recommend --job $J --profile "$OUT/e2e-profile.json" \
      --host-probe-ms "$MS" --top 3 > "$OUT/e2e-recommend.txt" 2>&1
    python3 -m gacost probe --seconds 10 --quiet > "$OUT/e2e-probe-idle-after.txt" 2>&1
    tail -n 30 "$OUT"/e2e-*.txt ;;
  # gpuside (2026-12-06, fifteenth session): the GPU-bound misses of held-out session 7 op by
  # op, grouped by input shape (user_script.py --op-table 1 --op-shapes): the attention-only
  # Qwen2.5-7B (h41) beside its all-linear twin (h08) at 8x1 and 2x4, Phi-3-mini's fused
  # projections (h40 8x1) and the Qwen2.5-1.5B full fine-tune (h38 16x1)
  gpuside)
    X=bench/jobs/heldout7
    ATTN=$X/h41-qwen2.5-7b-attn-s1024-b8.yaml ALL=bench/jobs/heldout2/h08-qwen2.5-7b-s1024-b8.yaml
    for spec in $ATTN:8x1 $ALL:8x1 $X/h40-phi3-mini-s1024-b8.yaml:8x1 \
                $X/h38-qwen2.5-1.5b-full-s512-b16.yaml:16x1 $ATTN:2x4 $ALL:2x4; do
      user gpuside-ops.jsonl ${spec%%:*} ${spec##*:} --updates 5 --op-table 1 --op-shapes
    done ;;
  # crossgpu1 / crossgpu2 (2026-12-06, sixteenth session): the traced H200 splits of the
  # user's runs (runs 5-7, the rows bench/model_v2.py fits the memory-bound terms on) again on
  # whatever GPU the call is given, traced the same way (--trace 2), to see how each kernel
  # class's time moves from one GPU to another: the full fine-tunes and their LoRA twins,
  # the host-bound LoRA splits, then Phi-3 (fused and unfused) and Llama-3.2-3B with dropout.
  # crossgpu (seventeenth session): on an H200, run 18's op tables (case gpuside, first run on
  # an H100) to compare kernel by kernel, after the element-wise rates; on any other GPU,
  # crossgpu1 (run 19, eighteenth session: twice on an H100), since then crossops.
  crossgpu)
    if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
      rates; bash "$0" gpuside
    else
      bash "$0" crossops
    fi ;;
  crossgpu1)
    rates
    F=bench/jobs/fullft
    H07=$H/h07-qwen2.5-0.5b-full-s512-b16.yaml TWIN=bench/jobs/qwen2.5-0.5b-lora-s512-b16.yaml
    for spec in $H07:16x1 $F/qwen2.5-0.5b-lora-d0-s512-b16.yaml:16x1 \
                $F/qwen3-0.6b-full-s512-b16.yaml:16x1 $F/qwen3-0.6b-lora-d0-s512-b16.yaml:16x1 \
                $F/smollm2-360m-full-s512-b16.yaml:16x1 $F/smollm2-360m-lora-d0-s512-b16.yaml:16x1 \
                $TWIN:16x1 $H/h02-qwen2.5-1.5b-r32-s512-b8.yaml:8x1 $H07:4x4 $TWIN:4x4; do
      user run19-crossgpu.jsonl ${spec%%:*} ${spec##*:} --updates 6 --trace 2
    done ;;
  crossgpu2)
    J=bench/jobs/phi3-mini-od-nogc-s1024-b8.yaml
    for spec in $H/h06-phi3-mini-attn-nogc-s1024-b8:8x1 $H/h06-phi3-mini-attn-nogc-s1024-b8:2x4 \
                $H/h03-llama3.2-3b-s2048-b4-d01:4x1 $H/h03-llama3.2-3b-s2048-b4-d01:2x2; do
      user run19-crossgpu.jsonl ${spec%%:*}.yaml ${spec##*:} --updates 6 --trace 2
    done
    for split in 8x1 2x4; do
      for build in phi3 llama; do
        user run19-crossgpu.jsonl $J $split --updates 6 --trace 2 --model-type $build
      done
    done ;;
  # crossops (eighteenth session): the H200 op tables of runs 6 and 7 (gpuops, fused,
  # fullops: device time per ATen op) again with the same flags on whatever GPU the call is
  # given, to pair op by op (bench/crossgpu_traces.py): which kinds of kernel take the DRAM
  # ratio between two GPUs and which take the same time on both; the element-wise rates first
  crossops)
    rates; bash "$0" crossops-tables ;;
  # crossops-tables: crossops without the element-wise rates (a call with little device time)
  crossops-tables)
    J=bench/jobs/phi3-mini-od-nogc-s1024-b8.yaml
    for spec in h06-phi3-mini-attn-nogc-s1024-b8:8x1 h03-llama3.2-3b-s2048-b4-d01:4x1; do
      user run19-crossops.jsonl $H/${spec%%:*}.yaml ${spec##*:} --updates 5 --op-table 1
    done
    for build in phi3 llama; do
      user run19-crossops.jsonl $J 8x1 --updates 3 --op-table 1 --model-type $build
    done
    full_twin_ops run19-crossops.jsonl ;;
  # gpuside9 (2026-12-06, nineteenth session): held-out session 9's GPU-bound splits the model
  # charged 7-12 % off on the lent H100, one more update under the profiler with ops grouped
  # by input shape (as gpuside), then its host-bound miss (h48 1x4, +21 %) in two more
  # processes: one process is one draw of the host
  gpuside9)
    Z=bench/jobs/heldout9
    for spec in h50-smollm2-1.7b-full-s512-b16:16x1 h53-mistral-7b-attn-r32-s2048-b4:4x1 \
                h52-qwen2.5-1.5b-d01-nogc-s1024-b16:16x1; do
      user run20-gpuside.jsonl $Z/${spec%%:*}.yaml ${spec##*:} --updates 5 --op-table 1 \
        --op-shapes
    done
    for _ in 1 2; do
      user run20-repeats.jsonl $Z/h48-qwen3-4b-s2048-b4.yaml 1x4 --updates 10
    done ;;
  # gpuside13 (2026-12-07, twenty-fifth session): the H100's GPU-bound lean on attention-only
  # LoRA (held-out h64 4x1, +11.0 %, and h53 4x1, +10.9 %, on lent H100s) op by op on whatever
  # GPU the call is given, grouped by input shape as gpuside9 (h53's H100 table is run 20's):
  # on an H200, the like-for-like pair that says whether the lean is the GPU or the workload
  gpuside13)
    for spec in heldout11/h64-phi3-mini-attn-s2048-b4:4x1 heldout9/h53-mistral-7b-attn-r32-s2048-b4:4x1; do
      user run25-gpuside.jsonl bench/jobs/${spec%%:*}.yaml ${spec##*:} --updates 5 --op-table 1 \
        --op-shapes
    done ;;
  # gctwins (2026-12-07, twenty-fifth session): the recompute pass at GPU-bound splits. The
  # held-out GPU-bound splits lean by checkpointing (signed median over both Hoppers: with it,
  # attention-only LoRA +9.3 % and full fine-tunes +6.5 %; without it, LoRA -6.3 %), so each
  # workload runs with checkpointing and then its no-checkpointing twin (bench/jobs/gctwins/)
  # in their own processes: the difference is the recompute's time, against the model's.
  # Llama-3.1-8B's twin (81 GiB predicted) only where the card holds it.
  gctwins)
    G=bench/jobs/gctwins
    pairs=(heldout9/h53-mistral-7b-attn-r32-s2048-b4:4x1 heldout8/h43-llama3.2-3b-attn-r8-s1024-b8:8x1
           heldout7/h41-qwen2.5-7b-attn-s1024-b8:8x1 heldout9/h50-smollm2-1.7b-full-s512-b16:16x1)
    mib=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits | head -1)
    [ "${mib:-0}" -gt 100000 ] && pairs+=(heldout12/h70-llama3.1-8b-s1024-b8:8x1)
    for spec in "${pairs[@]}"; do
      job=${spec%%:*} split=${spec##*:} name=$(basename "$job")
      user run25-gctwins.jsonl bench/jobs/$job.yaml $split --updates 10
      user run25-gctwins.jsonl $G/twin-${name%%-*}-nogc-${name#*-}.yaml $split --updates 10
    done ;;
  # gctwinops (2026-12-07, twenty-sixth session): the recompute's over-charge (25-41 % after
  # backward_bytes_per_forward, gctwins) split between GEMM and memory-bound work: op tables
  # (device time by op and input shape) of a checkpointed split and its no-checkpointing twin,
  # Mistral-7B attention-only LoRA at 4x1 and SmolLM2-1.7B full at 16x1
  gctwinops)
    G=bench/jobs/gctwins
    for job in heldout9/h53-mistral-7b-attn-r32-s2048-b4:4x1 heldout9/h50-smollm2-1.7b-full-s512-b16:16x1; do
      spec=${job%%:*} split=${job##*:} name=$(basename "${job%%:*}")
      for f in bench/jobs/$spec.yaml $G/twin-${name%%-*}-nogc-${name#*-}.yaml; do
        user run26-gctwinops.jsonl "$f" "$split" --updates 5 --op-table 1 --op-shapes
      done
    done ;;
  # vocab26 (planned in the twenty-sixth session): the held-out Qwen2.5-0.5B full fine-tune at
  # s2048 ran 24 % over the model at its GPU-bound 8x1 on a lent H100 (14 % with the probe)
  # where the same model at s512 (h07, 16x1) is within a few per cent: op tables, with input
  # shapes, of both on one GPU, to see what takes the time (the loss over its 152k-entry
  # vocabulary, not in the model; per-update work of many small tensors; or host overlap)
  vocab26)
    for spec in heldout13/h76-qwen2.5-0.5b-full-s2048-b8:8x1 heldout/h07-qwen2.5-0.5b-full-s512-b16:16x1; do
      user run27-vocab.jsonl bench/jobs/${spec%%:*}.yaml ${spec##*:} --updates 5 --op-table 1 \
        --op-shapes
    done ;;
  # vocab27b (twenty-seventh session, run on the same machine right after vocab26): the same op
  # tables of the Llama-3.2-1B full fine-tune at s2048 (h78, 8x1: GPU-bound and within 3 % of
  # the model, the same sequence and a 128k vocabulary) and of h76's host-bound 2x4
  vocab27b)
    for spec in heldout14/h78-llama3.2-1b-full-s2048-b8:8x1 heldout13/h76-qwen2.5-0.5b-full-s2048-b8:2x4; do
      user run27-vocab-b.jsonl bench/jobs/${spec%%:*}.yaml ${spec##*:} --updates 5 --op-table 1 \
        --op-shapes
    done ;;
  # dropouttwins1|dropouttwins2 (planned in the twenty-seventh session): LoRA dropout's host
  # cost per dropout kernel (TimeModelParams.dropout_host_launches, 3.0 from two single pairs
  # of 2026-12-03 whose host moved 22 % within the hour). Held-out host-bound LoRA runs with
  # dropout are -0.9 % signed against -10.3 % for dropout 0 and -10.6 % for full fine-tunes:
  # five host-bound twins, dropout 0 and 0.05, back to back in their own processes, d0 first in
  # call 1 and d005 first in call 2; results in run28/
  dropouttwins1|dropouttwins2)
    D=bench/jobs/dropout
    # call 2 writes its own file (run28-dropout-twins2.jsonl sorts after call 1's)
    if [ "$1" = dropouttwins1 ]; then order=(d0 d005); out=run28-dropout-twins.jsonl
    else order=(d005 d0); out=run28-dropout-twins2.jsonl; fi
    for spec in qwen3-0.6b-lora-@-s512-b16:4x4 smollm2-360m-lora-@-s512-b16:4x4 \
                qwen2.5-0.5b-lora-@-s512-b16:4x4 qwen3-1.7b-lora-@-s1024-b8-nogc:2x4 \
                smollm2-135m-lora-@-s1024-b32:8x4; do
      job=${spec%%:*}
      for d in "${order[@]}"; do
        user $out $D/${job/@/$d}.yaml ${spec##*:} --updates 10
      done
    done ;;
  # smolcensus (planned in the thirtieth session, 2026-12-08): what is live at the peak of the
  # held-out peaks the memory model is lowest on, the small checkpointed SmolLM2 splits
  # (0.10-0.17 GiB short on both cards; run 9's census put the SmolLM2-360M LoRA 4x4 gap in
  # the allocator's reserve above the allocated peak, 35 % of the update's live bytes), beside
  # a Qwen3-0.6B QLoRA split the model is right on (bench/MODEL.md, "Memory slack belongs to
  # the stack"); results in run30/
  smolcensus)
    for spec in heldout8/h44-smollm2-360m-qlora-s1024-b16:4x4 heldout8/h44-smollm2-360m-qlora-s1024-b16:16x1 \
                heldout10/h54-qwen3-0.6b-qlora-s1024-b16:4x4 dropout/smollm2-135m-lora-d005-s1024-b32:8x4; do
      user run30-smolcensus.jsonl bench/jobs/${spec%%:*}.yaml ${spec##*:} --updates 1 --memory-peak
    done ;;
  # fp16twins1|fp16twins2 (2026-12-06, twentieth session): fp16 against bf16, the model's
  # "fp16 is taken as bf16" (GradScaler's kernels and syncs per update not counted): the
  # published T4/L4 workload at its three splits and a host-bound SmolLM2-360M at 4x4, each
  # pair back to back in its own processes, bf16 first in call 1 and fp16 first in call 2,
  # then one traced update pair (1x4 in call 1, 4x1 in call 2); results in run21/fp16/
  fp16twins1|fp16twins2)
    F=bench/jobs/fp16
    if [ "$1" = fp16twins1 ]; then order=(bf16 fp16); traced=1x4
    else order=(fp16 bf16); traced=4x1; fi
    for spec in qwen3-1.7b-lora-d0-@-s512-b4:1x4 qwen3-1.7b-lora-d0-@-s512-b4:2x2 \
                qwen3-1.7b-lora-d0-@-s512-b4:4x1 smollm2-360m-lora-d0-@-s512-b16:4x4; do
      job=${spec%%:*}
      for p in "${order[@]}"; do
        user fp16-twins.jsonl $F/${job/@/$p}.yaml ${spec##*:} --updates 10
      done
    done
    for p in "${order[@]}"; do
      user fp16-trace.jsonl $F/qwen3-1.7b-lora-d0-$p-s512-b4.yaml $traced --updates 5 --trace 2
    done ;;
  *) echo "usage: calibrate_rounds_h200.sh h07|h02|h01|h04|trace|fullvslora|h07cal|h01nvml|gpubound|gpuops|fullft1|fullft2|fused|fullops|heldout2|repeat3|memory|census|census2|qloratrace|qloratrace2|qloratwins1|qloratwins2|sustain|saves|saves2|saves3|spread|probe|probe2|e2e|gpuside|crossgpu|crossgpu1|crossgpu2|crossops|crossops-tables|gpuside9|gpuside13|gctwins|gctwinops|vocab26|vocab27b|dropouttwins1|dropouttwins2|fp16twins1|fp16twins2|smolcensus" >&2
     exit 2 ;;
esac
