"""upgrade.yml's rolling batches for real: four hosts, two at a time (rocm_upgrade_serial 2). The first batch, the
two converged hosts, completes before the second starts; in the second, molecule-rocm-batch-a fails preflight, and
the roll stops (rocm_upgrade_max_fail_percentage 0, the default): molecule-rocm-batch-b, which passed preflight, is
not touched. Then, last of the scenario, uninstall.yml on trixie, over SSH with the sudo password from the vault."""

import os

import testinfra

from gpulab_test_helpers import gpulab_runs as runs

FIRST = ["molecule-rocm-bookworm", "molecule-rocm-trixie"]
FAILING, STOPPED = "molecule-rocm-batch-a", "molecule-rocm-batch-b"
testinfra_hosts = [STOPPED]


def test_a_failed_batch_stops_the_roll(host):
    before = runs.snapshot(host)
    # The mirror for every host (the batch hosts are not in rocm_nodes, whose group_vars name it): had the roll gone
    # on, batch-b would have had its sources written.
    extra = {"rocm_upgrade_serial": 2, "rocm_repo_base_url": os.environ["GPULAB_MIRROR_URL"],
             "rocm_repo_key_fingerprints": [os.environ["GPULAB_MIRROR_FINGERPRINT"]], "rocm_repo_validate_certs": False,
             "rocm_repo_core_base_url": os.environ["GPULAB_MIRROR_CORE_URL"],
             "rocm_repo_core_key_url": os.environ["GPULAB_MIRROR_CORE_KEY_URL"],
             "rocm_repo_core_key_fingerprints": [os.environ["GPULAB_MIRROR_CORE_FINGERPRINT"]]}
    run = runs.playbook("playbooks/upgrade.yml", "rocm_nodes:upgrade_standby", extra)
    assert run.rc != 0, run
    for name in FIRST:
        assert run.recap[name]["failed"] == 0 and run.changed(name) == 0, run
    assert run.recap[FAILING]["failed"] == 1 and run.recap[STOPPED]["failed"] == 0, run
    assert "no AMD GPU on the PCI bus" in " ".join(run.output.split()), run
    # Batches: every line about the first batch comes before the first line about the second.
    lines = run.output.splitlines()
    last_first = max(i for i, line in enumerate(lines) if any("[%s]" % name in line for name in FIRST))
    first_second = min(i for i, line in enumerate(lines) if "[%s]" % FAILING in line or "[%s]" % STOPPED in line)
    assert last_first < first_second, run.output
    # The roll stopped at the failed task: the other host of the batch was left as it was.
    assert runs.differences(before, runs.snapshot(host)) == []
    assert not host.file("/etc/apt/sources.list.d/amdrocm-stable.sources").exists


def test_uninstall_over_ssh_removes_the_stack_and_a_second_run_changes_nothing():
    host = testinfra.get_host("docker://molecule-rocm-trixie")
    tuning = ["/etc/sysctl.d/60-gpulab-rocm-tuning.conf", "/etc/security/limits.d/60-gpulab-rocm-memlock.conf"]
    # the host tuning's drop-ins the converge wrote (rocm_tuning_profile instinct in its host_vars: test_tuning.py)
    assert all(host.file(path).exists for path in tuning)
    run = runs.playbook("playbooks/uninstall.yml", "molecule-rocm-trixie")
    assert run.rc == 0 and run.changed("molecule-rocm-trixie") > 0, run
    again = runs.playbook("playbooks/uninstall.yml", "molecule-rocm-trixie")
    assert again.rc == 0 and again.changed("molecule-rocm-trixie") == 0, again
    assert not host.file("/etc/apt/sources.list.d/amdrocm-stable.sources").exists
    assert not any(host.file(path).exists for path in tuning)
    assert not [line for line in host.check_output("dpkg-query -W -f '${Package}\\n'").split() if "amdrocm" in line]
    for user in ("alice", "bob"):
        # The block is gone, the user's own lines stay.
        bashrc = host.file("/home/%s/.bashrc" % user).content_string
        assert "gpulab.rocm" not in bashrc and "HISTCONTROL" in bashrc
        assert not host.file("/home/%s/.ansible" % user).exists
