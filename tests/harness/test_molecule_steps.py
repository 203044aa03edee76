"""Molecule's shared create step (molecule/shared/create.yml): a platform key it would not pass on to Docker is
refused, naming the key and the fix, before any container is started. (Its containers themselves are every
scenario's: a wrong option there fails every scenario.)"""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CREATE = ROOT / "molecule" / "shared" / "create.yml"


def run_create(tmp_path, platforms):
    extra = tmp_path / "vars.json"
    extra.write_text(json.dumps({"molecule_yml": {"platforms": platforms}, "molecule_no_log": False}))
    env = dict(os.environ, ANSIBLE_LOCALHOST_WARNING="false", ANSIBLE_INVENTORY_UNPARSED_WARNING="false")
    ansible_playbook = Path(sys.executable).with_name("ansible-playbook")
    return subprocess.run([ansible_playbook, "-i", "localhost,", "-e", "@%s" % extra, CREATE],
                          capture_output=True, text=True, env=env, cwd=ROOT, check=False, timeout=120)


def test_an_unknown_platform_key_is_refused_before_any_container_starts(tmp_path):
    name = "gpulab-test-create-refused"
    result = run_create(tmp_path, [{"name": name, "image": "gpulab/debian:trixie", "pre_build_image": True,
                                    "network_mode": "host", "command": "sleep infinity", "groups": [],
                                    "volumes": ["/srv:/srv"]}])
    assert result.returncode != 0
    assert "Platform %s" % name in result.stdout
    assert "it has volumes" in result.stdout
    assert "No container was started" in result.stdout
    # The container task never ran: the assert stopped the play first.
    assert "Start each platform's container" not in result.stdout


def test_a_platform_to_build_is_refused(tmp_path):
    result = run_create(tmp_path, [{"name": "gpulab-test-create-build", "image": "debian:bookworm",
                                    "network_mode": "host", "command": "sleep infinity"}])
    assert result.returncode != 0
    assert "pre_build_image unset" in result.stdout
    assert "Start each platform's container" not in result.stdout
