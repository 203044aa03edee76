"""The role's default list of Debian 13's own ROCm packages (plan_sdk.DISTRO_DEFAULTS), against Debian 13's real
archive: the converge installs a smaller list (host_vars: hipcc and librocblas-dev's 2.2 GB are not needed for the
facts tests), so here a check-mode run with the default list must plan exactly the missing defaults and apt must
resolve them, dependencies included (a simulation: nothing is downloaded or changed)."""


from gpulab_test_helpers import gpulab_runs as runs

NODE = "molecule-distro-trixie"
DEFAULTS = ["rocminfo", "rocm-smi", "amd-smi", "hipcc", "libamdhip64-dev", "librocblas-dev"]
MISSING = ["hipcc", "libamdhip64-dev", "librocblas-dev"]  # not in the converge's list


def test_the_default_list_resolves_in_debian_13s_archive(host):
    before = runs.snapshot(host)
    run = runs.playbook("site.yml", NODE, {"rocm_sdk_distro_packages": []}, check=True, tags="sdk")
    assert run.rc == 0, run
    assert any("Install the ROCm packages" in name for name in run.changed_tasks()), run
    text = " ".join(run.output.split())
    for name in MISSING:
        assert name in text, (name, run)
    assert runs.differences(before, runs.snapshot(host)) == []
    # apt itself, on the same lists: every default name exists and installs with its dependencies.
    simulation = host.run("apt-get install --simulate --no-install-recommends " + " ".join(DEFAULTS))
    assert simulation.rc == 0, simulation.stderr
    installs = [line.split()[1] for line in simulation.stdout.splitlines() if line.startswith("Inst ")]
    assert set(MISSING) <= set(installs) and "rocminfo" not in installs, installs
