#!/usr/bin/env bash
# Held-out H200 workloads of issue 19, run on the lent GPU (see bench/RESULTS.md, "Held-out
# workloads, own process"). Group A: h01-h04; group B: h05-h07 and a calibration of one other
# workload (passed later as --profile); C and D: six more workloads and the same calibration,
# 2026-12-04; E and F: six more and the calibration, the same day; G and H: six more and the
# calibration, the eighth session; I, J and K: six more, the host-bound split of each in three
# processes, and the calibration, the ninth session (2026-12-05); L and M: six more, each user
# run after a 3-s host probe, idle probes at each call's start and end, the calibration and
# `gacost probe --profile` on it, the fourteenth session (2026-12-06); N and O: six more,
# the same way, the fifteenth session (2026-12-06); P and Q: six more, the same way, the
# nineteenth session (2026-12-06); R, S, T and T2: six more, the same way, and four host-bound
# splits in two more processes, the twenty-first session (2026-12-07); U, V, W and W2: six more,
# the same way, predicted in the twenty-second session and run in the twenty-third (2026-12-07,
# a lent H100); X, Y, Z and Z2: six more, the same way, the twenty-fourth session
# (2026-12-07, a lent H100; Z and Z2 not run: no device time left); AA, AB, AC and AC2: six
# more, the same way, predicted in the twenty-fifth session (2026-12-07), AB run then, AA, AA2
# (h76's 8x1, after AA ran past its call's limit), AC and AC2 on another start in the
# twenty-sixth (bench/results/heldout-2026-12-07e/); AD, AE, AF and AF2: six more, the same
# way, predicted in the twenty-sixth session and run in the twenty-seventh (2026-12-07,
# bench/results/heldout-2026-12-07f/); AG, AH, AI and AI2: six more, the same way, predicted
# in the twenty-seventh session (2026-12-07). Every split is the
# user's plain TRL script in its own process (bench/user_script.py); results go to $OUT as
# they come.
#   bash bench/heldout_h200.sh A    (on the device, after installing .wheels and the project)
set -uo pipefail
H=bench/jobs/heldout
N=bench/jobs/heldout3
Q=bench/jobs/heldout4
V=bench/jobs/heldout5
W=bench/jobs/heldout6
X=bench/jobs/heldout7
Y=bench/jobs/heldout8
Z=bench/jobs/heldout9
T=bench/jobs/heldout10
E=bench/jobs/heldout11
F=bench/jobs/heldout12
G=bench/jobs/heldout13
I=bench/jobs/heldout14
K=bench/jobs/heldout15
COMMON=(--user-only --warmup 3 --updates 10)
# install: the wheels and the project into /tmp/site (a fresh machine each call)
install() {
  [ -d /tmp/site/trl ] || python3 -m pip install -q --no-index --no-deps --no-compile \
    --no-cache-dir --target /tmp/site .wheels/*.whl
  python3 -m pip install -q --no-index --no-deps --no-build-isolation --upgrade \
    --target /tmp/site .
  export PYTHONPATH=/tmp/site
  { nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
    lscpu | grep -E "Model name|^CPU\(s\)|Hypervisor"; } > "$OUT/machine-$1.txt" 2>&1
}
# probe_idle NAME: `gacost probe` for 10 s with nothing else running, to $OUT/probe-NAME.txt
probe_idle() { python3 -m gacost probe --seconds 10 --quiet > "$OUT/probe-$1.txt" 2>&1
               cat "$OUT/probe-$1.txt"; }
# other_workload: `gacost calibrate` of the one other workload of every session, passed later
# as --profile (bench/heldout_user_runs.py)
other_workload() { python3 -m gacost calibrate --job bench/jobs/qwen3-1.7b-lora-bf16-dropout.yaml \
                     --splits 1x4,2x2,4x1 --out "$OUT/other-workload-profile.json" --force; }
# probed_session NAME OUT [--other] JOB:SPLITS...: on a fresh machine, idle probes at the start
# and the end, each split the user's script in its own process after a 3-s probe, results to
# $OUT/OUT; --other: the other workload's calibration first
probed_session() {
  local name=$1 out=$2; shift 2
  install "$name"; probe_idle "$name-start"
  if [ "${1:-}" = --other ]; then shift; other_workload; fi
  python3 bench/calibrate_vs_user.py "${COMMON[@]}" --probe-before 3 --out "$OUT/$out" "$@"
  probe_idle "$name-end"
}
case "$1" in
  A) python3 bench/calibrate_vs_user.py "${COMMON[@]}" --out "$OUT/heldout-A.json" \
       $H/h01-smollm2-360m-s1024-b16.yaml:4x4,8x2,16x1 \
       $H/h02-qwen2.5-1.5b-r32-s512-b8.yaml:2x4,4x2,8x1 \
       $H/h03-llama3.2-3b-s2048-b4-d01.yaml:1x4,2x2,4x1 \
       $H/h04-mistral-7b-s1024-b8.yaml:2x4,4x2,8x1 ;;
  B) other_workload
     python3 bench/calibrate_vs_user.py "${COMMON[@]}" --out "$OUT/heldout-B.json" \
       $H/h05-qwen3-4b-qlora-s1024-b8.yaml:2x4,4x2,8x1 \
       $H/h06-phi3-mini-attn-nogc-s1024-b8.yaml:1x8,2x4,8x1 \
       $H/h07-qwen2.5-0.5b-full-s512-b16.yaml:2x8,4x4,16x1 ;;
  # the sixth session (2026-12-04): six new workloads, predicted before they ran
  # (bench/heldout_user_runs.py --predict; bench/results/heldout-2026-12-04/), two splits each
  C) other_workload
     python3 bench/calibrate_vs_user.py "${COMMON[@]}" --out "$OUT/heldout-C.json" \
       $N/h15-smollm2-135m-attn-s2048-b32.yaml:8x4,32x1 \
       $N/h16-qwen2.5-1.5b-qlora-r64-s2048-b4.yaml:1x4,4x1 ;;
  D) python3 bench/calibrate_vs_user.py "${COMMON[@]}" --out "$OUT/heldout-D.json" \
       $N/h12-llama3.1-8b-s512-b16.yaml:4x4,16x1 \
       $N/h13-gemma2-2b-lora-s1024-b8.yaml:2x4,8x1 \
       $N/h14-qwen3-1.7b-full-nogc-s1024-b8.yaml:2x4,8x1 \
       $N/h17-mistral-7b-qv-nogc-s512-b8.yaml:2x4,8x1 ;;
  # the seventh session (2026-12-04): six more workloads, predicted before they ran with the
  # memory terms of that session (bench/results/heldout-2026-12-04b/), two splits each
  E) other_workload
     python3 bench/calibrate_vs_user.py "${COMMON[@]}" --out "$OUT/heldout-E.json" \
       $Q/h18-llama3.2-1b-full-s1024-b16.yaml:4x4,16x1 \
       $Q/h19-smollm2-360m-full-nogc-s512-b16.yaml:2x8,8x2 \
       $Q/h23-qwen3-0.6b-attn-s2048-b16.yaml:4x4,16x1 ;;
  F) python3 bench/calibrate_vs_user.py "${COMMON[@]}" --out "$OUT/heldout-F.json" \
       $Q/h20-qwen3-4b-nogc-s512-b8.yaml:2x4,8x1 \
       $Q/h21-llama3.2-3b-qlora-s1024-b8.yaml:2x4,8x1 \
       $Q/h22-qwen3-1.7b-qlora-d0-s2048-b4.yaml:1x4,4x1 ;;
  # the eighth session (2026-12-04): six more workloads, three of them QLoRA, predicted before
  # they ran with that session's QLoRA terms (bench/results/heldout-2026-12-04c/)
  G) other_workload
     python3 bench/calibrate_vs_user.py "${COMMON[@]}" --out "$OUT/heldout-G.json" \
       $V/h25-llama3.2-1b-qlora-s2048-b8.yaml:2x4,8x1 \
       $V/h26-qwen3-0.6b-full-s1024-b16.yaml:4x4,16x1 \
       $V/h29-smollm2-1.7b-qv-nogc-s512-b16.yaml:4x4,16x1 ;;
  H) python3 bench/calibrate_vs_user.py "${COMMON[@]}" --out "$OUT/heldout-H.json" \
       $V/h27-gemma2-2b-qlora-s1024-b8.yaml:2x4,8x1 \
       $V/h28-mistral-7b-s2048-b4.yaml:1x4,4x1 \
       $V/h24-qwen2.5-7b-qlora-s1024-b8.yaml:2x4,8x1 ;;
  # the ninth session (2026-12-05): six more, predicted before they ran
  # (bench/results/heldout-2026-12-05/); every split once, then the host-bound one of each
  # workload twice more after the group's first pass (the model predicts the expected run;
  # one process is one draw of the host: bench/MODEL.md, "One run is one draw")
  I) other_workload
     python3 bench/calibrate_vs_user.py "${COMMON[@]}" --out "$OUT/heldout-I.json" \
       $W/h30-qwen2.5-0.5b-s1024-b16.yaml:4x4,16x1 \
       $W/h33-smollm2-135m-full-s1024-b32.yaml:8x4,32x1
     python3 bench/calibrate_vs_user.py "${COMMON[@]}" --rounds 2 \
       --out "$OUT/heldout-I-repeats.json" \
       $W/h30-qwen2.5-0.5b-s1024-b16.yaml:4x4 $W/h33-smollm2-135m-full-s1024-b32.yaml:8x4 ;;
  J) python3 bench/calibrate_vs_user.py "${COMMON[@]}" --out "$OUT/heldout-J.json" \
       $W/h31-llama3.2-3b-nogc-s512-b8.yaml:2x4,8x1 \
       $W/h34-gemma2-2b-attn-r8-s2048-b4.yaml:1x4,4x1
     python3 bench/calibrate_vs_user.py "${COMMON[@]}" --rounds 2 \
       --out "$OUT/heldout-J-repeats.json" \
       $W/h31-llama3.2-3b-nogc-s512-b8.yaml:2x4 $W/h34-gemma2-2b-attn-r8-s2048-b4.yaml:1x4 ;;
  K) python3 bench/calibrate_vs_user.py "${COMMON[@]}" --out "$OUT/heldout-K.json" \
       $W/h32-qwen3-4b-qlora-s512-b8.yaml:4x2,8x1 \
       $W/h35-qwen3-1.7b-r64-s1024-b8.yaml:2x4,8x1
     python3 bench/calibrate_vs_user.py "${COMMON[@]}" --rounds 2 \
       --out "$OUT/heldout-K-repeats.json" \
       $W/h32-qwen3-4b-qlora-s512-b8.yaml:4x2 $W/h35-qwen3-1.7b-r64-s1024-b8.yaml:2x4 ;;
  # the fourteenth session (2026-12-06): six more, predicted before they ran
  # (bench/results/heldout-2026-12-06/); a host probe before every user run (the probe a
  # user takes with `gacost probe` before training: does it tell the run's host?), and
  # `gacost calibrate` then `gacost probe --profile` end to end on the GPU
  L) install L; probe_idle L-start
     other_workload
     python3 -m gacost probe --seconds 10 --quiet --profile "$OUT/other-workload-profile.json" \
       > "$OUT/probe-L-profile.txt" 2>&1; cat "$OUT/probe-L-profile.txt"
     python3 bench/calibrate_vs_user.py "${COMMON[@]}" --probe-before 3 \
       --out "$OUT/heldout-L.json" \
       $X/h36-qwen3-0.6b-s512-b16.yaml:4x4,16x1 \
       $X/h37-llama3.2-1b-r32-nogc-s1024-b16.yaml:4x4,16x1 \
       $X/h38-qwen2.5-1.5b-full-s512-b16.yaml:4x4,16x1
     probe_idle L-end ;;
  M) install M; probe_idle M-start
     python3 bench/calibrate_vs_user.py "${COMMON[@]}" --probe-before 3 \
       --out "$OUT/heldout-M.json" \
       $X/h39-smollm2-1.7b-qlora-s1024-b8.yaml:2x4,8x1 \
       $X/h40-phi3-mini-s1024-b8.yaml:2x4,8x1 \
       $X/h41-qwen2.5-7b-attn-s1024-b8.yaml:2x4,8x1
     python3 bench/calibrate_vs_user.py "${COMMON[@]}" --probe-before 3 \
       --out "$OUT/heldout-M-repeats.json" \
       $X/h36-qwen3-0.6b-s512-b16.yaml:4x4 $X/h38-qwen2.5-1.5b-full-s512-b16.yaml:4x4 \
       $X/h39-smollm2-1.7b-qlora-s1024-b8.yaml:2x4 $X/h40-phi3-mini-s1024-b8.yaml:2x4
     probe_idle M-end ;;
  # the fifteenth session (2026-12-06): six more, predicted before they ran by the model with
  # the LoRA path by input and output width (bench/results/heldout-2026-12-06b/)
  N) probed_session N "heldout-N.json" --other \
       $Y/h44-smollm2-360m-qlora-s1024-b16.yaml:4x4,16x1 \
       $Y/h45-gemma2-2b-nogc-s512-b16.yaml:4x4,16x1 \
       $Y/h47-qwen3-1.7b-full-s512-b16.yaml:4x4,16x1 ;;
  O) probed_session O "heldout-O.json" \
       $Y/h42-qwen3-8b-s512-b8.yaml:2x4,8x1 \
       $Y/h43-llama3.2-3b-attn-r8-s1024-b8.yaml:2x4,8x1 \
       $Y/h46-mistral-7b-qlora-s1024-b8.yaml:2x4,8x1 ;;
  # the nineteenth session (2026-12-06): six more, predicted before they ran by the model with
  # the H200's stream rate from gpu-stream and the GEMM efficiency shared within an
  # architecture (bench/results/heldout-2026-12-06c/)
  P) probed_session P "heldout-P.json" --other \
       $Z/h48-qwen3-4b-s2048-b4.yaml:1x4,4x1 \
       $Z/h50-smollm2-1.7b-full-s512-b16.yaml:4x4,16x1 \
       $Z/h52-qwen2.5-1.5b-d01-nogc-s1024-b16.yaml:4x4,16x1 ;;
  Q) probed_session Q "heldout-Q.json" \
       $Z/h49-llama3.1-8b-qlora-s1024-b8.yaml:2x4,8x1 \
       $Z/h51-phi3-mini-qlora-s1024-b8.yaml:2x4,8x1 \
       $Z/h53-mistral-7b-attn-r32-s2048-b4.yaml:1x4,4x1 ;;
  # the twenty-first session (2026-12-07): six more, predicted before they ran by the shipped
  # model of that day (bench/results/heldout-2026-12-07/); T, then T2, run the host-bound split
  # of the four host-bound workloads in one more process each after the first pass (one
  # process is one draw of the host)
  R) probed_session R "heldout-R.json" --other \
       $T/h54-qwen3-0.6b-qlora-s1024-b16.yaml:4x4,16x1 \
       $T/h57-smollm2-135m-r64-nogc-s512-b32.yaml:8x4,32x1 \
       $T/h58-llama3.2-3b-full-s512-b16.yaml:4x4,16x1 ;;
  S) probed_session S "heldout-S.json" \
       $T/h55-llama3.2-1b-d005-s2048-b8.yaml:2x4,8x1 \
       $T/h56-llama3.1-8b-s2048-b4.yaml:1x4,4x1 \
       $T/h59-qwen3-8b-qlora-s2048-b4.yaml:1x4,4x1 ;;
  T|T2) probed_session "$1" "heldout-$1-repeats.json" \
       $T/h54-qwen3-0.6b-qlora-s1024-b16.yaml:4x4 $T/h57-smollm2-135m-r64-nogc-s512-b32.yaml:8x4 \
       $T/h55-llama3.2-1b-d005-s2048-b8.yaml:2x4 $T/h59-qwen3-8b-qlora-s2048-b4.yaml:1x4 ;;
  # six more, predicted in the twenty-second session (2026-12-07) by the shipped model of that
  # day (bench/results/heldout-2026-12-07b/), when no GPU came; W, then W2, as T and T2
  U) probed_session U "heldout-U.json" --other \
       $E/h60-qwen2.5-0.5b-qlora-s2048-b8.yaml:2x4,8x1 \
       $E/h63-smollm2-360m-full-nogc-s1024-b16.yaml:4x4,16x1 \
       $E/h64-phi3-mini-attn-s2048-b4.yaml:1x4,4x1 ;;
  V) probed_session V "heldout-V.json" \
       $E/h61-gemma2-2b-full-s512-b16.yaml:4x4,16x1 \
       $E/h62-qwen3-4b-d01-nogc-s1024-b4.yaml:1x4,4x1 \
       $E/h65-qwen2.5-7b-s512-b16.yaml:4x4,16x1 ;;
  W|W2) probed_session "$1" "heldout-$1-repeats.json" \
       $E/h60-qwen2.5-0.5b-qlora-s2048-b8.yaml:2x4 $E/h63-smollm2-360m-full-nogc-s1024-b16.yaml:4x4 \
       $E/h62-qwen3-4b-d01-nogc-s1024-b4.yaml:1x4 $E/h64-phi3-mini-attn-s2048-b4.yaml:1x4 ;;
  # the twenty-fourth session (2026-12-07): six more (bench/jobs/heldout12/), predicted
  # before they ran (bench/results/heldout-2026-12-07c/predicted-before*.json)
  X) probed_session X "heldout-X.json" --other \
       $F/h66-llama3.2-1b-attn-r8-s512-b16.yaml:2x8,16x1 \
       $F/h68-smollm2-1.7b-full-s1024-b8.yaml:2x4,8x1 \
       $F/h70-llama3.1-8b-s1024-b8.yaml:1x8,8x1 ;;
  Y) probed_session Y "heldout-Y.json" \
       $F/h67-qwen3-1.7b-qlora-s512-b8.yaml:1x8,8x1 \
       $F/h69-qwen3-0.6b-nogc-s1024-b16.yaml:2x8,16x1 \
       $F/h71-qwen2.5-1.5b-attn-nogc-s2048-b8.yaml:1x8,8x1 ;;
  Z|Z2) probed_session "$1" "heldout-$1-repeats.json" \
       $F/h66-llama3.2-1b-attn-r8-s512-b16.yaml:2x8 $F/h68-smollm2-1.7b-full-s1024-b8.yaml:2x4 \
       $F/h69-qwen3-0.6b-nogc-s1024-b16.yaml:2x8 $F/h71-qwen2.5-1.5b-attn-nogc-s2048-b8.yaml:1x8 ;;
  # the twenty-fifth session (2026-12-07): six more (bench/jobs/heldout13/), predicted
  # before they ran (bench/results/heldout-2026-12-07d/predicted-before*.json)
  AA) probed_session AA "heldout-AA.json" --other \
       $G/h72-qwen3-8b-qlora-s512-b16.yaml:2x8,16x1 \
       $G/h75-llama3.2-3b-qv-r32-s2048-b4.yaml:1x4,4x1 \
       $G/h76-qwen2.5-0.5b-full-s2048-b8.yaml:2x4,8x1 ;;
  # AA2: what AA's call did not reach (run on 2026-12-07 by hand with these commands; its end
  # probe was saved as probe-AA-end.txt, AA's own never ran)
  AA2) probed_session AA2 "heldout-AA2.json" $G/h76-qwen2.5-0.5b-full-s2048-b8.yaml:8x1 ;;
  AB) probed_session AB "heldout-AB.json" \
       $G/h73-gemma2-2b-s512-b16.yaml:2x8,16x1 \
       $G/h74-smollm2-360m-d01-s512-b32.yaml:4x8,32x1 \
       $G/h77-phi3-mini-d01-s512-b16.yaml:2x8,16x1 ;;
  AC|AC2) probed_session "$1" "heldout-$1-repeats.json" \
       $G/h73-gemma2-2b-s512-b16.yaml:2x8 $G/h74-smollm2-360m-d01-s512-b32.yaml:4x8 \
       $G/h75-llama3.2-3b-qv-r32-s2048-b4.yaml:1x4 $G/h76-qwen2.5-0.5b-full-s2048-b8.yaml:2x4 ;;
  # the twenty-sixth session (2026-12-07): six more (bench/jobs/heldout14/), predicted
  # before they ran (bench/results/heldout-2026-12-07f/predicted-before*.json); AF, then
  # AF2, run the four host-bound splits in one more process each
  AD) probed_session AD "heldout-AD.json" --other \
       $I/h78-llama3.2-1b-full-s2048-b8.yaml:2x4,8x1 \
       $I/h81-smollm2-1.7b-attn-s1024-b16.yaml:4x4,16x1 \
       $I/h83-gemma2-2b-qv-s2048-b4.yaml:1x4,4x1 ;;
  AE) probed_session AE "heldout-AE.json" \
       $I/h79-qwen3-4b-s1024-b8.yaml:2x4,8x1 \
       $I/h80-mistral-7b-qlora-s2048-b4.yaml:1x4,4x1 \
       $I/h82-qwen2.5-1.5b-full-nogc-s1024-b8.yaml:2x4,8x1 ;;
  AF|AF2) probed_session "$1" "heldout-$1-repeats.json" \
       $I/h78-llama3.2-1b-full-s2048-b8.yaml:2x4 $I/h79-qwen3-4b-s1024-b8.yaml:2x4 \
       $I/h81-smollm2-1.7b-attn-s1024-b16.yaml:4x4 $I/h83-gemma2-2b-qv-s2048-b4.yaml:1x4 ;;
  # the twenty-seventh session (2026-12-07): six more, predicted before they ran
  # (bench/results/heldout-2026-12-07g/predicted-before*.json)
  AG) probed_session AG "heldout-AG.json" --other \
       $K/h84-qwen3-8b-attn-s1024-b8.yaml:2x4,8x1 \
       $K/h87-smollm2-135m-s1024-b32.yaml:8x4,32x1 \
       $K/h89-gemma2-2b-full-s1024-b8.yaml:2x4,8x1 ;;
  AH) probed_session AH "heldout-AH.json" \
       $K/h85-llama3.2-3b-full-s1024-b8.yaml:2x4,8x1 \
       $K/h86-qwen2.5-7b-qlora-s2048-b4.yaml:1x4,4x1 \
       $K/h88-phi3-mini-nogc-s512-b16.yaml:4x4,16x1 ;;
  # AH's second half, on another start (the first start ran out of device time after h86 1x4)
  AH2) probed_session AH2 "heldout-AH2.json" \
       $K/h86-qwen2.5-7b-qlora-s2048-b4.yaml:4x1 \
       $K/h88-phi3-mini-nogc-s512-b16.yaml:4x4,16x1 ;;
  AI|AI2) probed_session "$1" "heldout-$1-repeats.json" \
       $K/h84-qwen3-8b-attn-s1024-b8.yaml:2x4 $K/h86-qwen2.5-7b-qlora-s2048-b4.yaml:1x4 \
       $K/h87-smollm2-135m-s1024-b32.yaml:8x4 $K/h89-gemma2-2b-full-s1024-b8.yaml:2x4 ;;
  *) echo "usage: heldout_h200.sh A|B|...|Z|Z2|AA|AA2|AB|AC|AC2|AD|AE|AF|AF2|AG|AH|AH2|AI|AI2" >&2; exit 2 ;;
esac
