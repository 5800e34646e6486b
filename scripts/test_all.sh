#!/usr/bin/env bash
# `make test`: every test, with the stages that do not depend on each other
# overlapped, because a single Rust crate's compilation, the installs and
# the live llama.cpp test each leave a core of this 2-core kind idle.
#
#   1. lint (fmt, clippy)  beside  the installs (models, Python test
#      packages, Memorix, mem0, Chromium); the llama.cpp server's build
#      (llm-server-deps, long only the first time) starts in the background;
#   2. the fuzz targets' build  beside  the tests' build (`cargo test --no-run`;
#      separate target directories, so neither waits for the other's lock);
#   3. the fuzzing (FUZZ_JOBS targets at a time), once lint, both builds and
#      the llama.cpp build are done;
#   4. the live llama.cpp test (two to four minutes, mostly one core), from
#      the fuzzing's last round when that round leaves a core free,  beside
#      every other test.
#
# A background stage's output goes to its log in TEST_LOGS and is shown (its
# tail) when it fails. Called by `make test` with MAKE and CARGO set; exits 1
# when anything failed, after the stages already started have finished.
set -uo pipefail
: "${MAKE:=make}" "${CARGO:=cargo}" "${TEST_LOGS:=$HOME/.cache/memform/test-logs}"
mkdir -p "$TEST_LOGS"
# The one test of the llm_live target (run by its own cargo command below).
LIVE_TEST=record_against_llama_cpp_then_replay_without_it

declare -A pid
start() { # start NAME CMD...: CMD in the background, output to NAME's log
  local name=$1
  shift
  echo "test: $name in the background (log $TEST_LOGS/$name.log)" >&2
  "$@" > "$TEST_LOGS/$name.log" 2>&1 &
  pid[$name]=$!
}
finish() { # finish NAME: wait for it; on failure show its log's tail
  local name=$1
  if wait "${pid[$name]}"; then
    echo "test: $name done" >&2
    return 0
  fi
  echo "test: $name FAILED (log $TEST_LOGS/$name.log):" >&2
  tail -n 60 "$TEST_LOGS/$name.log" >&2
  return 1
}

status=0
start llm-server-deps "$MAKE" --no-print-directory llm-server-deps
start lint "$MAKE" --no-print-directory lint
"$MAKE" --no-print-directory models test-py-deps memorix mem0 chromium || status=1
start fuzz-build "$MAKE" --no-print-directory fuzz-build
if [ "$status" = 0 ]; then
  "$CARGO" test --release --locked --no-run || status=1
fi
for name in lint fuzz-build llm-server-deps; do
  finish "$name" || status=1
done
[ "$status" = 0 ] || exit 1

# The fuzzing runs FUZZ_JOBS targets at a time. When the targets do not fill
# its last round (5 targets, 2 at a time: the third round runs one), the live
# llama.cpp test starts with that round, in the core it leaves free.
read -r fuzz_jobs fuzz_targets <<< "$("$MAKE" -s --no-print-directory fuzz-plan)"
read -r -a targets <<< "$fuzz_targets"
if ! [[ "$fuzz_jobs" =~ ^[1-9][0-9]*$ ]]; then
  echo "test: FUZZ_JOBS must be a whole number of at least 1, not '$fuzz_jobs'" >&2
  exit 1
fi
full=$(( ${#targets[@]} / fuzz_jobs * fuzz_jobs ))
if [ "$full" -gt 0 ]; then
  "$MAKE" --no-print-directory fuzz FUZZ_TARGETS="${targets[*]:0:full}" || exit 1
fi
start llm_live "$CARGO" test --release --locked --test llm_live
if [ "$full" -lt "${#targets[@]}" ]; then
  if ! "$MAKE" --no-print-directory fuzz FUZZ_TARGETS="${targets[*]:full}"; then
    wait "${pid[llm_live]}"
    exit 1
  fi
fi
"$CARGO" test --release --locked -- --exact --skip "$LIVE_TEST" || status=1
finish llm_live || status=1
if [ "$status" = 0 ]; then
  grep -E '^test result:' "$TEST_LOGS/llm_live.log" | sed 's/^/test: llm_live /' >&2
fi
exit "$status"
