#!/usr/bin/env bash
# The issue-17 comparison: one experiment process at a time, niced, each under a time limit;
# rerun this script to resume (finished (case, mode) units are kept in each run store).
# Usage: experiments/results/run_comparison.sh [SECONDS_PER_EXPERIMENT]  (default 36000)
set -u
cd "$(dirname "$0")"
limit="${1:-36000}"
for name in paper-0.5b-registry paper-0.5b-lexical paper-1.5b-registry paper-0.5b-registry-ablation demo-search; do
  echo "$(date -Is) start $name (limit ${limit}s)" >> comparison.log
  start=$(date +%s)
  timeout "$limit" nice -n 10 callscope experiment "$name.toml" --quiet >> "$name.log" 2>&1
  rc=$?
  echo "$(date -Is) end $name rc=$rc after $(( $(date +%s) - start ))s" >> comparison.log
  [ "$rc" -eq 124 ] && exit 124
done
