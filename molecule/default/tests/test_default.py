"""What a converged ROCm node looks like, checked inside each container (testinfra)."""

import json
import os
import re

import pytest

# The stack's default release, the newest of the release table (host_vars set it; the unit tests check they agree).
ROCM = "7.2.3"
CODE = "70203"
SUITE = {"12": "jammy", "13": "noble"}
# The fixture profile each platform was given (molecule.yml) and the GPU its capture shows.
GPU = {
    "molecule-rocm-bookworm": "AMD Instinct MI250X",
    "molecule-rocm-trixie": "AMD Radeon RX 6900 XT",
}
# The converged hosts (the batch hosts of test_upgrade_batches.py are left fresh).
testinfra_hosts = sorted(GPU)
USERS = ["alice", "bob"]
PACKAGES = ["rocm-hip-sdk", "rocblas", "miopen-hip", "rocm-core", "hip-runtime-amd", "rocminfo"]


@pytest.fixture(scope="module")
def debian_major(host):
    return host.file("/etc/debian_version").content_string.strip().split(".")[0]


def test_keyring_holds_the_mirror_key(host):
    keyring = host.file("/etc/apt/keyrings/rocm.gpg")
    assert keyring.is_file
    assert keyring.mode == 0o644
    out = host.check_output("gpg --no-default-keyring --keyring /etc/apt/keyrings/rocm.gpg --with-colons --fingerprint")
    fingerprints = re.findall(r"^fpr:+([0-9A-F]{40}):", out, re.M)
    assert fingerprints[0] == os.environ["GPULAB_MIRROR_FINGERPRINT"]


def test_sources_line_is_signed_by_the_keyring(host, debian_major):
    lines = [ln for ln in host.file("/etc/apt/sources.list.d/rocm.list").content_string.splitlines()
             if ln.startswith("deb ")]
    url = os.environ["GPULAB_MIRROR_URL"]
    # From 7.0 the graphics repository of the release sits beside the ROCm one (rocm-reference.md 1.1).
    options = "deb [arch=amd64 signed-by=/etc/apt/keyrings/rocm.gpg]"
    assert lines == [f"{options} {url}/rocm/apt/{ROCM} {SUITE[debian_major]} main",
                     f"{options} {url}/graphics/{ROCM}/ubuntu {SUITE[debian_major]} main"]
    # No driver sources in a container.
    assert not host.file("/etc/apt/sources.list.d/amdgpu.list").exists


def test_pin_prefers_the_rocm_origin(host):
    pin = host.file("/etc/apt/preferences.d/rocm-pin-600").content_string
    assert "Package: *\nPin: release o=repo.radeon.com\nPin-Priority: 600\n" in pin
    policy = host.check_output("apt-cache policy rocminfo")
    assert re.search(r"^\s*600 .*/rocm/apt/%s " % re.escape(ROCM), policy, re.M), policy


@pytest.mark.parametrize("name", PACKAGES)
def test_package_at_the_exact_version(host, name, debian_major):
    pkg = host.package(name)
    assert pkg.is_installed
    suffix = {"12": "~22.04", "13": "~24.04"}[debian_major]
    assert re.fullmatch(r"[0-9.]+\.%s-\d+%s" % (CODE, re.escape(suffix)), pkg.version), pkg.version


def test_opt_rocm_points_at_the_release(host):
    link = host.file("/opt/rocm")
    assert link.is_symlink
    assert host.check_output("readlink -f /opt/rocm") == f"/opt/rocm-{ROCM}"


@pytest.mark.parametrize("user", USERS)
def test_users_are_in_the_gpu_groups(host, user):
    groups = host.user(user).groups
    assert "video" in groups and "render" in groups


def test_render_is_a_system_group(host):
    assert host.group("render").gid < 1000


def test_adduser_conf_ends_with_one_pair_of_lines(host):
    lines = host.file("/etc/adduser.conf").content_string.splitlines()
    active = [ln for ln in lines if re.match(r"\s*(ADD_)?EXTRA_GROUPS\s*=", ln)]
    assert len(active) == 2, active
    assert active[0] == "ADD_EXTRA_GROUPS=1"
    groups = re.match(r'EXTRA_GROUPS="([^"]*)"', active[1]).group(1).split()
    assert {"video", "render"} <= set(groups)
    # They are the last settings in the file (only the block's end marker follows).
    assert lines[-1] == "# END gpulab.rocm"
    assert lines[-3:-1] == active


@pytest.mark.parametrize("user", USERS)
def test_login_shell_environment(host, user):
    out = host.check_output(f"su - {user} -c 'echo $PATH; echo $ROCM_PATH; echo $HIP_PLATFORM; echo ${{HIP_PATH:-unset}}'")
    path, rocm_path, platform, hip_path = out.splitlines()
    assert "/opt/rocm/bin" in path.split(":")
    assert path.split(":").count("/opt/rocm/bin") == 1
    assert rocm_path == "/opt/rocm"
    assert platform == "amd"
    assert hip_path == "unset"
    # The login shell finds the ROCm tools on PATH.
    assert host.run(f"su - {user} -c 'command -v rocminfo'").stdout.strip() == "/opt/rocm/bin/rocminfo"


@pytest.mark.parametrize("user", USERS)
def test_bashrc_block_is_marked_and_alone(host, user):
    bashrc = host.file(f"/home/{user}/.bashrc").content_string
    assert bashrc.count("# BEGIN gpulab.rocm environment") == 1
    assert bashrc.count("# END gpulab.rocm environment") == 1
    block = bashrc.split("# BEGIN gpulab.rocm environment")[1].split("# END gpulab.rocm environment")[0]
    assert "export ROCM_PATH=/opt/rocm" in block
    # The user's own content is still there.
    assert "HISTCONTROL" in bashrc or "shopt" in bashrc


def test_linker_finds_rocm_libraries(host):
    assert host.file("/etc/ld.so.conf.d/rocm.conf").content_string.splitlines()[1:] == ["/opt/rocm/lib", "/opt/rocm/lib64"]
    assert "libamdhip64.so" in host.check_output("ldconfig -p")


def test_python3_apt_was_never_installed(host):
    # The images have no python3-apt; the roles' package steps run apt-get and dpkg themselves (apt_packages).
    assert host.run("dpkg -s python3-apt").rc != 0


def test_apt_update_succeeds(host):
    result = host.run("apt-get update")
    assert result.rc == 0, result.stderr
    assert "W:" not in result.stderr and "E:" not in result.stderr, result.stderr


def test_the_fleet_report_of_the_converge_shows_the_node(host):
    # What the product made of the node: the report the converge wrote on the controller (rocm_report, from the
    # probe and the facts modules over the installed tools), not what the tools print.
    name = host.backend.get_hostname()
    path = os.path.join(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"], "fleet-report", "fleet-report.json")
    with open(path, encoding="utf-8") as handle:
        entry = {item["name"]: item for item in json.load(handle)["hosts"]}[name]
    assert entry["reachable"] and entry["problems"] == [], entry
    assert entry["rocm_version"] == ROCM and entry["rocm_build"].startswith(ROCM)
    assert GPU[name] in [gpu["model"] for gpu in entry["gpus"]], entry["gpus"]
    assert entry["gpu_count"] >= 1 and entry["gfx_targets"]
