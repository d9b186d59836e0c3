#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# One shard of a sweep per Slurm array task; the last step joins them.
#
#   sbatch --array=0-15 examples/cluster/slurm-sweep.sh examples/sweep.toml
#   # when all tasks are done:
#   iosched sweep merge --out sweep-all.csv sweep-shards/*
#
# Each task writes its own directory, so a task that Slurm re-queues resumes:
# runs whose result files exist are skipped. The table is the one a single
# `iosched sweep` of the grid gives, byte for byte, whatever the array size.
#SBATCH --job-name=iosched-sweep
#SBATCH --cpus-per-task=1
#SBATCH --output=sweep-shards/%A_%a.log
set -euo pipefail
grid=${1:?usage: slurm-sweep.sh GRID.toml [OUT-ROOT]}
root=${2:-sweep-shards}
: "${SLURM_ARRAY_TASK_ID:?run it as an array job (sbatch --array=0-N)}"
# Slurm sets the task count for --array=0-N; an array with a step needs it by hand.
count=${SLURM_ARRAY_TASK_COUNT:?SLURM_ARRAY_TASK_COUNT is not set}
mkdir -p "$root"
exec "${IOSCHED:-iosched}" sweep "$grid" \
    --out "$root/$SLURM_ARRAY_TASK_ID" \
    --shard "$SLURM_ARRAY_TASK_ID/$count" \
    --jobs "${SLURM_CPUS_PER_TASK:-1}"
