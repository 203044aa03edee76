"""Issue 10, bug 1: on a host that wants the driver, `--tags repo` alone keeps the amdgpu sources. The old roles
decided "driver wanted" in rocm_preflight, which --tags repo skipped, so rocm_repo removed amdgpu.list."""


from gpulab_test_helpers import gpulab_runs as runs

NODE = "molecule-hw-mi250x"
testinfra_hosts = [NODE]


def test_repo_tag_alone_keeps_the_driver_sources(host):
    before = host.file("/etc/apt/sources.list.d/amdgpu.list").content_string
    for tags in ("repo", "driver", "sdk"):
        run = runs.playbook("site.yml", NODE, tags=tags)
        assert run.rc == 0, run
        assert run.changed(NODE) == 0, run
        assert host.file("/etc/apt/sources.list.d/amdgpu.list").content_string == before
