#!/usr/bin/env bash
# The lent-GPU run behind docs/validation.md: the rocm_validate role through ansible-playbook -c local on the
# machine itself, then a GEMM size sweep with the script alone. Needs the ansible-core wheels for the machine's
# Python in .whl/validate (docs/validation.md says how) and OUT set to a folder for the results.
# shellcheck source=tests/device/ansible-env.sh
. tests/device/ansible-env.sh
# ansible-core is on PYTHONPATH for Ansible only: the benchmark runs with PYTHONPATH emptied (below), on the
# image's own packages.
PY=$(command -v python3)
{
  date -u +%FT%TZ; uname -r; $PY --version
  PYTHONPATH= $PY -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'
  nvidia-smi
  nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,power.limit,clocks.max.sm --format=csv
  ansible-playbook --version
} > "$OUT/env.txt" 2>&1
nvidia-smi --query-gpu=power.draw --format=csv,noheader,nounits > "$OUT/nvidia-smi-power-draw-h200.txt" 2>&1

run_role() {
  ansible-playbook -c local -i localhost, playbooks/validate.yml -e rocm_validate_hosts=localhost \
    -e ansible_python_interpreter="$PY" -e rocm_validate_python="$PY" -e '{"rocm_validate_environment": {"PYTHONPATH": ""}}' "$@"
}
run_role -e rocm_validate_fetch_dest="$OUT" 2>&1 | tee "$OUT/ansible.log"
echo "role rc=$?"
# second run: nothing may change (a short GEMM-only run, the figures are not the point)
run_role -e rocm_validate_fetch_dest=/tmp/second -e '{"rocm_validate_resnet50_enabled": false, "rocm_validate_bert_enabled": false, "rocm_validate_bandwidth_enabled": false}' \
  -e '{"rocm_validate_min_seconds": 1, "rocm_validate_fail_on_threshold": false}' 2>&1 | tee "$OUT/ansible-second-run.log" | grep -A1 RECAP
# GEMM at other sizes, to see where the matrix units saturate
for n in 4096 16384; do
  PYTHONPATH= $PY roles/rocm_validate/files/gpu_bench.py -o "$OUT/gemm-$n.json" --benchmarks gemm --gemm-size "$n" \
    --min-seconds 2 --power off
done 2>&1 | tee "$OUT/sweep.log"
nvidia-smi --query-gpu=clocks.sm,clocks.max.sm,temperature.gpu,power.draw,clocks_event_reasons.active --format=csv >> "$OUT/env.txt" 2>&1
