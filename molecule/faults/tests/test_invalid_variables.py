"""Bad inputs of every phase are refused at the gate, before any change: real site.yml runs on a container that was
never converged (molecule-faults-fresh), each with its bad input, and a snapshot of every file, /etc's and /opt's
contents, dpkg's status and selections before and after. The host is refused before any change, so the next case
starts from the same fresh host (a case's own setup is undone after it). The same for system_files' own refusals."""

import json

import pytest

from gpulab_test_helpers import gpulab_runs as runs

NODE = "molecule-faults-fresh"
testinfra_hosts = [NODE]

GATE = "found by planning every phase before any change, so nothing was changed"

# What the host reports after the fixture's /etc/os-release (and /etc/debian_version) replace the real ones.
OS_RELEASE = {
    "debian11": ('PRETTY_NAME="Debian GNU/Linux 11 (bullseye)"\nNAME="Debian GNU/Linux"\nVERSION_ID="11"\n'
                 'VERSION="11 (bullseye)"\nVERSION_CODENAME=bullseye\nID=debian\n', "11.11"),
    "mint": ('NAME="Linux Mint"\nVERSION="21.3 (Virginia)"\nID=linuxmint\nID_LIKE="ubuntu debian"\n'
             'PRETTY_NAME="Linux Mint 21.3"\nVERSION_ID="21.3"\nVERSION_CODENAME=virginia\nUBUNTU_CODENAME=jammy\n',
             None),
}

# A folder a lab user made, where rocm_env_miopen_dir points (root must not take it over).
USER_FOLDER = ("install -d -o alice -m 0755 /srv/alice-cache", "rmdir /srv/alice-cache")

