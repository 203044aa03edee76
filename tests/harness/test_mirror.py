"""The fixture ROCm mirror, tested with real apt, real signatures and the real fake-tool scripts.

Runs on the host (no containers): builds a mirror into a temp dir, serves it with serve.py on 127.0.0.1 and
drives apt-get/apt-cache through a throwaway configuration (APT_CONFIG), so the host's apt state is untouched.
Needs dpkg, apt-utils, gnupg (the builder's packages) and apt.
"""

import os
import re
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

MIRROR = Path(__file__).resolve().parent / "mirror"
sys.path.insert(0, str(MIRROR))
import build_mirror  # noqa: E402 - the mirror's builder and recipe table
import recipes  # noqa: E402

CAPTURES = build_mirror.CAPTURES  # the collection's fixture store

pytestmark = pytest.mark.skipif(
    not all(shutil.which(t) for t in ("apt-get", "apt-ftparchive", "dpkg-deb", "gpg")),
    reason="needs apt, apt-utils (apt-ftparchive), dpkg and gnupg",
)

SDK_624_JAMMY = {  # AMD's version strings for ROCm 6.2.4 on Ubuntu 22.04 (the project's brief, rocm-reference)
    "rocm-core": "6.2.4.60204-139~22.04",
    "hip-runtime-amd": "6.2.41134.60204-139~22.04",
    "hipcc": "1.1.1.60204-139~22.04",
    "rocminfo": "1.0.0.60204-139~22.04",
    "rocblas": "4.2.4.60204-139~22.04",
    "rocblas-dev": "4.2.4.60204-139~22.04",
    "miopen-hip": "3.2.0.60204-139~22.04",
    "miopen-hip-dev": "3.2.0.60204-139~22.04",
    "rocm-hip-runtime": "6.2.4.60204-139~22.04",
    "rocm-hip-libraries": "6.2.4.60204-139~22.04",
    "rocm-hip-sdk": "6.2.4.60204-139~22.04",
}


def report(request, line):
    """Show a measured figure in pytest's output even without -s."""
    plugins = request.config.pluginmanager
    reporter, capture_manager = plugins.get_plugin("terminalreporter"), plugins.get_plugin("capturemanager")
    if reporter and capture_manager:
        with capture_manager.global_and_fixture_disabled():
            reporter.write_line(line)


@pytest.fixture(scope="module")
def mirror(tmp_path_factory, request):
    out = tmp_path_factory.mktemp("mirror") / "www"
    started = time.monotonic()
    built = subprocess.run([sys.executable, MIRROR / "build_mirror.py", "--out", out],
                           capture_output=True, text=True, check=False)
    assert built.returncode == 0, built.stderr
    report(request, f"\nmirror build: {time.monotonic() - started:.1f} s wall; {built.stdout.strip()}")
    return out


@pytest.fixture(scope="module")
def server(mirror):
    state = mirror.parent
    port_file = state / "port"
    proc = subprocess.Popen([sys.executable, MIRROR / "serve.py", "--root", mirror, "--port-file", port_file,
                             "--pid-file", state / "pid"], stderr=subprocess.DEVNULL)
    for _ in range(100):
        if port_file.exists():
            break
        assert proc.poll() is None, "serve.py exited early"
        time.sleep(0.05)
    else:
        proc.kill()
        pytest.fail("serve.py wrote no port file within 5 s")
    faults = state / "faults"
    yield {"url": f"http://127.0.0.1:{port_file.read_text().strip()}", "faults": faults}
    faults.unlink(missing_ok=True)
    proc.terminate()
    proc.wait(timeout=10)
    assert not port_file.exists(), "serve.py left its port file behind"


@pytest.fixture
def faults(server):
    yield server["faults"]
    server["faults"].unlink(missing_ok=True)


class Apt:
    """A throwaway apt configuration: its own sources, keys, pin, state, cache and empty dpkg status."""

    def __init__(self, root, sources, key, pin="repo.radeon.com", deb822=None):
        self.root = root
        etc = root / "etc/apt"
        for d in ("etc/apt/apt.conf.d", "etc/apt/sources.list.d", "etc/apt/preferences.d",
                  "etc/apt/trusted.gpg.d", "state/lists/partial", "cache/archives/partial", "log"):
            (root / d).mkdir(parents=True, exist_ok=True)
        (root / "state/status").touch()
        shutil.copy(key, root / "key.asc")  # .asc: apt reads an armored key from signed-by
        (etc / "sources.list").write_text(
            "".join(f"deb [arch=amd64 signed-by={root}/key.asc] {line}\n" for line in sources))
        if deb822:  # a .sources file, as AMD's Core SDK install page writes
            (etc / "sources.list.d/amdrocm-stable.sources").write_text(deb822)
        if pin:  # the pin by origin the roles write
            (etc / "preferences.d/rocm-pin-600").write_text(f"Package: *\nPin: release o={pin}\nPin-Priority: 600\n")
        (root / "apt.conf").write_text(f'''
Dir::Etc "{etc}";
Dir::State "{root}/state";
Dir::State::status "{root}/state/status";
Dir::Cache "{root}/cache";
Dir::Log "{root}/log";
APT::Architecture "amd64";
APT::Architectures {{ "amd64"; }};
APT::Sandbox::User "root";
Debug::NoLocking "true";
Acquire::Languages "none";
Acquire::Retries "0";
Acquire::http::Proxy::127.0.0.1 "DIRECT";
''')

    def __call__(self, *args):
        env = dict(os.environ, APT_CONFIG=str(self.root / "apt.conf"), LC_ALL="C")
        return subprocess.run(list(args), capture_output=True, text=True, env=env, check=False)

    def update(self):
        result = self("apt-get", "update")
        assert result.returncode == 0 and "W:" not in result.stderr + result.stdout, result.stdout + result.stderr
        return result


def rocm(server, folder, codename):
    return f"{server['url']}/rocm/apt/{folder} {codename} main"


def amdgpu(server, folder, codename):
    return f"{server['url']}/amdgpu/{folder}/ubuntu {codename} main"


def graphics(server, folder, codename):
    return f"{server['url']}/graphics/{folder}/ubuntu {codename} main"


@pytest.fixture
def apt624(server, mirror, tmp_path):
    apt = Apt(tmp_path, [rocm(server, "6.2.4", "jammy"), amdgpu(server, "6.2.4", "jammy")],
              mirror / "rocm/rocm.gpg.key")
    apt.update()
    return apt


