#!/usr/bin/env bash
# bench/peer/run.sh: its summary of recorded runs (kvd bench tables and llama.cpp's JSON lines of
# two rounds, one run that failed) is the expected table, a directory without runs still gives
# the table's head, and it refuses incomplete arguments with its usage and status 2 before
# running anything.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
run=$here/../../bench/peer/run.sh
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

summary=$("$run" --summarize "$here/data") || fail "--summarize exited $?"
diff -u "$here/expected_summary.md" <(echo "$summary") || fail "the summary differs from expected_summary.md"

# A directory whose runs all failed still gives the table's head, and status 0.
empty=$(mktemp -d)
trap 'rm -rf "$empty"' EXIT
"$run" --summarize "$empty" | grep -q '^| figure | kvd |' || fail "no table for a directory without runs"

expect_refusal() {
  local want=$1; shift
  local err status
  err=$("$run" "$@" 2>&1 >/dev/null)
  status=$?
  [[ $status -eq 2 ]] || fail "run.sh $* exited $status, not 2"
  [[ "$err" == *"$want"* ]] || fail "run.sh $* said '$err', not '$want'"
}
expect_refusal "--llama-bin DIR" 
expect_refusal "--llama-bin DIR" --llama-bin /nonexistent --model /nonexistent
expect_refusal "not an executable: /nonexistent/llama-bench" --llama-bin /nonexistent \
  --model /nonexistent --bf16 a --q8_0 b --q4_k_m c
expect_refusal "no such directory: /nonexistent" --summarize /nonexistent
expect_refusal "--llama-bin DIR" --rounds

((failures == 0)) && echo "bench/peer summary and argument checks passed"
exit $((failures > 0))
