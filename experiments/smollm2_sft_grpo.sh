#!/usr/bin/env bash
# SmolLM2-135M-Instruct (bundled) on CPU: untuned -> SFT on synthesized, filtered expert
# trajectories -> GRPO on top, each evaluated on the same held-out instances.
#
#   bash experiments/smollm2_sft_grpo.sh [WORKDIR]      (default WORKDIR: experiments/out)
#
# Every step is a `bootcamp` command; re-running resumes finished evaluations and skips
# finished training stages. Sized for ~2-3 hours on 2 shared CPU cores; scale with the
# variables below. Results: experiments/RESULTS.md (the table is printed at the end).
set -euo pipefail

W=${1:-experiments/out}
BOOTCAMP=${BOOTCAMP:-bootcamp}
TASKS=${TASKS:-robot_reach,thermal}       # text tasks with partial credit
N_HELD_OUT=${N_HELD_OUT:-5}               # held-out instances per task (seeds 0..N-1, easy)
N_SYNTH=${N_SYNTH:-24}                    # synthesized training instances (expert-solved)
SFT_STEPS=${SFT_STEPS:-24}
GRPO_STEPS=${GRPO_STEPS:-12}
N_RL=${N_RL:-6}                           # GRPO training instances per task (seeds 100000+)
GROUP=${GROUP:-4}                         # GRPO group size
MAX_TURNS=${MAX_TURNS:-4}                 # turn budget at eval and in GRPO episodes
MAX_TOKENS=${MAX_TOKENS:-128}             # tokens per assistant turn
EVAL=(--agent local --instances "$W/held_out.jsonl" --max-turns "$MAX_TURNS"
      --max-tokens "$MAX_TOKENS" --temperature 0 --concurrency 1 --quiet)

mkdir -p "$W"
log() { echo "[$(date +%H:%M:%S)] $*"; }
start=$(date +%s)
log "hardware: $(nproc) CPU cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), load $(cut -d' ' -f1-3 /proc/loadavg)"

log "held-out instances: $TASKS x $N_HELD_OUT (easy, seeds 0..$((N_HELD_OUT - 1)))"
rm -f "$W/held_out.jsonl"
for t in ${TASKS//,/ }; do
  $BOOTCAMP generate "$t" -n "$N_HELD_OUT" --difficulty easy --seed 0 -o "$W/held_out.$t.jsonl"
  cat "$W/held_out.$t.jsonl" >> "$W/held_out.jsonl"
done

log "1/3 baseline: untuned SmolLM2-135M"
$BOOTCAMP eval "${EVAL[@]}" --model smollm2 --out "$W/runs/baseline"

log "SFT data: synthesize instances around the baseline's failures, solve them with the expert, filter, export"
if $BOOTCAMP synth "$W/runs/baseline" -o "$W/synth.jsonl" -n "$N_SYNTH" --seed 0 \
     --exclude "$W/held_out.jsonl" && [ -s "$W/synth.jsonl" ]; then
  $BOOTCAMP eval --agent expert --instances "$W/synth.jsonl" --out "$W/runs/expert_synth" --quiet
else
  log "synth unavailable: falling back to expert runs on fresh seeds (1000+)"
  $BOOTCAMP eval --agent expert --tasks "$TASKS" -n $((N_SYNTH / 2)) --difficulty easy --seed 1000 \
    --out "$W/runs/expert_synth" --quiet
fi
rm -rf "$W/runs/expert_filtered"
$BOOTCAMP filter "$W/runs/expert_synth" -o "$W/runs/expert_filtered" --min-reward 0.9 \
  --keep-max-turns "$MAX_TURNS"
$BOOTCAMP export sft "$W/runs/expert_filtered" -o "$W/sft.jsonl" --tool-format text

log "SFT: $SFT_STEPS steps"
if [ ! -f "$W/models/sft/final/config.json" ]; then
  $BOOTCAMP train sft --data "$W/sft.jsonl" --out "$W/models/sft" --max-steps "$SFT_STEPS" \
    --lr 1e-4 --max-length 2048
fi

log "2/3 after SFT"
$BOOTCAMP eval "${EVAL[@]}" --model "$W/models/sft/final" --out "$W/runs/sft"

log "GRPO on top of SFT: $GRPO_STEPS steps, groups of $GROUP, fresh training instances"
if [ ! -f "$W/models/grpo/final/config.json" ]; then
  $BOOTCAMP train grpo --tasks "$TASKS" --model "$W/models/sft/final" --out "$W/models/grpo" \
    --max-steps "$GRPO_STEPS" --num-generations "$GROUP" --n-instances "$N_RL" --difficulty easy \
    --max-turns "$MAX_TURNS" --max-new-tokens "$MAX_TOKENS" --max-completion-length 1800 \
    --temperature 1.0 --lr 1e-5
fi

log "3/3 after GRPO"
$BOOTCAMP eval "${EVAL[@]}" --model "$W/models/grpo/final" --out "$W/runs/grpo"

log "comparisons (paired by instance)"
$BOOTCAMP compare "$W/runs/baseline" "$W/runs/sft" || true
$BOOTCAMP compare "$W/runs/sft" "$W/runs/grpo" || true
for stage in baseline sft grpo; do
  $BOOTCAMP report "$W/runs/$stage" --json > "$W/report_$stage.json"
done
$BOOTCAMP report "$W/models/grpo/rollouts" --json > "$W/report_grpo_rollouts.json" || true
python experiments/results_table.py "$W"
log "done in $(( ($(date +%s) - start) / 60 )) min (load $(cut -d' ' -f1-3 /proc/loadavg))"