def download(apt, tmp_path, package):
    """Download one package through apt (apt-get download) and return the .deb path."""
    work = tmp_path / f"dl-{package}"
    work.mkdir()
    env = dict(os.environ, APT_CONFIG=str(apt.root / "apt.conf"), LC_ALL="C")
    result = subprocess.run(["apt-get", "download", package], cwd=work, capture_output=True, text=True, env=env,
                            check=False)
    assert result.returncode == 0, result.stderr
    (deb,) = work.glob("*.deb")
    return deb


# ---------------------------------------------------------------------------------------------------------------
# Signatures, keys and the pin

def test_key_files_and_fingerprint(mirror, tmp_path):
    fingerprint = (mirror / "fingerprint").read_text().strip()
    assert re.fullmatch(r"[0-9A-F]{40}", fingerprint)

    def fingerprints(key):
        shown = subprocess.run(["gpg", "--show-keys", "--with-colons", key], capture_output=True, text=True,
                               check=True, env=dict(os.environ, GNUPGHOME=str(tmp_path)))
        return [line.split(":")[9] for line in shown.stdout.splitlines() if line.startswith("fpr:")]

    assert fingerprints(mirror / "rocm/rocm.gpg.key")[0] == fingerprint
    assert fingerprints(mirror / "rocm/wrong.gpg.key")[0] not in (fingerprint, "")
    core = (mirror / "core-fingerprint").read_text().strip()  # the Core stream's own key, as AMD's
    assert fingerprints(mirror / "rocm/gpg/packages.gpg") == [core] and core != fingerprint
    assert "Core SDK signing key (TEST ONLY)" in subprocess.run(
        ["gpg", "--show-keys", mirror / "rocm/gpg/packages.gpg"], capture_output=True, text=True, check=True,
        env=dict(os.environ, GNUPGHOME=str(tmp_path))).stdout


@pytest.mark.parametrize("release", recipes.RELEASES, ids=lambda r: r["folder"])
def test_every_dist_verifies_with_the_served_key(server, mirror, tmp_path, release):
    # From 7.0 the driver has its own folder (30.x) and user space a graphics repository (rocm-reference.md 1.1).
    driver = release["amdgpu"].get("folder", release["folder"])
    sources = [f(server, folder, c) for c in release["codenames"]
               for f, folder in ((rocm, release["folder"]), (amdgpu, driver))]
    if release.get("graphics"):
        sources += [graphics(server, release["folder"], c) for c in release["codenames"]]
    apt = Apt(tmp_path, sources, mirror / "rocm/rocm.gpg.key")
    result = apt.update()
    assert result.stdout.count("InRelease") >= len(sources)


def test_wrong_key_fails_verification(server, mirror, tmp_path):
    apt = Apt(tmp_path, [rocm(server, "6.2.4", "jammy")], mirror / "rocm/wrong.gpg.key")
    result = apt("apt-get", "update")
    output = result.stdout + result.stderr
    assert result.returncode != 0 or "is not signed" in output, output
    assert "NO_PUBKEY" in output, output
    assert "rocm-core" not in apt("apt-cache", "pkgnames").stdout.split()


def test_detached_signature_verifies_with_gpgv(mirror, tmp_path):
    keyring = tmp_path / "keyring.gpg"
    subprocess.run(["gpg", "--batch", "--no-default-keyring", "--homedir", tmp_path, "--keyring", keyring,
                    "--import", mirror / "rocm/rocm.gpg.key"], check=True, capture_output=True)
    dist = mirror / "rocm/apt/6.2.4/dists/jammy"
    good = subprocess.run(["gpgv", "--keyring", keyring, dist / "Release.gpg", dist / "Release"],
                          capture_output=True, check=False)
    assert good.returncode == 0, good.stderr
    tampered = tmp_path / "Release"
    tampered.write_text((dist / "Release").read_text().replace("Suite: jammy", "Suite: noble"))
    bad = subprocess.run(["gpgv", "--keyring", keyring, dist / "Release.gpg", tampered], capture_output=True,
                         check=False)
    assert bad.returncode != 0


def test_release_fields_match_amds_pin(apt624, mirror):
    release = (mirror / "rocm/apt/6.2.4/dists/jammy/Release").read_text()
    fields = dict(line.split(": ", 1) for line in release.splitlines() if re.match(r"^\w[\w-]*: \S", line))
    assert fields["Origin"] == fields["Label"] == "repo.radeon.com"
    assert fields["Suite"] == fields["Codename"] == "jammy"
    assert fields["Architectures"] == "amd64" and fields["Components"] == "main" and fields["Date"]
    policy = apt624("apt-cache", "policy").stdout
    assert "release o=repo.radeon.com,a=jammy,n=jammy,l=repo.radeon.com,c=main,b=amd64" in policy
    core = apt624("apt-cache", "policy", "rocm-core").stdout
    assert re.search(r"6\.2\.4\.60204-139~22\.04 600\n\s+600 http://127\.0\.0\.1:\d+/rocm/apt/6\.2\.4 jammy/main",
                     core), core


# ---------------------------------------------------------------------------------------------------------------
# Packages and dependencies

def test_rocm_hip_sdk_624_resolves_whole_tree_at_exact_versions(apt624):
    result = apt624("apt-get", "install", "-y", "--download-only", "rocm-hip-sdk")
    assert result.returncode == 0, result.stdout + result.stderr
    debs = {p.name.split("_")[0]: p.name.split("_")[1].replace("%7e", "~")
            for p in (apt624.root / "cache/archives").glob("*.deb")}
    for name, version in SDK_624_JAMMY.items():
        assert debs.get(name) == version, (name, debs)
    assert all(v.endswith(".60204-139~22.04") for v in debs.values()), debs
    assert {"hsa-rocr", "rocm-language-runtime"} <= set(debs)