CASES = [
    # id, extra vars, fake OS, setup (command, undo) or None, words the message must contain
    # The stack-wide inputs are checked together (stack.resolve lists every invalid one): one run for three.
    ("malformed version, side-by-side release and install source",
     {"rocm_version": "6.2.x", "rocm_versions": ["6.2.4", "latest"], "rocm_install_source": "conda"}, None, None,
     ["'6.2.x' is not a release number", "'latest' is not a release number", "conda", "amd, distro"]),
    ("default not among the side-by-side releases", {"rocm_versions": ["6.2"]}, None, None,
     ["rocm_version 6.2.4 is not among rocm_versions (6.2.0)"]),
    ("listed user that does not exist", {"rocm_gpu_users": ["alice", "nosuchuser"]}, None, None,
     ["users that do not exist: nosuchuser", GATE]),
    ("unknown codename (Debian 11)", {}, "debian11", None, ["Debian 11 has no ROCm apt suite", GATE]),
    ("unsupported OS (Linux Mint)", {}, "mint", None, ["Linux Mint 21.3 has no ROCm apt suite", GATE]),
    # Values only later roles check (rocm_repo, rocm_sdk and rocm_access would have changed the host first): every
    # phase's bad input in one run, since the gate lists them all; each class of the issue is one of them, and a
    # variable of the wrong type (its role's argument_specs, checked by the plan call) is one more.
    ("every phase's bad input at once",
     {"rocm_env_miopen_dir": "/srv/alice-cache", "rocm_sdk_extra_packages": ["-oops"],
      "rocm_access_groups": ["video", "gpu users"], "rocm_driver_packages": ["amdgpu-dkms;reboot"],
      "rocm_modules_install": "maybe",
      "rocm_containers_enabled": True, "rocm_containers_cdi_spec": "/tmp/amd.json",
      "rocm_verify_expected_gfx_targets": ["mi300"]}, None, USER_FOLDER,
     ["7 problems", GATE,
      "(1) driver: not Debian package names: 'amdgpu-dkms;reboot'",
      "(2) sdk: rocm_sdk_extra_packages holds names that are not Debian package names: '-oops'",
      "(3) access: rocm_access_groups holds names that are not group names: 'gpu users'",
      "(4) env: rocm_env_miopen_dir /srv/alice-cache is a directory of uid 1000",
      "(5) modules: variables that do not match the role's meta/argument_specs.yml: rocm_modules_install must be "
      "a boolean (true or false), got the string 'maybe'",
      "(6) containers: rocm_containers_cdi_spec must be a .json file directly in /etc/cdi or /var/run/cdi",
      "(7) verify: rocm_verify_expected_gfx_targets holds values that are not gfx targets"]),
    # Values of the right form but a bad type, range or line (issue 38, "Bad values pass the gate"): each passed the
    # gate before and broke the node later (every GPU failed, the flapping limit off, a node class's count ignored,
    # every node failed, the run stopped after earlier roles applied). Refused by the roles' schemas
    # (meta/argument_specs.yml with meta/input_constraints.yml), one problem per role.
    ("bad values of the roles' schemas",
     {"rocm_health_max_uncorrectable_ecc": -1, "rocm_health_resume_window_hours": 0,
      "rocm_health_node_class": "mi300", "rocm_health_node_classes": {"mi300": {"gpu_count": "8"}},
      "rocm_health_kfd_group": "render\n", "rocm_metrics_enabled": "no"}, None, None,
     ["2 problems", GATE, "health: variables that do not match the role's meta/argument_specs.yml",
      "rocm_health_kfd_group holds a line break",
      "rocm_health_max_uncorrectable_ecc must be at least 0, got -1",
      "rocm_health_node_classes['mi300'].gpu_count must be a whole number (unquoted), got the string '8'",
      "rocm_health_resume_window_hours must be at least 1, got 0",
      "metrics: variables that do not match the role's meta/argument_specs.yml: rocm_metrics_enabled must be a "
      "boolean (true or false), got the string 'no'"]),
    # Issues 39 and 41's inputs: a kernel log source that is no absolute path, a partition profile for a node with no
    # AMD GPU, and an extra kernel argument that would land in a GRUB file as shell.
    ("kernel log source, partition profile and kernel argument",
     {"rocm_health_kernel_log_source": "kern.log", "rocm_partition_compute": "CPX", "rocm_partition_memory": "NPS4",
      "rocm_tuning_profile": "instinct", "rocm_tuning_kernel_args_extra": ["iommu=pt;reboot"]}, None, None,
     [GATE, "rocm_health_kernel_log_source must be auto, journal, kmsg, none or an absolute path, got 'kern.log'",
      "rocm_partition_compute/rocm_partition_memory are set, but the node has no AMD GPU on the PCI bus",
      "rocm_tuning_kernel_args_extra holds 'iommu=pt;reboot', not kernel arguments of the form name or name=value"]),
    # Three roles' bad inputs, among them the issue's first example (a shell expansion in rocm_env_rocm_path), and a
    # folder where rocm_tuning's own sysctl drop-in would be: without a profile (the default) the role removes its
    # files, and root does not remove a folder it did not write.
    ("four roles at once",
     {"rocm_env_rocm_path": "/opt/rocm$(id)", "rocm_access_groups": ["gpu users"],
      "rocm_sdk_extra_packages": ["-oops"]}, None,
     ("mkdir /etc/sysctl.d/60-gpulab-rocm-tuning.conf", "rmdir /etc/sysctl.d/60-gpulab-rocm-tuning.conf"),
     ["4 problems", "(1) sdk: rocm_sdk_extra_packages", "(2) access: rocm_access_groups",
      "(3) env: rocm_env_rocm_path must be an absolute path",
      "(4) tuning: /etc/sysctl.d/60-gpulab-rocm-tuning.conf is a directory, not the file the role wrote",
      GATE]),
]


@pytest.fixture
def fake_os(host, request):
    """Replace /etc/os-release (a link to /usr/lib/os-release) and /etc/debian_version for one test."""
    name = request.param
    if name:
        text, debian_version = OS_RELEASE[name]
        host.check_output("cp -a /etc/os-release /etc/debian_version /run/ && rm /etc/os-release")
        host.check_output("printf %s > /etc/os-release" % runs._quote(text))
        if debian_version:
            host.check_output("echo %s > /etc/debian_version" % debian_version)
    yield name
    if name:
        host.check_output("rm -f /etc/os-release && cp -a /run/os-release /run/debian_version /etc/ "
                          "&& rm /run/os-release /run/debian_version")


