"""The driver of a ROCm Core SDK release: one outside its window (too old, or too new) is refused before any change,
with the release table's answer (module_utils/planning/rocm_release.py), on the host that wants the driver."""


from gpulab_test_helpers import gpulab_runs as runs

NODE = "molecule-hw-mi250x"
testinfra_hosts = [NODE]


def test_a_driver_outside_the_release_s_window_is_refused_before_any_change(host):
    before = runs.snapshot(host)
    run = runs.playbook("site.yml", NODE, {"rocm_repo_amdgpu_version": "30.30.3"})
    assert run.rc != 0, run
    text = " ".join(run.output.split())
    assert "rocm_repo_amdgpu_version 30.30.3 is too old for ROCm 10.1.0" in text, run
    assert "set rocm_repo_amdgpu_version to 31.50" in text, run
    assert runs.differences(before, runs.snapshot(host)) == []
    assert "amdgpu/31.50/ubuntu" in host.file("/etc/apt/sources.list.d/amdgpu.list").content_string