def test_releases_cannot_be_mixed(server, mirror, tmp_path):
    apt = Apt(tmp_path, [rocm(server, "6.2.4", "jammy"), rocm(server, "5.7.1", "jammy")],
              mirror / "rocm/rocm.gpg.key")
    apt.update()
    mixed = apt("apt-get", "install", "-s", "rocm-hip-sdk", "rocblas=3.1.0.50701-98~22.04")
    assert mixed.returncode != 0 and "unmet dependencies" in mixed.stdout + mixed.stderr
    # apt does not search older versions for the exact dependencies: the older meta alone cannot be installed
    # while the newer release is the candidate (as with AMD's repositories: pin the release instead).
    old = apt("apt-get", "install", "-s", "rocm-hip-sdk=5.7.1.50701-98~22.04")
    assert old.returncode != 0 and "but 6.2.4.60204-139~22.04 is to be installed" in old.stdout, old.stdout
    new = apt("apt-get", "install", "-s", "rocm-hip-sdk")
    installs = re.findall(r"^Inst (\S+) \((\S+) ", new.stdout, re.M)
    assert installs and all(".60204-139~22.04" in version for _, version in installs), installs


def test_versioned_packages_install_side_by_side(server, mirror, tmp_path):
    apt = Apt(tmp_path, [rocm(server, "6.2.4", "noble"), rocm(server, "6.2", "noble")],
              mirror / "rocm/rocm.gpg.key")
    apt.update()
    result = apt("apt-get", "install", "-s", "rocm-hip-sdk6.2.4", "rocm-hip-sdk6.2.0")
    assert result.returncode == 0, result.stdout + result.stderr
    installs = dict(re.findall(r"^Inst (\S+) \((\S+) ", result.stdout, re.M))
    assert installs["rocm-core6.2.4"] == "6.2.4.60204-139~24.04"
    assert installs["rocm-core6.2.0"] == "6.2.0.60200-66~24.04"
    assert not any(name in installs for name in SDK_624_JAMMY), "versioned names must pull versioned deps only"


KDB_PATTERN = {
    "miopenkernels": r"miopenkernels-gfx[0-9a-f]+-\d+kdb",
    "miopen-hip-cu": r"miopen-hip-gfx[0-9a-f]+-\d+kdb",
    "miopen-hip": r"miopen-hip-gfx[0-9a-f]+kdb",
}


@pytest.mark.parametrize("release", recipes.RELEASES, ids=lambda r: r["folder"])
def test_kdb_package_names_follow_each_series(server, mirror, tmp_path, release):
    codename = release["codenames"][-1]
    apt = Apt(tmp_path, [rocm(server, release["folder"], codename)], mirror / "rocm/rocm.gpg.key")
    apt.update()
    names = apt("apt-cache", "pkgnames").stdout.split()
    ver = release["version"]
    kdbs = sorted(n for n in names if "kdb" in n and not n.endswith(ver))
    expected_scheme = {"5.4.3": "miopenkernels", "5.6.1": "miopen-hip-cu"}.get(ver, "miopen-hip")
    assert kdbs and all(re.fullmatch(KDB_PATTERN[expected_scheme], n) for n in kdbs), kdbs
    release_key = tuple(map(int, ver.split(".")))
    assert ("miopen-hip-gfx942kdb" in kdbs) == (release_key >= (6, 0, 0)), kdbs
    assert ("miopen-hip-gfx950kdb" in kdbs) == (release_key >= (7, 0, 0)), kdbs
    assert all(f"{n}{ver}" in names for n in kdbs), "every kdb package has its versioned twin"
    shown = apt("apt-cache", "show", kdbs[0]).stdout
    assert "Depends: rocm-core (= " in shown


def test_every_package_says_it_is_a_fixture(apt624):
    names = apt624("apt-cache", "pkgnames").stdout.split()
    shown = apt624("apt-cache", "show", *names).stdout
    stanzas = [s for s in shown.split("\n\n") if s.strip()]
    assert len(stanzas) == len(names) > 50
    assert all("gpulab.rocm TEST FIXTURE" in s.split("Description", 1)[1] for s in stanzas)


def test_amd_smi_lib_only_in_6x(apt624, server, mirror, tmp_path):
    assert "amd-smi-lib" in apt624("apt-cache", "pkgnames").stdout.split()
    apt = Apt(tmp_path / "571", [rocm(server, "5.7.1", "focal")], mirror / "rocm/rocm.gpg.key")
    apt.update()
    assert "amd-smi-lib" not in apt("apt-cache", "pkgnames").stdout.split()
    assert "Depends: rocm-core (= 5.7.1.50701-98~20.04), rocm-smi-lib (= 6.0.0.50701-98~20.04)" in \
        apt("apt-cache", "show", "rocm-developer-tools").stdout.replace("\n", "")


def test_amdgpu_dkms_version_and_files(apt624, tmp_path):
    shown = apt624("apt-cache", "show", "amdgpu-dkms").stdout
    assert "Version: 1:6.8.5.60204-2044426.22.04" in shown
    assert "Depends: amdgpu-dkms-firmware (= 1:6.8.5.60204-2044426.22.04)" in shown
    deb = download(apt624, tmp_path, "amdgpu-dkms")
    listing = subprocess.run(["dpkg-deb", "-c", deb], capture_output=True, text=True, check=True).stdout
    assert "./usr/src/amdgpu-6.8.5-2044426.22.04/dkms.conf" in listing
    scripts = subprocess.run(["dpkg-deb", "-I", deb], capture_output=True, text=True, check=True).stdout
    assert "postinst" not in scripts, "the fixture driver must never run DKMS"


@pytest.mark.parametrize("codename, ubuntu", [("jammy", "22.04"), ("noble", "24.04")])
def test_amdgpu_exporter_in_the_exporters_own_repository(server, mirror, tmp_path, codename, ubuntu):
    """AMD's layout (device-metrics-exporter/apt/1.5.2), signed like the rest; the stand-in says it is a fixture,
    has AMD's paths and prints the config it is given."""
    apt = Apt(tmp_path, [f"{server['url']}/device-metrics-exporter/apt/1.5.2 {codename} main"],
              mirror / "rocm/rocm.gpg.key")
    apt.update()
    shown = apt("apt-cache", "show", "amdgpu-exporter").stdout
    assert f"Version: 1.5.2~{ubuntu}" in shown and "gpulab.rocm TEST FIXTURE" in shown.split("Description", 1)[1]
    deb = download(apt, tmp_path, "amdgpu-exporter")
    listing = subprocess.run(["dpkg-deb", "-c", deb], capture_output=True, text=True, check=True).stdout
    for path in ("./usr/local/bin/amd-metrics-exporter", "./usr/lib/systemd/system/amd-metrics-exporter.service",
                 "./etc/metrics/config.json"):
        assert path in listing
    assert "rwxr-xr-x root/root" in [line for line in listing.splitlines() if line.endswith("bin/amd-metrics-exporter")][0]
    subprocess.run(["dpkg-deb", "-x", deb, tmp_path / "x"], check=True)
    config = tmp_path / "config.json"
    config.write_text('{"ServerPort": 5001}\n')
    run = subprocess.run(["sh", tmp_path / "x/usr/local/bin/amd-metrics-exporter", "-amd-metrics-config", config],
                         capture_output=True, text=True, check=True)
    assert run.stdout == f"amd-metrics-exporter ({build_mirror.FIXTURE_NOTE}): config {config}\n" \
        '{"ServerPort": 5001}\n'


