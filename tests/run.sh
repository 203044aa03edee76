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
stage "collection build" ansible-galaxy collection build --force --output-path dist \
  collections/ansible_collections/gpulab/rocm

scenarios=("$@")
if [ ${#scenarios[@]} -eq 0 ]; then
  for dir in molecule/*/; do
    name=$(basename "$dir")
    [ -f "$dir/molecule.yml" ] && scenarios+=("$name")
  done
fi
for scenario in "${scenarios[@]}"; do
  stage "molecule ${scenario}" molecule test -s "$scenario"
done

printf '\n=== wall times ===\n'
printf '%s\n' "${timings[@]}"
printf 'total %d s\n' "$SECONDS"
