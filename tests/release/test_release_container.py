"""The release tarball, installed alone into an empty collections path, provisions a test container by collection
names, from a temp dir outside this checkout: the playbook gpulab.rocm.site (the repo phase: probe, preflight, key,
sources, pin, refresh; no python3-apt) and the role gpulab.rocm.rocm_access run by its full name from a playbook of
the user's own; each twice, the second run changing nothing.

Marked `container` (deselected by pytest.ini's addopts; run it with `python -m pytest -m container tests/release`):
it needs Docker, the base image gpulab/debian:bookworm (tests/harness/base-images.sh) and the fixture mirror
(GPULAB_MIRROR_URL and GPULAB_MIRROR_FINGERPRINT from `tests/harness/mirror/mirror.sh env`; started here when
they are not set, and stopped again if this test started it). The container is gpulab-release-node, removed after.
"""

import os
import re
import shlex
import subprocess
import time

import pytest
import yaml

from release_helpers import ROOT

pytestmark = pytest.mark.container

NODE = "gpulab-release-node"
IMAGE = "gpulab/debian:bookworm"
MIRROR_SH = ROOT / "tests" / "harness" / "mirror" / "mirror.sh"
RECAP = re.compile(NODE + r"\s*: ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)")


def sh(*argv, check=True):
    result = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    if check and result.returncode != 0:
        raise AssertionError(f"{shlex.join(argv)}: rc {result.returncode}\n{result.stdout}{result.stderr}")
    return result


def in_node(command):
    return sh("docker", "exec", NODE, "sh", "-c", command).stdout


@pytest.fixture(scope="module")
def mirror():
    started = False
    if not os.environ.get("GPULAB_MIRROR_URL"):
        started = sh(str(MIRROR_SH), "status", check=False).returncode != 0
        sh(str(MIRROR_SH), "start")
    exports = dict(re.findall(r"^export (\w+)=(\S+)$", sh(str(MIRROR_SH), "env").stdout, re.MULTILINE))
    if os.environ.get("GPULAB_MIRROR_URL"):
        exports.update((k, v) for k, v in os.environ.items() if k.startswith("GPULAB_MIRROR_"))
    yield exports
    if started:
        sh(str(MIRROR_SH), "stop")


@pytest.fixture(scope="module")
def node():
    sh("docker", "rm", "-f", NODE, check=False)
    sh("docker", "run", "-d", "--name", NODE, "--network", "host", "--hostname", NODE, IMAGE, "sleep", "infinity")
    try:
        # Test fixture, as molecule/shared/prepare.yml sets it up: the GPU the mirror's tools pretend to see, a user.
        in_node("mkdir -p /etc/gpulab-fixture && echo mi250x > /etc/gpulab-fixture/profile"
                " && useradd --create-home --shell /bin/bash alice")
        yield NODE
    finally:
        sh("docker", "rm", "-f", NODE, check=False)


@pytest.fixture(scope="module")
def user(outside, mirror, node):
    (outside.cwd / "inventory.yml").write_text(f"""\
all:
  children:
    rocm_nodes:
      hosts:
        {node}:
      vars:
        ansible_connection: community.docker.docker
        ansible_python_interpreter: /usr/bin/python3
        rocm_version: "6.2.4"
        rocm_gpu_users: [alice]
        rocm_repo_base_url: {mirror['GPULAB_MIRROR_URL']}
        rocm_repo_key_fingerprints: ["{mirror['GPULAB_MIRROR_FINGERPRINT']}"]
        rocm_repo_validate_certs: false
        # The container sees this machine's PCI bus, which has no AMD GPU.
        rocm_preflight_gpus_required: false
""")
    (outside.cwd / "access.yml").write_text("""\
- name: Give the GPU users their groups, with the installed collection's role
  hosts: rocm_nodes
  become: true
  gather_facts: false
  roles:
    - role: gpulab.rocm.rocm_access
""")
    return outside


def play(user, *args):
    start = time.monotonic()
    result = user.run("ansible-playbook", "-i", "inventory.yml", *args)
    seconds = time.monotonic() - start
    recap = RECAP.search(result.stdout)
    assert recap, result.stdout[-3000:]
    ok, changed, unreachable, failed = map(int, recap.groups())
    assert (unreachable, failed) == (0, 0), result.stdout[-3000:]
    print(f"\nansible-playbook {' '.join(args)}: changed={changed}, {seconds:.1f} s")
    return result.stdout, changed


def test_playbook_by_collection_name_configures_the_repository(user, mirror):
    out, changed = play(user, "gpulab.rocm.site", "--tags", "repo")
    assert changed > 0
    installed = user.collections / "ansible_collections" / "gpulab" / "rocm"
    assert "TASK [Probe the node, plan every phase, and stop it when any phase refuses]" in out
    assert "TASK [gpulab.rocm.rocm_repo : " in out
    assert str(installed / "roles" / "rocm_repo" / "tasks" / "apply.yml") in out  # the role's tasks, from there
    assert str(ROOT) not in out
    sources = in_node("cat /etc/apt/sources.list.d/rocm.list")
    assert f"signed-by=/etc/apt/keyrings/rocm.gpg] {mirror['GPULAB_MIRROR_URL']}/rocm/apt/6.2.4 jammy main" in sources
    origin = yaml.safe_load((ROOT / "roles" / "rocm_repo" / "defaults" / "main.yml").read_text())["rocm_repo_pin_origin"]
    assert f"Pin: release o={origin}" in in_node("cat /etc/apt/preferences.d/rocm-pin-600")
    # The refresh read the mirror: apt knows ROCm 6.2.4's packages (nothing is installed in this phase).
    assert "6.2.4.60204-139~22.04" in in_node("apt-cache madison rocm-core")
    # The package steps need no python3-apt, and nothing installs it.
    assert "install ok installed" not in in_node("dpkg-query -W -f '${Status}' python3-apt 2>/dev/null || true")
    _, again = play(user, "gpulab.rocm.site", "--tags", "repo")
    assert again == 0


def test_role_by_full_name_gives_the_users_their_groups(user):
    out, changed = play(user, "access.yml")
    assert changed > 0
    assert ("TASK [gpulab.rocm.rocm_access : Create the GPU groups, add the GPU users to them, and write "
            "adduser.conf]") in out
    assert set(in_node("id -nG alice").split()) >= {"video", "render"}
    conf = in_node("cat /etc/adduser.conf")
    assert 'ADD_EXTRA_GROUPS=1\nEXTRA_GROUPS="video render"\n# END gpulab.rocm' in conf
    _, again = play(user, "access.yml")
    assert again == 0