@pytest.fixture
def setup(host, request):
    if request.param:
        host.check_output(request.param[0])
    yield
    if request.param:
        host.check_output(request.param[1])


def snapshot(host):
    """runs.snapshot (every file, /etc's and /opt's contents, dpkg's status) and the contents of the users' dotfiles."""
    dotfiles = host.check_output("find /home /root -xdev -maxdepth 2 -type f -name '.*' -print0 | LC_ALL=C sort -z "
                                 "| xargs -0 -r sha256sum")
    return runs.snapshot(host) + dotfiles.splitlines()


@pytest.mark.parametrize("extra_vars, fake_os, setup, words", [c[1:] for c in CASES], ids=[c[0] for c in CASES],
                         indirect=["fake_os", "setup"])
def test_refused_before_any_change(host, extra_vars, fake_os, setup, words):
    before = snapshot(host)
    run = runs.playbook("site.yml", NODE, extra_vars)
    after = snapshot(host)
    assert run.rc != 0, run
    assert run.recap[NODE]["failed"] == 1 and run.changed(NODE) == 0, run
    message = " ".join(run.output.split())
    for word in words:
        assert word in message, run
    assert runs.differences(before, after) == []


def test_the_host_is_still_fresh(host):
    # No case left anything behind: no ROCm source, key or package, no profile file, no user's block.
    assert not host.file("/etc/apt/sources.list.d/rocm.list").exists
    assert not host.file("/etc/profile.d/rocm.sh").exists
    assert "gpulab.rocm" not in host.run("cat /home/alice/.bashrc").stdout
    assert host.run("dpkg-query -W rocm-core").rc != 0


def test_a_report_variable_of_the_wrong_type_is_refused_before_the_report(host, tmp_path):
    # The facts playbook runs the report role without Ansible's own argument check: the role's plan call checks
    # its variables (meta/argument_specs.yml) and fails the host before any record or file is made.
    before = snapshot(host)
    dest = tmp_path / "fleet-report"
    run = runs.playbook("playbooks/facts.yml", NODE, {"rocm_report_fail_on_problems": "maybe",
                                                      "rocm_report_dest": str(dest)})
    after = snapshot(host)
    assert run.rc != 0 and run.recap[NODE]["failed"] == 1 and run.changed(NODE) == 0, run
    message = " ".join(run.output.split())
    assert ("variables that do not match the role's meta/argument_specs.yml: rocm_report_fail_on_problems must be "
            "a boolean (true or false), got the string 'maybe'") in message, run
    assert not dest.exists()
    assert runs.differences(before, after) == []


# system_files refuses before it makes a folder, a group or a file (the roles' writes of a phase are one module run):
# a path given under two options, and a member that is no user.
SYSTEM_FILES_REFUSALS = [
    ("a path given twice", {"files": {"/etc/gpulab-refusal.conf": "a\n"},
                            "executables": {"/etc/gpulab-refusal.conf": "b\n"}},
     "/etc/gpulab-refusal.conf is given twice (executables). Nothing was changed."),
    ("a member that is no user", {"members": {"nosuchuser": ["video"]}, "files": {"/etc/gpulab-refusal.conf": "a\n"}},
     "These users do not exist: nosuchuser. Create them first. Nothing was changed."),
]


@pytest.mark.parametrize("args, message", [c[1:] for c in SYSTEM_FILES_REFUSALS],
                         ids=[c[0] for c in SYSTEM_FILES_REFUSALS])
def test_system_files_refuses_before_any_change(host, args, message):
    before = snapshot(host)
    module_args = dict(args, dirs=["/opt/gpulab-refusal"], groups=["gpulabrefusal"])
    # testinfra reads ansible's --tree result, which carries the module's message but not `failed` with
    # ansible-core 2.19: the message (fail_json's alone) is what says it refused.
    result = host.ansible("gpulab.rocm.system_files", json.dumps(module_args), check=False)
    after = snapshot(host)
    assert result.get("msg") == message and not result.get("changed"), result
    assert runs.differences(before, after) == []
