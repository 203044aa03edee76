"""rocm_verify's failures, each naming what was expected and what was found: a GPU count, a gfx target, and (its
default) an AMD GPU on the PCI bus that rocminfo does not list. Each run is `site.yml --tags verify`: it must fail
on the host, and change nothing."""


import pytest

from gpulab_test_helpers import gpulab_runs as runs

MIXED, NAVI22 = "molecule-hw-mixed", "molecule-hw-navi22"
testinfra_hosts = [MIXED]


def failed_verify(node, extra):
    run = runs.playbook("site.yml", node, extra, tags="verify")
    assert run.rc != 0 and run.recap[node]["failed"] == 1 and run.changed(node) == 0, run
    return " ".join(run.output.split())


@pytest.mark.parametrize("extra, words", [
    ({"rocm_expected_gpu_count": 3}, ["rocminfo lists 1 GPU agent(s), expected 3 (rocm_expected_gpu_count)"]),
    ({"rocm_expected_gpu_count": 1, "rocm_verify_expected_gfx_targets": ["gfx1030", "gfx90a"]},
     ["gfx targets missing: gfx90a (rocminfo lists gfx1030)"]),
], ids=["gpu count", "gfx target"])
def test_verify_names_what_it_expected_and_found(extra, words):
    message = failed_verify(MIXED, extra)
    for word in words:
        assert word in message, message


@pytest.mark.parametrize("node, words", [
    # amdgpu bound to the RX 6700 XT (gfx1031, runs with an HSA override) in sysfs; no GPU agent in rocminfo.
    (NAVI22, ["rocminfo does not list 1 of the AMD GPUs on the PCI bus that ROCm 6.2.4 runs on: 0000:07:00.0",
              "(gfx1031, driver amdgpu)"]),
    # Two Radeons bound; rocminfo lists the RX 6900 XT (0000:67:00.0), not the RX 6600 (0000:0b:00.0).
    (MIXED, ["rocminfo does not list 1 of the AMD GPUs on the PCI bus that ROCm 6.2.4 runs on: 0000:0b:00.0",
             "(gfx1032, driver amdgpu)"]),
], ids=["navi22 unseen", "second radeon unseen"])
def test_by_default_every_gpu_of_the_bus_must_be_seen_by_rocminfo(node, words):
    message = failed_verify(node, {"rocm_expected_gpu_count": -1})
    for word in words:
        assert word in message, message
    assert "0000:67:00.0" not in message