def test_files_live_under_versioned_prefix(apt624, tmp_path):
    for package, path in [("rocm-core", "opt/rocm-6.2.4/.info/version"), ("hipcc", "opt/rocm-6.2.4/bin/hipcc"),
                          ("hip-runtime-amd", "opt/rocm-6.2.4/lib/libamdhip64.so.6"),
                          ("rocblas", "opt/rocm-6.2.4/lib/librocblas.so.4"),
                          ("miopen-hip", "opt/rocm-6.2.4/lib/libMIOpen.so.1"),
                          ("miopen-hip-gfx90akdb", "opt/rocm-6.2.4/share/miopen/db/gfx90a.kdb"),
                          ("rocm-smi-lib", "opt/rocm-6.2.4/bin/rocm-smi"),
                          ("amd-smi-lib", "opt/rocm-6.2.4/bin/amd-smi")]:
        deb = download(apt624, tmp_path, package)
        listing = subprocess.run(["dpkg-deb", "-c", deb], capture_output=True, text=True, check=True).stdout
        paths = re.findall(r" \./(\S+)", listing)
        assert path in paths, (package, paths)
        assert all(p.startswith("opt/rocm-6.2.4") or p in ("opt/",) for p in paths), (package, paths)


# ---------------------------------------------------------------------------------------------------------------
# The /opt/rocm alternative

