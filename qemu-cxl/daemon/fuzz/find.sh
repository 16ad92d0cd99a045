#!/usr/bin/env bash
# Time-to-find of a deliberate bug: find.sh MUTANT_BINARY SEEDS OUT MAXTIME RUNS [flags...]
# Fuzzes the mutant build from the valid requests of SEEDS only (valid-*: not the probes nor the
# committed reproducer, so the bug has to be found, not replayed), RUNS times with -seed=1..RUNS,
# each until the first crash or MAXTIME (20s, 5m or seconds). One JSON line: the seconds and
# executions to the crash per run (null: not found within MAXTIME), and the first line of each report.
set -euo pipefail
bin=$1 seeds=$2 out=$3 t=$4 n=$5
shift 5
case $t in *m) secs=$(( ${t%m} * 60 )) ;; *s) secs=${t%s} ;; *) secs=$t ;; esac
rm -rf "$out" && mkdir -p "$out/seeds"
cp "$seeds"/valid-* "$out/seeds/"
res=()
for s in $(seq 1 "$n"); do
  rm -rf "$out/corpus-$s" && mkdir -p "$out/corpus-$s" "$out/crashes-$s"
  t0=$(date +%s%N)
  set +e
  "$bin" -seed="$s" -max_total_time="$secs" -timeout=10 -print_final_stats=1 -artifact_prefix="$out/crashes-$s/" \
      "$@" "$out/corpus-$s" "$out/seeds" > "$out/run-$s.log" 2>&1
  rc=$?
  set -e
  ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  dt=$(printf '%d.%02d' $((ms / 1000)) $((ms % 1000 / 10)))
  execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$out/run-$s.log" | grep -o '[0-9]*$' || echo null)
  what=$(grep -m1 -oE 'contract violated: .{0,100}|ERROR: AddressSanitizer: [a-z-]+|runtime error: .{0,80}' "$out/run-$s.log" | tr '"\\' "'/" || true)
  if [ $rc -ne 0 ]; then
    res+=("{\"seed\": $s, \"seconds\": $dt, \"execs\": $execs, \"found\": \"$what\"}")
  else
    res+=("{\"seed\": $s, \"seconds\": null, \"execs\": $execs, \"found\": null}")
  fi
done
echo "{\"mutant\": \"$(basename "$bin")\", \"max_seconds\": $secs, \"runs\": [$(IFS=,; echo "${res[*]}")]}"
