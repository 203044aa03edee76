"""Every sysfs tree spec the containers get (molecule/hardware/sysfs/ for the `hardware` scenario,
molecule/slurm/sysfs/ for the `slurm` scenario, tests/report/sysfs/ for tests/runner) builds with the collection's sysfs_tree.py run the way the containers run it:
the one file alone, `python3 sysfs_tree.py SPEC ROOT`. gpu_pci_facts' reader then finds in the tree what the spec
describes, so a spec or builder error shows here rather than in a Molecule run."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ansible_collections.gpulab.rocm.plugins.module_utils.parsers.pci import gather_pci

ROOT = Path(__file__).resolve().parents[2]
BUILDER = ROOT / "collections/ansible_collections/gpulab/rocm/tests/unit/sysfs_tree.py"
SPECS = (sorted((ROOT / "molecule/hardware/sysfs").glob("*.json")) + sorted((ROOT / "molecule/slurm/sysfs").glob("*.json"))
         + sorted((ROOT / "tests/report/sysfs").glob("*.json")))


@pytest.mark.parametrize("spec", SPECS, ids=lambda path: path.name)
def test_spec_builds_as_in_a_container(tmp_path, spec):
    lone = tmp_path / "sysfs_tree.py"
    shutil.copy(BUILDER, lone)  # as prepare.yml copies it: standard library only, nothing from the collection
    sysfs = tmp_path / "sys"
    for _ in range(2):  # ROOT is replaced, so a second run gives the same tree
        subprocess.run([sys.executable, "-I", str(lone), str(spec), str(sysfs)], check=True)
    described = json.loads(spec.read_text())
    facts = gather_pci(str(sysfs), str(tmp_path), str(tmp_path))
    assert [device["bdf"] for device in facts["devices"]] == sorted(
        function["path"][-1] for function in described.get("functions", []))
    assert [node["node"] for node in facts["kfd_nodes"]] == [node["node"] for node in described.get("kfd_nodes", [])]
    # The DRM nodes a spec names (card1, renderD128) are the device's drm/ folder, which the containers role reads.
    drm = dict((device["bdf"], device["drm"]) for device in facts["devices"])
    assert drm == dict((function["path"][-1], function.get("drm", [])) for function in described.get("functions", []))
    assert (sysfs / "GPULAB-FIXTURE").read_text().startswith("gpulab.rocm TEST FIXTURE")
    # The render nodes a spec gives its GPUs are what the facts report (the slurm scenario mknods them).
    renders = {function["path"][-1]: ["/dev/dri/" + name for name in function.get("drm", []) if name.startswith("renderD")]
               for function in described.get("functions", [])}
    assert {device["bdf"]: device["render_node"] for device in facts["devices"]} == {
        bdf: (names[0] if names else None) for bdf, names in renders.items()}
