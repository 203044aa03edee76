"""ROCm 7's driver under its own number: a driver directory too old for the release is refused before any change,
with the release table's answer (module_utils/planning/rocm_release.py), on the host that wants the driver."""


from gpulab_test_helpers import gpulab_runs as runs

NODE = "molecule-hw-mi250x"
testinfra_hosts = [NODE]


def test_a_driver_too_old_for_the_release_is_refused_before_any_change(host):
    before = runs.snapshot(host)
    run = runs.playbook("site.yml", NODE, {"rocm_repo_amdgpu_version": "6.4.3"})
    assert run.rc != 0, run
    assert "rocm_repo_amdgpu_version 6.4.3 is too old for ROCm 7.2.3" in run.output, run
    assert "set rocm_repo_amdgpu_version to 30.30.3" in run.output, run
    assert runs.differences(before, runs.snapshot(host)) == []
    assert "amdgpu/30.30.3/ubuntu" in host.file("/etc/apt/sources.list.d/amdgpu.list").content_string
