#!/usr/bin/env bash
# The test command (`make test`): from a fresh machine, installs and starts everything it needs, then runs the
# checks that need no container (lint, unit tests, sanity, the collection build) beside every Molecule scenario.
# Prints the wall time of each stage and of each scenario.
# Usage: tests/run.sh [SCENARIO...]   (default: every scenario under molecule/ except shared, awx-runner, release)
# GPULAB_MOLECULE_JOBS: scenarios at a time (default 2); GPULAB_MOLECULE_JOBS_LATE: at a time once the static checks
# are done (default one more: the static checks free a core, and the scenarios left wait on Slurm and containers more
# than on the CPU, docs/testing.md);
# GPULAB_STATIC_BESIDE=0 runs the static checks first.
set -euo pipefail
cd "$(dirname "$0")/.."

logs=.cache/logs
mkdir -p "$logs"
# The whole machine's busy CPU seconds (every process, the containers' too), from /proc/stat's first line.
busy_seconds() { awk -v hz="$(getconf CLK_TCK)" '/^cpu /{ printf "%d", ($2 + $3 + $4 + $7 + $8) / hz }' /proc/stat; }
busy_start=$(busy_seconds)
declare -a timings=()
# CPU seconds (user + system) of what a command ran, from the kernel's accounting of its finished children: the
# controller's side of a scenario (molecule, ansible-playbook, docker's client, pytest), not the containers' own.
# (times writes to a file: in a pipeline it would be a new subshell's, with no children yet.)
cpu_of() { ( "$@"; rc=$?; times >"$cpu_file"; exit $rc ); }
seconds() { awk 'NR == 2 { n = 0; for (i = 1; i <= NF; i++) { split($i, p, "m"); n += p[1] * 60 + p[2] } printf "%d", n }' "$1"; }
stage() {
  local name=$1 start=$SECONDS rc=0 cpu_file; shift
  cpu_file=$(mktemp)
  printf '\n=== %s ===\n' "$name"
  cpu_of "$@" || rc=$?
  timings+=("$(printf '%-44s %4d s  %4s s cpu  %s' "$name" $((SECONDS - start)) "$(seconds "$cpu_file")" \
    "$([ $rc -eq 0 ] && echo ok || echo FAILED)")")
  rm -f "$cpu_file"
  return $rc
}

# What runs beside the checks: a part of the set-up, its output in its log, its exit status in its .rc file once done.
beside() {
  local name=$1; shift
  rm -f "$logs/setup-$name.rc"
  ( start=$SECONDS rc=0; "$@" >"$logs/setup-$name.log" 2>&1 || rc=$?
    printf '%-44s %4d s  %s\n' "$name (beside the checks)" $((SECONDS - start)) "$([ $rc -eq 0 ] && echo ok || echo FAILED)" \
      >>"$logs/setup-summary.txt"
    echo $rc >"$logs/setup-$name.rc" ) &
}
# Wait for a part started with beside (from either lane: they are subshells, so no `wait` on its pid).
await() {
  local name=$1
  while [ ! -s "$logs/setup-$name.rc" ]; do sleep 1; done
  [ "$(cat "$logs/setup-$name.rc")" = 0 ] || { tail -n 40 "$logs/setup-$name.log" >&2; return 1; }
}

stage "host setup (packages, docker, venv)" tests/harness/host-setup.sh base
# The base images (debootstrap: mostly downloading) and PyTorch's CPU wheel (only the validation tests use it) are
# made while the first checks run: the scenarios wait for the images, pytest for PyTorch.
: >"$logs/setup-summary.txt"
beside images tests/harness/host-setup.sh images
beside pytorch tests/harness/host-setup.sh validate
# shellcheck disable=SC1091
source .venv/bin/activate
# Each scenario test's playbook run, one line with its wall and CPU seconds (tests/gpulab_test_helpers/gpulab_runs.py):
# where a scenario's time goes.
export GPULAB_RUN_LOG=$PWD/$logs/playbook-runs.tsv
: >"$GPULAB_RUN_LOG"
# Debian's dkms, unpacked by host-setup.sh, for the unit test that has it read the trees the probe reads.
export GPULAB_TEST_DKMS=$PWD/.cache/dkms/usr/sbin/dkms
stage "fixture mirror" tests/harness/mirror/mirror.sh start
eval "$(tests/harness/mirror/mirror.sh env)"

# --- the checks that need no container: one after the other, each stage timed --------------------------------------
# Every check runs even when an earlier one failed (set -e does not apply in a function called with ||).
with_pytorch() { await pytorch && "$@"; }
static_checks() {
  local rc=0
  stage "yamllint" yamllint -s . || rc=1
  stage "ansible-lint (production)" ansible-lint || rc=1
  # The slowest tests in the log: what docs/testing.md says each costs.
  stage "unit and harness tests (pytest)" with_pytorch python -m pytest -q -p no:cacheprovider --durations=25 || rc=1
  stage "ansible-test sanity" tests/tools/sanity.sh || rc=1
  stage "release build (make release)" make --no-print-directory release || rc=1
  touch "$logs/static-done"
  return $rc
}

