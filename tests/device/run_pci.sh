#!/usr/bin/env bash
# The lent-GPU run behind docs/hardware.md: gpu_pci_facts and the preflight verdict on the machine's real sysfs,
# then the rocm_env role in check + diff mode under each CUDA coexistence policy (nothing is written there).
# Needs the ansible-core wheels for the machine's Python in .whl/validate (docs/validation.md) and OUT set.
# shellcheck source=tests/device/ansible-env.sh
. tests/device/ansible-env.sh
{ date -u +%FT%TZ; uname -r; cat /etc/os-release; python3 --version; ansible-playbook --version
  ls -l /sys/bus/pci/devices/; ls /sys/class/kfd 2>&1; test -e /.dockerenv && echo "/.dockerenv exists"; } > "$OUT/env.txt" 2>&1
ansible-playbook -i localhost, tests/device/pci-facts.yml -e ansible_python_interpreter="$(command -v python3)" \
  2>&1 | tee "$OUT/pci-facts.log" | tail -n 5
for policy in rocm_only both none; do
  echo "=== rocm_env_cuda_policy=$policy ==="
  ansible-playbook -i localhost, tests/device/env-check.yml --check --diff -e ansible_python_interpreter="$(command -v python3)" \
    -e rocm_env_cuda_policy=$policy 2>&1 | sed -n '/Write the profile and linker files/,/Rebuild the dynamic linker/p'
done > "$OUT/coexistence-check-diff.log"
tail -n 40 "$OUT/coexistence-check-diff.log"
