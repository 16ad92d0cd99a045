#!/usr/bin/env bash
# One bounded libFuzzer run: run.sh BINARY SEEDS OUT FUZZTIME [libFuzzer flags...]
# FUZZTIME as make fuzz takes it (20s, 5m, 1h, or seconds). The corpus the run grows goes to
# OUT/corpus (the committed SEEDS are only read), a crash file to OUT/crashes/; the log is
# OUT/run.log and the numbers OUT/stats.json. A crash (sanitizer report or broken contract) exits
# 1 naming the reproducer and how to replay it.
set -euo pipefail
bin=$1 seeds=$2 out=$3 t=$4
shift 4
case $t in
  *h) secs=$(( ${t%h} * 3600 )) ;;
  *m) secs=$(( ${t%m} * 60 )) ;;
  *s) secs=${t%s} ;;
  *) secs=$t ;;
esac
[[ $secs =~ ^[0-9]+$ ]] || { echo "run.sh: FUZZTIME $t: want 20s, 5m, 1h or seconds" >&2; exit 2; }
name=$(basename "$bin")
mkdir -p "$out/corpus" "$out/crashes"
log=$out/run.log
set +e
"$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$out/crashes/" "$@" "$out/corpus" "$seeds" > "$log" 2>&1
rc=$?
set -e
if [ $rc -ne 0 ]; then
  repro=$(grep -o 'Test unit written to .*' "$log" | tail -1 | sed 's/Test unit written to //')
  grep -m1 -E 'contract violated|ERROR: (AddressSanitizer|libFuzzer)|runtime error' "$log" >&2 || tail -20 "$log" >&2
  echo "fuzz $name: FAILED after $(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | grep -o '[0-9]*$' || echo '?') runs: reproducer ${repro:-none written} (log $log; replay: $bin $repro)" >&2
  exit 1
fi
# "#N DONE cov: C ft: F corp: K/Sb ... exec/s: E" and the final stats
done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -1)
runs=$(sed -E 's/^#([0-9]+).*/\1/' <<<"$done_line")
cov=$(grep -oE 'cov: [0-9]+' <<<"$done_line" | grep -oE '[0-9]+')
ft=$(grep -oE 'ft: [0-9]+' <<<"$done_line" | grep -oE '[0-9]+')
corp=$(grep -oE 'corp: [0-9]+' <<<"$done_line" | grep -oE '[0-9]+')
eps=$(grep -oE 'stat::average_exec_per_sec: *[0-9]+' "$log" | grep -oE '[0-9]+$')
printf '{"target": "%s", "seconds": %s, "runs": %s, "execs_per_sec": %s, "edges": %s, "features": %s, "corpus": %s, "seeds": %s, "crashes": 0}\n' \
  "$name" "$secs" "$runs" "$eps" "$cov" "$ft" "$corp" "$(ls "$seeds" | wc -l)" | tee "$out/stats.json"