# --- the Molecule scenarios ------------------------------------------------------------------------------------------
# Longest first (measured: docs/testing.md), so the last one to start is a short one; any scenario not listed runs
# after these. Each has its own containers, fleet report and (faults) private mirror server, so they run side by side.
ORDER="lifecycle faults slurm distro default containers hardware awx-runner security release"
scenarios=("$@")
if [ ${#scenarios[@]} -eq 0 ]; then
  for name in $ORDER; do
    if [[ $name == awx-runner || $name == release || -f molecule/$name/molecule.yml ]]; then scenarios+=("$name"); fi
  done
  for dir in molecule/*/; do
    name=$(basename "$dir")
    [ -f "$dir/molecule.yml" ] && [[ " $ORDER " != *" $name "* ]] && scenarios+=("$name")
  done
fi
jobs=${GPULAB_MOLECULE_JOBS:-2}
jobs_late=${GPULAB_MOLECULE_JOBS_LATE:-$((jobs + 1))}
rm -f "$logs/static-done"
run_scenario() {
  local name=$1 start=$SECONDS rc=0 cpu_file
  cpu_file=$(mktemp)
  cpu_of scenario_command "$name" || rc=$?
  printf 'molecule %-24s %4d s  %4s s cpu  %s\n' "$name" $((SECONDS - start)) "$(seconds "$cpu_file")" \
    "$([ $rc -eq 0 ] && echo passed || echo FAILED)" >>"$logs/molecule-summary.txt"
  rm -f "$cpu_file"
  return $rc
}
scenario_command() {
  local name=$1
  if [ "$name" = awx-runner ]; then
    # Every playbook as an AWX job under ansible-runner, and the fleet report in Chromium (its own containers
    # and mirror).
    tests/runner/run.sh >"$logs/molecule-$name.log" 2>&1
  elif [ "$name" = release ]; then
    # The release tarball installed alone, a playbook and a role by their collection names against a container.
    python -m pytest -q -p no:cacheprovider -m container tests/release >"$logs/molecule-$name.log" 2>&1
  else
    molecule test -s "$name" >"$logs/molecule-$name.log" 2>&1
  fi
}
# Once the static checks are done, GPULAB_MOLECULE_JOBS_LATE scenarios at a time (docs/testing.md says what it costs).
slots() { if [ -e "$logs/static-done" ]; then echo "$jobs_late"; else echo "$jobs"; fi; }
molecule_all() {
  : >"$logs/molecule-summary.txt"
  await images || { echo "molecule: the base images could not be built" >>"$logs/molecule-summary.txt"; return 1; }
  for scenario in "${scenarios[@]}"; do
    # Polled, not `wait -n`: a slot that the static checks free counts at once.
    while [ "$(jobs -rp | wc -l)" -ge "$(slots)" ]; do sleep 2; done
    run_scenario "$scenario" &
  done
  wait
  # Each scenario's outcome from its summary line (`jobs` above forgets a finished job's status, so `wait PID`
  # cannot give it): every scenario has a line, and each says passed.
  [ "$(grep -c ' passed$' "$logs/molecule-summary.txt")" -eq "${#scenarios[@]}" ]
}

# What failed, for the end of the output (CI keeps only its tail): a failed scenario's steps with their outcomes, the
# last failed task in its log (the one that ended the step, unless it was rescued or ignored) and pytest's list of
# failed tests.
failure_digest() {
  sed 's/\x1b\[[0-9;]*m//g' "$1" | awk '
    / ➜ [a-z_-]+: Executed: / { sub(/^.*➜ /, ""); steps = steps "  " $0 "\n" }
    /(fatal|failed): \[/ { task = ""; left = 25 }
    left > 0 { task = task $0 "\n"; left-- }
    /short test summary info/ { tests = ""; keep = 1; next }
    keep && /=====/ { keep = 0 }
    keep { tests = tests $0 "\n" }
    END {
      printf "steps:\n%s", steps
      if (task != "") printf "the last failed task in the log:\n%s", task
      if (tests != "") printf "failed tests:\n%s", tests
    }'
}

start=$SECONDS
static_rc=0 molecule_rc=0
if [ "${GPULAB_STATIC_BESIDE:-1}" = 1 ]; then
  # The scenarios wait on containers much of the time; the static checks fill that time on the same cores.
  molecule_all &
  molecule_pid=$!
  static_checks || static_rc=$?
  wait "$molecule_pid" || molecule_rc=$?
else
  static_checks || static_rc=$?
  [ $static_rc -ne 0 ] || molecule_all || molecule_rc=$?
fi
molecule_wall=$((SECONDS - start))

printf '\n=== molecule (%d scenarios, %d at a time, %d once the static checks were done) ===\n' "${#scenarios[@]}" \
  "$jobs" "$jobs_late"
cat "$logs/molecule-summary.txt"

printf '\n=== wall times ===\n'
printf '%s\n' "${timings[@]}"
cat "$logs/setup-summary.txt"
printf '%-44s %4d s\n' "static checks and molecule$([ "${GPULAB_STATIC_BESIDE:-1}" = 1 ] && echo ' (side by side)')" \
  "$molecule_wall"
printf 'total %d s; the machine busy %d CPU seconds of %d (%d cores)\n' "$SECONDS" $(($(busy_seconds) - busy_start)) \
  $((SECONDS * $(nproc))) "$(nproc)"
printf 'molecule: %d passed, %d failed\n' "$(grep -c ' passed$' "$logs/molecule-summary.txt")" \
  "$(grep -c ' FAILED$' "$logs/molecule-summary.txt")"
for name in $(awk '$NF == "FAILED" {print $2}' "$logs/molecule-summary.txt"); do
  printf '\n=== what failed in %s (%s) ===\n' "$name" "$logs/molecule-$name.log"
  failure_digest "$logs/molecule-$name.log"
  printf -- '--- its last 30 lines ---\n'; tail -n 30 "$logs/molecule-$name.log"
done
[ $static_rc -eq 0 ] && [ $molecule_rc -eq 0 ]
