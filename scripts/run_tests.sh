#!/usr/bin/env bash
# `deno task test`: installs what the tests need, then runs every test. The two qemu guests
# (tests/e2e/ipvs_guest_test.ts, then tests/e2e/systemd_guest_test.ts) run in a second
# `deno test` beside the host's tests: each guest keeps one emulated CPU busy for minutes while
# the host's tests need little CPU, and the guests have their own kernel, so the two runs share
# no netfilter state or xtables lock. The guests' output is printed once they finish; the last
# line sums both runs.
set -uo pipefail
cd "$(dirname "$0")/.."

bash scripts/install_test_deps.sh || exit 1

GUEST_TESTS=(tests/e2e/ipvs_guest_test.ts tests/e2e/systemd_guest_test.ts)
guest_log="$(mktemp)"
host_log="$(mktemp)"
trap 'rm -f "$guest_log" "$host_log"' EXIT

deno test -A --no-check=remote "${GUEST_TESTS[@]}" >"$guest_log" 2>&1 &
guest_pid=$!

ignore="$(IFS=,; echo "${GUEST_TESTS[*]}")"
deno test -A --no-check=remote --ignore="$ignore" tests/ "$@" 2>&1 | tee "$host_log"
host_rc=${PIPESTATUS[0]}

wait "$guest_pid"
guest_rc=$?
echo
echo "=== the qemu guests' tests (${GUEST_TESTS[*]})"
cat "$guest_log"

# Each run closes with deno's "ok | N passed (K steps) | M failed" line: add them up.
sum() {
  sed 's/\x1b\[[0-9;]*m//g' "$@" |
    sed -nE 's/^(ok|FAILED) \| ([0-9]+) passed( \([0-9]+ steps?\))? \| ([0-9]+) failed.*/\2 \4/p' |
    awk '{ p += $1; f += $2; n++ } END { print n + 0, p + 0, f + 0 }'
}
read -r host_runs host_passed host_failed < <(sum "$host_log")
read -r guest_runs guest_passed guest_failed < <(sum "$guest_log")
echo
echo "host tests exited ${host_rc} (${host_passed} passed, ${host_failed} failed);" \
  "guest tests exited ${guest_rc} (${guest_passed} passed, ${guest_failed} failed)"
if [[ "$host_runs" -eq 0 || "$guest_runs" -eq 0 ]]; then
  echo "a test run printed no summary" >&2
  [[ "$host_runs" -eq 0 ]] && host_rc=1
  [[ "$guest_runs" -eq 0 ]] && guest_rc=1
fi
echo "tests: $((host_passed + guest_passed)) passed, $((host_failed + guest_failed)) failed"
if [[ "$host_rc" -ne 0 || "$guest_rc" -ne 0 ]]; then exit 1; fi
