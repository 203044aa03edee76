"""AMD's host tuning for Instinct nodes (rocm_tuning, issue 41) in a container, as the converge left it over SSH:
the sysctl and limits drop-ins written, the kernel argument planned and reported (a container runs its host's
kernel: never applied here), verify's notice of the pending reboot; rocm_tuning_profile none removes the role's
files and the profile writes them back (uninstall.yml removes them: test_upgrade_then_uninstall.py)."""

import json
import os

from gpulab_test_helpers import gpulab_runs as runs

NODE = "molecule-rocm-bookworm"
SYSCTL = "/etc/sysctl.d/60-gpulab-rocm-tuning.conf"
LIMITS = "/etc/security/limits.d/60-gpulab-rocm-memlock.conf"
GRUB = "/etc/default/grub.d/gpulab-rocm-tuning.cfg"
testinfra_hosts = ["docker://" + NODE]


def said(run):
    return " ".join(run.output.split())


def test_the_drop_ins_are_written_and_the_kernel_argument_only_planned(host):
    for path, line in ((SYSCTL, "kernel.numa_balancing = 0"), (LIMITS, "* hard memlock unlimited")):
        dropin = host.file(path)
        assert (dropin.user, dropin.group, dropin.mode) == ("root", "root", 0o644), path
        assert line in dropin.content_string.splitlines(), dropin.content_string
    # The setting is the host kernel's: written, not applied, in a container.
    assert not host.file(GRUB).exists and not host.file("/etc/default/grub.d").exists
    run = runs.playbook("site.yml", NODE, tags="tuning,verify")
    assert run.rc == 0 and run.changed(NODE) == 0, run
    assert "iommu=pt is planned but not applied: the host is a container" in said(run), run
    assert "tuning: kernel command line: wanted iommu=pt, the running node has none" in said(run), run


def test_the_fleet_report_of_the_converge_has_the_tuning_column(host):
    # The report the converge wrote (site.yml plans the tuning in the same run): each setting's state, and what is
    # not in effect, the kernel argument a container never boots.
    path = os.path.join(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"], "fleet-report", "fleet-report.json")
    with open(path, encoding="utf-8") as handle:
        tuning = {item["name"]: item for item in json.load(handle)["hosts"]}[NODE]["tuning"]
    assert "kernel command line: not settable here" in tuning["line"], tuning
    assert ("kernel command line: wanted iommu=pt, the running node has none: planned, not applied: the host is a "
            "container") in " ".join(tuning["findings"]), tuning


def test_profile_none_removes_the_role_s_files_and_the_profile_writes_them_back(host):
    removed = runs.playbook("site.yml", NODE, tags="tuning", extra_vars={"rocm_tuning_profile": "none"})
    assert removed.rc == 0 and removed.changed(NODE) > 0, removed
    assert not host.file(SYSCTL).exists and not host.file(LIMITS).exists
    again = runs.playbook("site.yml", NODE, tags="tuning")
    assert again.rc == 0 and again.changed(NODE) > 0 and host.file(SYSCTL).exists and host.file(LIMITS).exists, again