def run_maintainer_script(deb, script, args, tmp_path, root=None):
    """Run a maintainer script with a recording update-alternatives first on PATH; with root, the recording one
    also runs the real update-alternatives in that tree (--root)."""
    control = tmp_path / f"control-{deb.stem}"
    subprocess.run(["dpkg-deb", "-e", deb, control], check=True)
    fakebin = tmp_path / "fakebin"
    fakebin.mkdir(exist_ok=True)
    log = tmp_path / "alternatives.log"
    log.unlink(missing_ok=True)
    real = f'exec {shutil.which("update-alternatives")} --root {root} --log /dev/null "$@"\n' if root else ""
    (fakebin / "update-alternatives").write_text(f'#!/bin/sh\necho "$*" >> {log}\n{real}')
    (fakebin / "update-alternatives").chmod(0o755)
    env = dict(os.environ, PATH=f"{fakebin}:{os.environ['PATH']}")
    result = subprocess.run(["sh", control / script, *args], env=env, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    return log.read_text().splitlines() if log.exists() else []


@pytest.mark.parametrize("package", ["rocm-core", "rocm-core6.2.4"])
def test_rocm_core_registers_and_removes_the_opt_rocm_alternative(apt624, tmp_path, package):
    deb = download(apt624, tmp_path, package)
    assert run_maintainer_script(deb, "postinst", ["configure", ""], tmp_path) == \
        ["--install /opt/rocm rocm /opt/rocm-6.2.4 620000000"]
    assert run_maintainer_script(deb, "postinst", ["abort-upgrade", "1"], tmp_path) == []
    for action in ("remove", "upgrade", "deconfigure"):
        assert run_maintainer_script(deb, "prerm", [action], tmp_path) == ["--remove rocm /opt/rocm-6.2.4"]
    assert run_maintainer_script(deb, "prerm", ["failed-upgrade", "1"], tmp_path) == []


def test_alternative_priority_orders_releases():
    for priority, releases in ((build_mirror.alternatives_priority, recipes.RELEASES),
                               (build_mirror.core_priority, recipes.CORE_RELEASES)):
        priorities = [priority(r["version"]) for r in releases]
        assert priorities == sorted(priorities) and len(set(priorities)) == len(priorities)
        assert max(priorities) < 2**31


# ---------------------------------------------------------------------------------------------------------------
# Fake tools print the real captures

@pytest.fixture
def tools(apt624, tmp_path):
    root = tmp_path / "root"
    for package in ("rocminfo", "rocm-smi-lib", "amd-smi-lib", "hipcc"):
        subprocess.run(["dpkg-deb", "-x", download(apt624, tmp_path, package), root], check=True)
    profile = tmp_path / "profile"

    def run_tool(tool, *args, profile_name=None):
        env = dict(os.environ, GPULAB_FIXTURE_PROFILE_FILE=str(profile))
        if profile_name is None:
            profile.unlink(missing_ok=True)
        else:
            profile.write_text(profile_name + "\n")
        return subprocess.run([root / "opt/rocm-6.2.4/bin" / tool, *args], capture_output=True, env=env,
                              check=False)

    return run_tool


def capture(name):
    return (CAPTURES / name).read_bytes()


def test_profiles_print_captures_of_the_store_with_their_provenance():
    sources = (CAPTURES / "SOURCES.md").read_text()
    for name in build_mirror.profile_captures():
        assert (CAPTURES / name).is_file() and f"| `{name}` |" in sources, name


def test_rocminfo_prints_the_rx6900xt_capture(tools):
    result = tools("rocminfo", profile_name="rx6900xt")
    assert (result.returncode, result.stdout, result.stderr) == \
        (0, capture("rocminfo/gfx1030-rx6900xt-rocm6.4.txt"), b"")
    assert tools("rocminfo", "--support", profile_name="rx6900xt").stdout == result.stdout


@pytest.mark.parametrize("profile_name", [None, "no-gpu", "  no-gpu\t"])
def test_no_gpu_prints_the_real_failures(tools, profile_name):
    rocminfo = tools("rocminfo", profile_name=profile_name)
    assert (rocminfo.returncode, rocminfo.stdout) == (1, capture("rocminfo/fail-rock-not-loaded-azure-mi25.txt"))
    smi = tools("rocm-smi", "--showproductname", "--json", profile_name=profile_name)
    assert (smi.returncode, smi.stdout, smi.stderr) == \
        (0, b"", capture("rocm-smi/fail-driver-not-initialized-azure-mi25.txt"))
    amd = tools("amd-smi", "static", "--json", profile_name=profile_name)
    assert (amd.returncode, amd.stderr) == (255, capture("amd-smi/fail-version-wsl2-driver-not-initialized.txt"))
    agents = tools("rocm_agent_enumerator", profile_name=profile_name)
    assert (agents.returncode, agents.stdout) == (0, b"")


def test_rocm_smi_json_and_text(tools):
    assert tools("rocm-smi", "-a", "--json", profile_name="rx6600").stdout == \
        capture("rocm-smi/json-showallinfo-rx6600-navi23-jq-reformatted.json")
    assert tools("rocm-smi", profile_name="rx7600").stdout == capture("rocm-smi/default-rocm7-rx7600.txt")
    # --json falls back to the text capture when the profile has no JSON one
    assert tools("rocm-smi", "--json", profile_name="rx7600").stdout == capture("rocm-smi/default-rocm7-rx7600.txt")
    no_text = tools("rocm-smi", profile_name="rx6700xt")
    assert no_text.returncode == 2 and b"no capture" in no_text.stderr and b"json" in no_text.stderr


def test_amd_smi_subcommands(tools):
    for sub, name in (("static", "static-json-rx6600-navi23-proxmox-bare-array.json"),
                      ("metric", "metric-json-rx6600-navi23-proxmox-bare-array.json"),
                      ("topology", "topology-json-rx6600-single-gpu.json")):
        result = tools("amd-smi", sub, "--json", profile_name="rx6600")
        assert (result.returncode, result.stdout) == (0, capture(f"amd-smi/{name}"))
    assert tools("amd-smi", "list", profile_name="mi300x-vf").stdout == \
        capture("amd-smi/list-mi300x-vf-azure-rocm7.0.0.txt")
    assert tools("amd-smi", profile_name="mi300x-vf").stdout == \
        capture("amd-smi/default-table-mi300x-vf-azure-amdsmi26.0.0-rocm7.0.0.txt")
    missing = tools("amd-smi", "list", "--json", profile_name="mi300x-vf")
    assert missing.returncode == 2 and b"list.json" in missing.stderr and b"list.txt" in missing.stderr


def test_rocm_agent_enumerator_follows_rocminfo(tools):
    mi250x = tools("rocm_agent_enumerator", profile_name="mi250x")
    assert mi250x.stdout.decode().split() == ["gfx000"] * 4 + ["gfx90a"]  # 4 NUMA CPU agents, one GCD
    assert tools("rocm_agent_enumerator", profile_name="mi300x-vf").stdout == b"gfx000\ngfx942\n"
    assert tools("rocm_agent_enumerator", profile_name="rx7600").stdout == b"gfx000\ngfx1102\n"


def test_profile_without_capture_and_unknown_profile_say_so(tools):
    navi22 = tools("rocminfo", profile_name="rx6700xt")
    assert navi22.returncode == 2 and navi22.stdout == b"" and b"no capture" in navi22.stderr
    unknown = tools("rocminfo", profile_name="rx9999")
    assert unknown.returncode == 2 and b"unknown profile 'rx9999'" in unknown.stderr
    assert all(p.encode() in unknown.stderr for p in recipes.PROFILES)


def test_every_profile_capture_is_printed(tools):
    for profile_name, by_tool in recipes.PROFILES.items():
        for tool, keys in by_tool.items():
            for key, (path, rc, fd) in keys.items():
                args = {"default": [], "any": ["--json"] if tool != "rocminfo" else [], "json": ["--json"],
                        "text": []}.get(key)
                if args is None:  # amd-smi "<sub>.<fmt>"
                    sub, fmt = key.split(".")
                    args = ([] if sub == "default" else [sub]) + (["--json"] if fmt == "json" else [])
                result = tools(tool, *args, profile_name=profile_name)
                assert result.returncode == rc, (profile_name, tool, key)
                assert (result.stdout if fd == 1 else result.stderr) == capture(path), (profile_name, tool, key)


def test_hipcc_is_an_honest_stub(tools):
    version = tools("hipcc", "--version")
    assert version.returncode == 0 and version.stdout.startswith(b"HIP version: 6.2.41134-")
    assert b"TEST FIXTURE" in version.stdout
    compile_ = tools("hipcc", "-o", "x", "x.cpp")
    assert compile_.returncode == 1 and b"no compiler" in compile_.stderr


# ---------------------------------------------------------------------------------------------------------------
# Server: faults, hidden files

def http_status(url):
    try:
        with urllib.request.urlopen(url, timeout=5) as reply:
            return reply.status
    except urllib.error.HTTPError as err:
        return err.code


def test_fault_503_takes_a_release_down(server, faults, tmp_path, mirror):
    base = server["url"]
    assert http_status(f"{base}/rocm/apt/6.2.4/dists/jammy/InRelease") == 200
    faults.write_text("# the 6.2.4 repository is down\n503 /rocm/apt/6.2.4/\nnot a fault line\n")
    assert http_status(f"{base}/rocm/apt/6.2.4/dists/jammy/InRelease") == 503
    assert http_status(f"{base}/rocm/apt/5.7.1/dists/jammy/InRelease") == 200
    apt = Apt(tmp_path, [rocm(server, "6.2.4", "jammy")], mirror / "rocm/rocm.gpg.key")
    result = apt("apt-get", "update")
    assert "503" in result.stdout + result.stderr
    assert "rocm-core" not in apt("apt-cache", "pkgnames").stdout.split()
    faults.unlink()
    apt.update()


def test_fault_404_removes_one_package(apt624, faults, tmp_path):
    faults.write_text("404 /rocm/apt/6.2.4/pool/main/r/rocblas/\n")
    broken = apt624("apt-get", "install", "-y", "--download-only", "rocm-hip-sdk")
    assert broken.returncode != 0 and "404" in broken.stdout + broken.stderr
    assert "rocblas_4.2.4" in broken.stdout + broken.stderr
    faults.write_text("")
    healed = apt624("apt-get", "install", "-y", "--download-only", "rocm-hip-sdk")
    assert healed.returncode == 0, healed.stderr


def test_fault_delay_holds_requests(server, faults):
    base = server["url"]
    faults.write_text("delay 1 /rocm/apt/6.2.4/\n")
    began = time.monotonic()
    assert http_status(f"{base}/rocm/apt/6.2.4/dists/jammy/InRelease") == 200
    assert time.monotonic() - began >= 1
    began = time.monotonic()
    assert http_status(f"{base}/rocm/rocm.gpg.key") == 200
    assert time.monotonic() - began < 1


def test_the_alias_prefix_serves_the_same_tree(server):
    assert http_status(f"{server['url']}/lab_mirror~1/rocm/rocm.gpg.key") == 200


def test_hidden_files_are_not_served(server):
    assert http_status(f"{server['url']}/.stamp") == 404
    assert http_status(f"{server['url']}/rocm/rocm.gpg.key") == 200


# ---------------------------------------------------------------------------------------------------------------
# Builder cache

def test_second_build_is_a_cached_noop(mirror, request):
    stamp_before = (mirror / ".stamp").stat().st_mtime_ns
    fingerprint = (mirror / "fingerprint").read_text()
    started = time.monotonic()
    again = subprocess.run([sys.executable, MIRROR / "build_mirror.py", "--out", mirror], capture_output=True,
                           text=True, check=True)
    report(request, f"\ncached mirror build: {time.monotonic() - started:.2f} s wall")
    assert "is current" in again.stdout
    assert (mirror / ".stamp").stat().st_mtime_ns == stamp_before
    assert (mirror / "fingerprint").read_text() == fingerprint


def test_builder_reports_missing_tools_clearly(tmp_path):
    env = dict(os.environ, PATH=str(tmp_path))  # no gcc, gpg, apt-ftparchive
    result = subprocess.run([sys.executable, MIRROR / "build_mirror.py", "--out", tmp_path / "www"],
                            capture_output=True, text=True, env=env, check=False)
    assert result.returncode == 1
    assert "not found: install the Debian packages apt-utils, gnupg and gcc" in result.stderr
    assert "Traceback" not in result.stderr


def test_mirror_sh_start_env_stop(mirror, tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    (state / "www").symlink_to(mirror)  # the module's mirror is current: mirror.sh must not rebuild it
    env = dict(os.environ, GPULAB_MIRROR_STATE=str(state), PYTHON=sys.executable)

    def mirror_sh(*args):
        return subprocess.run([MIRROR / "mirror.sh", *args], env=env, capture_output=True, text=True, timeout=60,
                              check=False)

    try:
        started = mirror_sh("start")
        assert started.returncode == 0 and "is current" in started.stdout, started.stdout + started.stderr
        pid = (state / "pid").read_text()
        exports = dict(re.findall(r"^export (\w+)=(\S+)$", mirror_sh("env").stdout, re.M))
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+", exports["GPULAB_MIRROR_URL"])
        assert exports["GPULAB_MIRROR_FINGERPRINT"] == (mirror / "fingerprint").read_text().strip()
        assert exports["GPULAB_MIRROR_KEY_URL"] == exports["GPULAB_MIRROR_URL"] + "/rocm/rocm.gpg.key"
        with urllib.request.urlopen(exports["GPULAB_MIRROR_KEY_URL"], timeout=5) as reply:
            assert reply.read() == (mirror / "rocm/rocm.gpg.key").read_bytes()
        assert exports["GPULAB_MIRROR_CORE_URL"] == exports["GPULAB_MIRROR_URL"] + "/rocm/core/packages"
        assert exports["GPULAB_MIRROR_CORE_KEY_URL"] == exports["GPULAB_MIRROR_URL"] + "/rocm/gpg/packages.gpg"
        assert exports["GPULAB_MIRROR_CORE_FINGERPRINT"] == (mirror / "core-fingerprint").read_text().strip()
        with urllib.request.urlopen(exports["GPULAB_MIRROR_CORE_KEY_URL"], timeout=5) as reply:
            assert reply.read() == (mirror / "rocm/gpg/packages.gpg").read_bytes()
        assert http_status(exports["GPULAB_MIRROR_CORE_URL"] + "/ubuntu2404/dists/stable/InRelease") == 200
        (state / "faults").write_text("503 /\n")  # a mirror taken down on purpose is still "running"
        assert http_status(exports["GPULAB_MIRROR_KEY_URL"]) == 503
        again = mirror_sh("start")
        assert "reusing" in again.stdout and (state / "pid").read_text() == pid, again.stdout + again.stderr
    finally:
        stopped = mirror_sh("stop")
    assert stopped.returncode == 0 and not (state / "pid").exists()
    assert mirror_sh("status").returncode == 3
    assert mirror_sh("env").returncode == 1


def test_7x_and_core_drivers_carry_their_own_number(server, mirror, tmp_path):
    """amdgpu/30.x (legacy 7.x) and amdgpu/31.x (the Core releases' drivers, still in the legacy layout and signed
    with the legacy key) serve amdgpu-dkms with the 8-digit driver code (AMD's scheme), not a ROCm code."""
    drivers = {"30.30.3": "30300300", "30.30.4": "30300400", "31.40.1": "31400100", "31.50": "31500000"}
    apt = Apt(tmp_path, [amdgpu(server, folder, "noble") for folder in drivers], mirror / "rocm/rocm.gpg.key")
    apt.update()
    shown = apt("apt-cache", "show", "amdgpu-dkms").stdout
    for code in drivers.values():
        assert re.search(rf"^Version: 1:[0-9.]+\.{code}-\d+\.24\.04$", shown, re.M), shown
    assert not (mirror / "amdgpu/7.2.3").exists()


# ---------------------------------------------------------------------------------------------------------------
# The ROCm Core SDK stream (stable.repo.amd.com's layout, its own key)

CORE_101_GFX942 = ["amdrocm-core10.1", "amdrocm-core10.1-gfx942", "amdrocm-blas10.1", "amdrocm-blas10.1-gfx942",
                   "amdrocm-dnn10.1", "amdrocm-dnn10.1-gfx942", "amdrocm10.1-gfx942"]


def core_apt(server, root, key, distro="ubuntu2404"):
    """apt with AMD's deb822 source for the Core stream (the 10.0 install page), the key dearmored as AMD's page
    has users do (gpg --dearmor into /etc/apt/keyrings/amdrocm.gpg), and the roles' pin by origin."""
    keyring = root / "amdrocm.gpg"
    root.mkdir(parents=True, exist_ok=True)
    subprocess.run(["gpg", "--dearmor", "--batch", "--yes", "--output", keyring, key], check=True, capture_output=True,
                   env=dict(os.environ, GNUPGHOME=str(root)))
    sources = (f"Types: deb\nURIs: {server['url']}/rocm/core/packages/{distro}/\nSuites: stable\nComponents: main\n"
               f"Architectures: amd64\nSigned-By: {keyring}\n")
    return Apt(root, [], key, pin="stable.repo.amd.com", deb822=sources)


@pytest.fixture
def apt_core(server, mirror, tmp_path):
    apt = core_apt(server, tmp_path, mirror / "rocm/gpg/packages.gpg")
    apt.update()
    return apt


def test_core_stream_resolves_a_target_at_the_exact_release(apt_core, mirror):
    result = apt_core("apt-get", "install", "-s", "amdrocm10.1-gfx942")
    assert result.returncode == 0, result.stdout + result.stderr
    assert dict(re.findall(r"^Inst (\S+) \((\S+) ", result.stdout, re.M)) == dict.fromkeys(CORE_101_GFX942, "10.1.0-2")
    # Several X.Y side by side in one suite; 10.2 is the fixture-only release the roles' table does not know.
    policy = apt_core("apt-cache", "policy", "amdrocm10.0", "amdrocm10.1", "amdrocm10.2").stdout
    assert re.findall(r"^(\S+):\n  Installed: \(none\)\n  Candidate: (\S+)", policy, re.M) == \
        [("amdrocm10.0", "10.0.0-4"), ("amdrocm10.1", "10.1.0-2"), ("amdrocm10.2", "10.2.0-1")], policy
    assert re.search(r" 600 http://127\.0\.0\.1:\d+/rocm/core/packages/ubuntu2404 stable/main amd64 Packages", policy)
    assert "release o=stable.repo.amd.com,a=stable,n=stable,l=stable.repo.amd.com,c=main,b=amd64" in \
        apt_core("apt-cache", "policy").stdout
    everything = apt_core("apt-cache", "show", "amdrocm10.1").stdout
    assert all(f"amdrocm10.1-{gfx} (= 10.1.0-2)" in everything for gfx in recipes.CORE["targets"]), everything
    names = apt_core("apt-cache", "pkgnames").stdout.split()
    stanzas = [s for s in apt_core("apt-cache", "show", *names).stdout.split("\n\n") if s.strip()]
    assert len(stanzas) == len(names) and all("gpulab.rocm TEST FIXTURE" in s for s in stanzas)
    for distro in recipes.CORE["distros"]:  # each distribution has its own folder, the same packages
        pool = mirror / "rocm/core/packages" / distro / "pool/main/a"
        assert (pool / "amdrocm10.1/amdrocm10.1_10.1.0-2_amd64.deb").is_file()


def test_legacy_key_does_not_verify_the_core_stream(server, mirror, tmp_path):
    apt = core_apt(server, tmp_path, mirror / "rocm/rocm.gpg.key")
    result = apt("apt-get", "update")
    output = result.stdout + result.stderr
    assert "NO_PUBKEY" in output and "is not signed" in output, output
    assert not [n for n in apt("apt-cache", "pkgnames").stdout.split() if n.startswith("amdrocm")]
    keyring = tmp_path / "amdrocm.gpg"  # the other way round, with gpgv: every Core dist verifies with its own key
    subprocess.run(["gpg", "--dearmor", "--batch", "--yes", "--output", keyring, mirror / "rocm/gpg/packages.gpg"],
                   check=True, env=dict(os.environ, GNUPGHOME=str(tmp_path)))
    for distro in recipes.CORE["distros"]:
        dist = mirror / f"rocm/core/packages/{distro}/dists/stable"
        for args in ([dist / "InRelease"], [dist / "Release.gpg", dist / "Release"]):
            assert subprocess.run(["gpgv", "--keyring", keyring, *args], capture_output=True).returncode == 0


def test_core_packages_files_tools_and_the_opt_rocm_alternative(apt_core, mirror, tmp_path):
    root = tmp_path / "root"
    debs = {package: download(apt_core, tmp_path, package) for package in ("amdrocm-core10.0", "amdrocm-core10.1")}
    for deb in debs.values():
        subprocess.run(["dpkg-deb", "-x", deb, root], check=True)
    core = root / "opt/rocm/core-10.1"
    assert (core / ".info/version").read_text() == "10.1.0-2\n"
    assert sorted(p.name for p in (core / "bin").iterdir()) == ["amd-smi", "rocm_agent_enumerator", "rocminfo"]
    assert (root / "opt/rocm/core-10.0/bin/rocm-smi").is_file()  # 10.0 ships rocm-smi, the fixture's 10.1 does not
    assert sorted(p.name for p in root.iterdir()) == ["opt"]  # no ld.so.conf.d: not registered with ldconfig
    assert sorted(p.name for p in (root / "opt/rocm").iterdir()) == ["core-10.0", "core-10.1"]

    # A host moving from legacy: the legacy rocm-core's prerm drops the /opt/rocm link, then the Core packages'
    # postinst (real update-alternatives, in a --root tree) point /opt/rocm/{core,bin,lib} at the newest release.
    alt = tmp_path / "alt"
    (alt / "var/lib/dpkg/alternatives").mkdir(parents=True)
    (alt / "opt/rocm-7.2.4").mkdir(parents=True)
    legacy = mirror / "rocm/apt/7.2.4/pool/main/r/rocm-core/rocm-core_7.2.4.70204-43~24.04_amd64.deb"
    run_maintainer_script(legacy, "postinst", ["configure", ""], tmp_path, alt)
    assert os.readlink(alt / "opt/rocm") == "/etc/alternatives/rocm"
    run_maintainer_script(legacy, "prerm", ["remove"], tmp_path, alt)
    assert not os.path.lexists(alt / "opt/rocm")
    shutil.copytree(root / "opt", alt / "opt", symlinks=True, dirs_exist_ok=True)  # what dpkg unpacks

    def points():
        links = {name: os.readlink(alt / "opt/rocm" / name) for name in ("core", "bin", "lib")}
        return {name: os.readlink(alt / link.lstrip("/")) for name, link in links.items()}

    for package in ("amdrocm-core10.1", "amdrocm-core10.0"):  # 10.0 configured last: the newer release still wins
        run_maintainer_script(debs[package], "postinst", ["configure", ""], tmp_path, alt)
    assert points() == {"core": "/opt/rocm/core-10.1", "bin": "/opt/rocm/core-10.1/bin",
                        "lib": "/opt/rocm/core-10.1/lib"}
    run_maintainer_script(debs["amdrocm-core10.1"], "prerm", ["remove"], tmp_path, alt)
    assert points()["bin"] == "/opt/rocm/core-10.0/bin"

    # The fake tools print the captures, also when called through a /opt/rocm/bin-style link.
    (tmp_path / "optrocm").mkdir()
    (tmp_path / "optrocm/bin").symlink_to(core / "bin")
    profile = tmp_path / "profile"
    profile.write_text("rx6900xt\n")
    rocminfo = subprocess.run([tmp_path / "optrocm/bin/rocminfo"], capture_output=True, check=False,
                              env=dict(os.environ, GPULAB_FIXTURE_PROFILE_FILE=str(profile)))
    assert (rocminfo.returncode, rocminfo.stdout) == (0, capture("rocminfo/gfx1030-rx6900xt-rocm6.4.txt"))


def test_faults_reach_the_core_stream(server, faults):
    base = f"{server['url']}/rocm/core/packages"
    faults.write_text("503 /rocm/core/packages/debian12/\n")
    assert http_status(f"{base}/debian12/dists/stable/InRelease") == 503
    assert http_status(f"{base}/debian13/dists/stable/InRelease") == 200


def test_amd_smi_of_a_profile_without_its_capture_reaches_no_gpu(tools):
    # Every Core SDK release installs amd-smi; no amd-smi capture of an MI250X exists, so it prints the real output
    # of a host where it reaches no GPU (the no-gpu profile's), as the containers are.
    mi250x = tools("amd-smi", "static", "--json", profile_name="mi250x")
    nogpu = tools("amd-smi", "static", "--json", profile_name="no-gpu")
    assert (mi250x.returncode, mi250x.stderr) == (nogpu.returncode, nogpu.stderr) and mi250x.returncode == 255


# ---------------------------------------------------------------------------------------------------------------
# The fixture amd-smi's partition modes (issue 41), from the builder's own script and files (no mirror build)

@pytest.fixture
def partition_tool(tmp_path):
    prefix = tmp_path / "opt"
    release = recipes.RELEASES[-1]
    files = dict(build_mirror.fixture_files(str(prefix), "amd-smi"))
    files[f"{prefix}/bin/amd-smi"] = build_mirror.tool_script("amd-smi", release, str(prefix))
    for path, content in files.items():
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_bytes(content)
    (prefix / "bin/amd-smi").chmod(0o755)
    (tmp_path / "profile").write_text("mi300x-8x\n")
    env = dict(os.environ, GPULAB_FIXTURE_PROFILE_FILE=str(tmp_path / "profile"),
               GPULAB_FIXTURE_STATE_DIR=str(tmp_path / "state"))

    def run(*args, state_dir=None):
        if state_dir is not None:
            env["GPULAB_FIXTURE_STATE_DIR"] = state_dir
        return subprocess.run([prefix / "bin/amd-smi", *args], capture_output=True, env=env, check=False)

    return run


def test_partition_set_changes_what_static_partition_prints(partition_tool, tmp_path):
    modes = recipes.PARTITIONS["mi300x-8x"]
    static = partition_tool("static", "--partition")
    assert (static.returncode, static.stdout) == (0, capture(modes["static"][("SPX", "NPS1")]))
    # SPX+NPS1 -> CPX+NPS4 in the plan's order: CPX first (CPX+NPS1 between), then NPS4.
    cpx = partition_tool("set", "--gpu", "all", "--compute-partition", "CPX")
    assert (cpx.returncode, cpx.stdout) == (0, capture(modes["set_compute"]["CPX"]))
    assert partition_tool("static", "--partition").stdout == capture(modes["static"][("CPX", "NPS1")])
    nps4 = partition_tool("set", "--memory-partition", "NPS4")
    assert (nps4.returncode, nps4.stdout) == (0, capture(modes["set_memory"]["NPS4"]))
    assert partition_tool("static", "-p").stdout == capture(modes["static"][("CPX", "NPS4")])
    assert (tmp_path / "state/partition").read_text() == "CPX NPS4\n"
    # And back: NPS1 first (CPX+NPS1), then SPX.
    assert partition_tool("set", "-M", "NPS1").returncode == 0
    assert partition_tool("set", "-C", "SPX").stdout == capture(modes["set_compute"]["SPX"])
    assert partition_tool("static", "--partition").stdout == capture(modes["static"][("SPX", "NPS1")])


def test_partition_nps4_under_spx_moves_to_cpx_and_unknown_pairs_change_nothing(partition_tool, tmp_path):
    # AMD's guide: NPS4 alone from SPX+NPS1 moves the compute partition to CPX.
    assert partition_tool("set", "--memory-partition", "NPS4").returncode == 0
    assert (tmp_path / "state/partition").read_text() == "CPX NPS4\n"
    # SPX under NPS4 has no capture (SPX+NPS4 is invalid): refused, the pair stays.
    spx = partition_tool("set", "--compute-partition", "SPX")
    assert spx.returncode == 2 and b"no partition capture 'static-SPX-NPS4'" in spx.stderr
    dpx = partition_tool("set", "--compute-partition", "DPX")
    assert dpx.returncode == 2 and (tmp_path / "state/partition").read_text() == "CPX NPS4\n"
    # Without a writable state folder (not root): nothing changes.
    denied = partition_tool("set", "-C", "CPX", state_dir="/proc/gpulab-fixture")
    assert denied.returncode == 1 and b"needs root" in denied.stderr
    # The other commands keep their captures: this profile has none of `static --json`.
    assert partition_tool("static", "--json").returncode == 2


def test_partition_set_moves_the_sysfs_link_where_a_tree_per_pair_is_laid_out(partition_tool, tmp_path):
    state = tmp_path / "state"
    for pair in ("sysfs-SPX-NPS1", "sysfs-CPX-NPS1", "sysfs-CPX-NPS4"):
        (state / pair).mkdir(parents=True)
    assert partition_tool("set", "-C", "CPX").returncode == 0
    assert os.readlink(state / "sysfs") == "sysfs-CPX-NPS1"
    assert partition_tool("set", "-M", "NPS4").returncode == 0
    assert os.readlink(state / "sysfs") == "sysfs-CPX-NPS4"
    # A refused set leaves the link.
    assert partition_tool("set", "-C", "SPX").returncode == 2 and os.readlink(state / "sysfs") == "sysfs-CPX-NPS4"
