#!/usr/bin/env bash
# Runs the fuzz targets named as arguments, each for FUZZ_SECONDS, at most
# FUZZ_JOBS at a time (one libFuzzer process per target, so each target gets
# the same fuzzing time as when they ran one after another). Called by
# `make fuzz` from fuzz/ with cargo-fuzz on PATH and the build environment set.
# A target that crashes or fails: the tail of its log on stderr, and exit 1
# once every started target has finished (its input is in FUZZ_WORK/artifacts).
set -uo pipefail
: "${FUZZ_SECONDS:?}" "${FUZZ_WORK:?}" "${FUZZ_JOBS:=2}"
run_one() {
  local t=$1
  mkdir -p "$FUZZ_WORK/corpus/$t" "$FUZZ_WORK/artifacts/$t"
  echo "fuzz: $t for $FUZZ_SECONDS s" >&2
  if ! cargo fuzz run -s none "$t" "$FUZZ_WORK/corpus/$t" "seeds/$t" -- \
      -max_total_time="$FUZZ_SECONDS" -artifact_prefix="$FUZZ_WORK/artifacts/$t/" -print_final_stats=1 \
      2> "$FUZZ_WORK/$t.log"; then
    echo "fuzz: $t FAILED (log $FUZZ_WORK/$t.log):" >&2
    tail -n 40 "$FUZZ_WORK/$t.log" >&2
    return 1
  fi
  grep -E '^stat::(number_of_executed_units|new_units_added)' "$FUZZ_WORK/$t.log" | sed "s/^/fuzz: $t /" >&2
}
status=0
running=()
for t in "$@"; do
  while [ "${#running[@]}" -ge "$FUZZ_JOBS" ]; do
    wait -n || status=1
    still=()
    for p in "${running[@]}"; do kill -0 "$p" 2>/dev/null && still+=("$p"); done
    running=("${still[@]}")
  done
  run_one "$t" &
  running+=("$!")
done
for p in "${running[@]}"; do wait "$p" || status=1; done
exit "$status"
