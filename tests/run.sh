#!/usr/bin/env bash
# The test command (`make test`): from a fresh machine, installs and starts everything it needs, then runs lint,
# unit tests, the collection build and every Molecule scenario. Prints the wall time of each stage.
# Usage: tests/run.sh [SCENARIO...]   (default: every scenario under molecule/ except shared)
set -euo pipefail
cd "$(dirname "$0")/.."

declare -a timings=()
stage() {
  local name=$1; shift
  local start=$SECONDS
  printf '\n=== %s ===\n' "$name"
  "$@"
  timings+=("$(printf '%-34s %4d s' "$name" $((SECONDS - start)))")
}

stage "host setup (packages, docker, images, venv)" tests/harness/host-setup.sh
# shellcheck disable=SC1091
source .venv/bin/activate
stage "fixture mirror" tests/harness/mirror/mirror.sh start
eval "$(tests/harness/mirror/mirror.sh env)"

stage "yamllint" yamllint -s .
stage "ansible-lint (production)" ansible-lint
stage "unit and harness tests (pytest)" python -m pytest -q -p no:cacheprovider
stage "ansible-test sanity" tests/tools/sanity.sh
stage "collection build" ansible-galaxy collection build --force --output-path dist \
  collections/ansible_collections/gpulab/rocm

scenarios=("$@")
if [ ${#scenarios[@]} -eq 0 ]; then
  for dir in molecule/*/; do
    name=$(basename "$dir")
    [ -f "$dir/molecule.yml" ] && scenarios+=("$name")
  done
  scenarios+=(awx-runner)
fi

# Scenarios run GPULAB_MOLECULE_JOBS at a time (their containers have distinct names; most of their time is spent
# waiting on apt and dpkg, so two at a time on two cores roughly halves the wall time). The faults scenario
# injects mirror faults that other scenarios would see, so it runs alone, after the others.
jobs=${GPULAB_MOLECULE_JOBS:-2}
logs=.cache/logs
mkdir -p "$logs"
run_scenario() {
  local name=$1 start=$SECONDS rc=0
  if [ "$name" = awx-runner ]; then
    # Every playbook as an AWX job under ansible-runner, and the fleet report in Chromium (its own containers
    # and mirror, so it runs beside the scenarios).
    tests/runner/run.sh >"$logs/molecule-$name.log" 2>&1 || rc=$?
  else
    molecule test -s "$name" >"$logs/molecule-$name.log" 2>&1 || rc=$?
  fi
  printf 'molecule %-24s %4d s  %s\n' "$name" $((SECONDS - start)) "$([ $rc -eq 0 ] && echo passed || echo FAILED)" \
    >>"$logs/molecule-summary.txt"
  return $rc
}
: >"$logs/molecule-summary.txt"
parallel=() serial=()
for scenario in "${scenarios[@]}"; do
  case " ${GPULAB_SERIAL_SCENARIOS:-faults} " in
    *" $scenario "*) serial+=("$scenario") ;;
    *) parallel+=("$scenario") ;;
  esac
done
molecule_all() {
  local failed=0 running=0
  for scenario in "${parallel[@]}"; do
    run_scenario "$scenario" &
    running=$((running + 1))
    if [ "$running" -ge "$jobs" ]; then wait -n || failed=1; running=$((running - 1)); fi
  done
  while [ "$running" -gt 0 ]; do wait -n || failed=1; running=$((running - 1)); done
  for scenario in "${serial[@]}"; do run_scenario "$scenario" || failed=1; done
  cat "$logs/molecule-summary.txt"
  if [ $failed -ne 0 ]; then
    for name in $(awk '$NF == "FAILED" {print $2}' "$logs/molecule-summary.txt"); do
      printf '\n--- %s (last 80 lines) ---\n' "$logs/molecule-$name.log"; tail -n 80 "$logs/molecule-$name.log"
    done
    return 1
  fi
}
stage "molecule (${#scenarios[@]} scenarios, $jobs at a time)" molecule_all

printf '\n=== wall times ===\n'
printf '%s\n' "${timings[@]}"
printf 'total %d s\n' "$SECONDS"
printf 'molecule: %d passed, %d failed\n' "$(grep -c ' passed$' "$logs/molecule-summary.txt")" \
  "$(grep -c ' FAILED$' "$logs/molecule-summary.txt")"
