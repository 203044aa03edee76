"""What a converged ROCm node looks like, checked inside each container (testinfra)."""

import json
import os
import re

import pytest

# The stack's default release, the newest production release of the table: a ROCm Core SDK release (host_vars set
# it; test_the_default_release_is_the_stack_s checks they agree).
ROCM = "10.1.0"
SERIES = "10.1"
DISTRO = {"12": "debian12", "13": "debian13"}
# The fixture profile each platform was given (molecule.yml) and the GPU its capture shows.
GPU = {
    "molecule-rocm-bookworm": "AMD Instinct MI250X",
    "molecule-rocm-trixie": "AMD Radeon RX 6900 XT",
}
# The converged hosts (the batch hosts of test_upgrade_then_uninstall.py are left fresh).
testinfra_hosts = sorted(GPU)
USERS = ["alice", "bob"]
# The containers see no AMD GPU on their PCI bus (their GPUs are the fixture tools' captures), so they get the
# runtime of every target, amdrocm<X.Y>, which pulls the host packages (rocm-reference.md 13; recipes.py).
PACKAGES = ["amdrocm" + SERIES, "amdrocm-core" + SERIES, "amdrocm-blas" + SERIES, "amdrocm-dnn" + SERIES,
            "amdrocm%s-gfx90a" % SERIES, "amdrocm%s-gfx1030" % SERIES]
CORE_SOURCES = "/etc/apt/sources.list.d/amdrocm-stable.sources"


def test_the_default_release_is_the_stack_s():
    from ansible_collections.gpulab.rocm.plugins.module_utils.planning import rocm_release
    assert rocm_release.newest_stable() == ROCM


@pytest.fixture(scope="module")
def debian_major(host):
    return host.file("/etc/debian_version").content_string.strip().split(".")[0]


def fingerprints(host, keyring):
    out = host.check_output(f"gpg --no-default-keyring --keyring {keyring} --with-colons --fingerprint")
    return re.findall(r"^fpr:+([0-9A-F]{40}):", out, re.M)


def test_the_core_keyring_holds_the_core_key_only(host):
    keyring = host.file("/etc/apt/keyrings/amdrocm.gpg")
    assert keyring.is_file and keyring.mode == 0o644
    assert fingerprints(host, "/etc/apt/keyrings/amdrocm.gpg")[0] == os.environ["GPULAB_MIRROR_CORE_FINGERPRINT"]
    # No driver in a container, so no legacy key and no legacy source either.
    for path in ("/etc/apt/keyrings/rocm.gpg", "/etc/apt/sources.list.d/rocm.list",
                 "/etc/apt/sources.list.d/amdgpu.list"):
        assert not host.file(path).exists, path


def test_the_core_source_is_amd_s_deb822_file(host, debian_major):
    text = host.file(CORE_SOURCES).content_string
    fields = dict(line.split(": ", 1) for line in text.splitlines() if line and not line.startswith("#"))
    assert fields == {"X-Repo-Id": "amdrocm-stable", "Types": "deb",
                      "URIs": "%s/%s/" % (os.environ["GPULAB_MIRROR_CORE_URL"], DISTRO[debian_major]),
                      "Suites": "stable", "Components": "main", "Architectures": "amd64",
                      "Signed-By": "/etc/apt/keyrings/amdrocm.gpg", "Enabled": "yes"}, text


def test_pin_prefers_the_core_origin(host):
    pin = host.file("/etc/apt/preferences.d/rocm-pin-600").content_string
    assert "Pin: release o=stable.repo.amd.com\nPin-Priority: 600\n" in pin
    policy = host.check_output("apt-cache policy amdrocm%s" % SERIES)
    assert re.search(r"^\s*600 .*/rocm/core/packages/debian1[23] stable", policy, re.M), policy


@pytest.mark.parametrize("name", PACKAGES)
def test_package_at_the_release(host, name):
    pkg = host.package(name)
    assert pkg.is_installed
    # A Core package's version is the release itself, no MMmmpp code (rocm-reference.md 13).
    assert re.fullmatch(r"%s-\d+" % re.escape(ROCM), pkg.version), pkg.version


def test_no_legacy_package_and_the_core_root(host):
    listed = host.check_output("dpkg-query -W -f '${Package} ${Version}\\n'")
    assert not re.search(r"\.\d{5}-\d+~\d+\.\d+$", listed, re.M), listed
    assert host.file("/opt/rocm/core-%s/.info/version" % SERIES).content_string.startswith(ROCM + "-")
    # AMD's alternatives give /opt/rocm/core and /opt/rocm/bin (the amdrocm packages; recipes.py).
    assert host.check_output("readlink -f /opt/rocm/core") == "/opt/rocm/core-" + SERIES


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


PREFIX = "/opt/rocm/core-" + SERIES


@pytest.mark.parametrize("user", USERS)
def test_login_shell_environment(host, user):
    out = host.check_output(f"su - {user} -c 'echo $PATH; echo $ROCM_PATH; echo $HIP_PLATFORM; echo ${{HIP_PATH:-unset}}'")
    path, rocm_path, platform, hip_path = out.splitlines()
    # The default release's own root: AMD's /opt/rocm links follow the newest Core release, not rocm_version.
    assert path.split(":").count(PREFIX + "/bin") == 1
    assert rocm_path == PREFIX
    assert platform == "amd"
    assert hip_path == "unset"
    # The login shell finds the ROCm tools on PATH.
    assert host.run(f"su - {user} -c 'command -v rocminfo'").stdout.strip() == PREFIX + "/bin/rocminfo"


@pytest.mark.parametrize("user", USERS)
def test_bashrc_block_is_marked_and_alone(host, user):
    bashrc = host.file(f"/home/{user}/.bashrc").content_string
    assert bashrc.count("# BEGIN gpulab.rocm environment") == 1
    assert bashrc.count("# END gpulab.rocm environment") == 1
    block = bashrc.split("# BEGIN gpulab.rocm environment")[1].split("# END gpulab.rocm environment")[0]
    assert "export ROCM_PATH=" + PREFIX in block
    # The user's own content is still there.
    assert "HISTCONTROL" in bashrc or "shopt" in bashrc
    # Written as the user, and the run left nothing else in the home folder: no ~/.ansible (docs/security.md).
    assert host.file(f"/home/{user}/.bashrc").user == user
    assert not host.file(f"/home/{user}/.ansible").exists


def test_linker_finds_rocm_libraries(host):
    # AMD's Core packages register no library folder (TheRock#6718): the role's linker file does.
    assert host.file("/etc/ld.so.conf.d/rocm.conf").content_string.splitlines()[1:] == [PREFIX + "/lib"]
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
    # amd-smi, which every Core SDK release installs, reaches no GPU in a container (no amdgpu; the fixture's
    # rocminfo capture shows the GPU): the report names that, once, and nothing else.
    amd_smi = [text for text in entry["problems"] if text.startswith("amd-smi: the amdgpu driver is not initialised")]
    assert entry["reachable"] and entry["problems"] == amd_smi and len(amd_smi) == 1, entry
    assert entry["rocm_version"] == ROCM and entry["rocm_build"].startswith(ROCM)
    assert GPU[name] in [gpu["model"] for gpu in entry["gpus"]], entry["gpus"]
    assert entry["gpu_count"] >= 1 and entry["gfx_targets"]
