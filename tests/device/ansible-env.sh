# Sourced by the lent-GPU scripts (tests/device/run_pci.sh, tests/validate/device_run.sh): installs the carried
# ansible-core wheels for the machine's Python (.whl/validate, docs/validation.md says how to fetch them) into
# /tmp/site and points Ansible at this checkout. Needs OUT set to a folder for the results.
set -u -o pipefail
: "${OUT:?set OUT to a folder for the results}"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
  .whl/validate/*.whl || exit 1
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1 LC_ALL=C.UTF-8 LANG=C.UTF-8
export ANSIBLE_CONFIG=$PWD/ansible.cfg ANSIBLE_ROLES_PATH=$PWD/roles ANSIBLE_COLLECTIONS_PATH=$PWD/collections
