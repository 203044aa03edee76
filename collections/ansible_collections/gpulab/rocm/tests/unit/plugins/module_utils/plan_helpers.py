"""The shared fixtures of the phases' tests (test_plan_<phase>.py, test_planner.py): the real probes
(fixtures/probe/SOURCES.md), the stack's inputs, and each phase's wanted values on the converged host."""

import copy
import json
import os

from ansible_collections.gpulab.rocm.plugins.module_utils.host import node_state as ns
from ansible_collections.gpulab.rocm.plugins.module_utils.planning import rocm_release, stack


FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")

CONVERGED = "bookworm-converged-rocm6.2.4-fixture-tools-mi250x.json"

FRESH = "trixie-fresh-no-apt-lists.json"


def probe(name):
    with open(os.path.join(FIXTURES, "probe", name)) as handle:
        return json.load(handle)


def inputs(**values):
    # The converged probe was taken at 6.2.4; the stack's default release is newer (test_plan_repo.py).
    return stack.resolve(dict({"rocm_gpu_users": ["alice", "bob"], "rocm_version": "6.2.4"}, **values))


def default_inputs(**values):
    """The stack's defaults (its newest release, test_plan_repo.py), no GPU users."""
    return stack.resolve(dict({"rocm_gpu_users": []}, **values))


def fresh(distribution="Debian", version="13", container=False):
    """The fresh Debian 13 probe, as another distribution or a container where asked."""
    with open(os.path.join(FIXTURES, "probe", FRESH)) as handle:
        node = json.load(handle)
    node = copy.deepcopy(node)
    node["os"].update(distribution=distribution, version=version)
    node.setdefault("gpu_pci", {})["in_container"] = container
    return node


def mirror_of(node):
    """The fixture mirror's base URL and key fingerprint the converged host was provisioned with."""
    line = ns.source_lines(node["files"][ns.SOURCES_FILE]["content"])[0]
    fingerprint = node["keyrings"][ns.KEYRING]["fingerprints"][0]
    return line["uri"].split("/rocm/apt/")[0], fingerprint


def repo_wanted(node, **over):
    base, fingerprint = mirror_of(probe(CONVERGED))
    wanted = {"state": "present", "base_url": base, "key_url": base + "/rocm/rocm.gpg.key",
              "key_fingerprints": [fingerprint], "keyring": ns.KEYRING, "amdgpu_version": "",
              "architecture": "amd64", "pin_origin": "repo.radeon.com", "pin_priority": 600}
    wanted.update(CORE_REPO, **over)
    return wanted


# rocm_repo's defaults for the ROCm Core SDK's repository (roles/rocm_repo/defaults/main.yml): the table's URLs.
CORE_REPO = {"core_base_url": "", "core_key_url": "", "core_key_fingerprints": list(rocm_release.CORE_FINGERPRINTS),
             "core_keyring": rocm_release.CORE_KEYRING, "core_pin_origin": "stable.repo.amd.com"}


SDK = {"state": "present", "packages": ["rocm-hip-sdk", "rocblas", "miopen-hip"], "dev_packages_enabled": False,
       "dev_packages": ["rocblas-dev", "miopen-hip-dev"], "extra_packages": [], "distro_packages": [], "hold": False,
       "cache_valid_time": 86400, "kdb_enabled": True, "kdb_gfx_targets": []}

ENV = {"state": "present", "rocm_path": "", "hip_platform": "amd", "hip_path_enabled": False, "gfx_targets": [],
       "hsa_override_enabled": True, "hsa_override_gfx_version": "", "pytorch_rocm_arch_enabled": True,
       "hcc_amdgpu_target_enabled": False, "miopen_dir": "", "cuda_policy": "both", "extra_variables": {},
       "bashrc_enabled": True}

ACCESS = {"state": "present", "groups": ["video", "render"], "adduser_defaults": True}


def held(node, name):
    abbrev, version = node["packages"][name]
    node["packages"][name] = ["h" + abbrev[1:], version]
    return node
