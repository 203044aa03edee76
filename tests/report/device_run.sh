#!/usr/bin/env bash
# The fleet report on the lent GPU machine (an NVIDIA H200 in a container, no ROCm): playbooks/facts.yml against
# localhost, twice (the second run must change nothing), writing the report into $OUT. Then, on the build machine:
#   tests/report/check_report.py <fetched folder> --expect-hosts localhost
# Needs the ansible-core wheels for the machine's Python in .whl/validate (docs/validation.md) and OUT set.
# shellcheck source=tests/device/ansible-env.sh
. tests/device/ansible-env.sh
run() {
  ansible-playbook -i localhost, -c local playbooks/facts.yml -e gpulab_hosts=localhost \
    -e ansible_python_interpreter="$(command -v python3)" -e ansible_become=false \
    -e rocm_report_dest="$OUT" -e "rocm_report_title='GPU fleet report: the lent H200 machine'"
}
{ date -u +%FT%TZ; run; echo "=== second run ==="; run; } > "$OUT/facts-h200.log" 2>&1
grep -A1 'PLAY RECAP' "$OUT/facts-h200.log"
