"""Release facts per the reference: directory spelling, version code, suites, kdb naming."""

import pytest

from ansible_collections.gpulab.rocm.plugins.module_utils.planning import rocm_release as rr


@pytest.mark.parametrize("version, repo_dir, suffix, code", [
    ("6.2.4", "6.2.4", "6.2.4", "60204"),
    ("6.2", "6.2", "6.2.0", "60200"),
    ("6.2.0", "6.2", "6.2.0", "60200"),
    ("5.7.1", "5.7.1", "5.7.1", "50701"),
    ("7.0.2", "7.0.2", "7.0.2", "70002"),
])
def test_directory_suffix_and_code(version, repo_dir, suffix, code):
    info = rr.release(version)
    assert (info["repo_dir"], info["package_suffix"], info["code"]) == (repo_dir, suffix, code)
    assert info["prefix"] == "/opt/rocm-" + suffix


@pytest.mark.parametrize("version, suites", [
    ("5.7.1", ["focal", "jammy"]),
    ("6.1.3", ["focal", "jammy"]),
    ("6.2.0", ["jammy", "noble"]),  # focal removed during 6.2.0
    ("6.2.4", ["jammy", "noble"]),
])
def test_suites_per_series(version, suites):
    assert rr.release(version)["ubuntu_suites"] == suites


@pytest.mark.parametrize("version, scheme", [
    ("5.4.3", "miopenkernels-{gfx}-{cus}kdb"),
    ("5.6.1", "miopen-hip-{gfx}-{cus}kdb"),
    ("5.7.1", "miopen-hip-{gfx}kdb"),
    ("6.2.4", "miopen-hip-{gfx}kdb"),
])
def test_kdb_scheme(version, scheme):
    assert rr.release(version)["kdb_scheme"] == scheme


@pytest.mark.parametrize("bad", ["6", "6.x", "latest", "6.2.4.1", "", "v6.2", "5.2.3"])
def test_bad_versions_are_refused_with_the_accepted_form(bad):
    with pytest.raises(ValueError, match="10.1.0|5.3"):
        rr.release(bad)


@pytest.mark.parametrize("dist, ver, rocm, suite", [
    ("Debian", "12", "6.2.4", "jammy"),
    ("Debian", "13", "6.2.4", "noble"),
    ("Ubuntu", "22.04", "5.7.1", "jammy"),
    ("Ubuntu", "20.04", "6.1.3", "focal"),
])
def test_apt_suite(dist, ver, rocm, suite):
    assert rr.apt_suite(dist, ver, rocm) == suite


def test_suite_the_release_does_not_publish():
    with pytest.raises(ValueError, match="ROCm 5.7.1 publishes no noble suite"):
        rr.apt_suite("Debian", "13", "5.7.1")


def test_unknown_os():
    with pytest.raises(ValueError, match="Fedora 40 has no ROCm apt suite"):
        rr.apt_suite("Fedora", "40", "6.2.4")


def test_override_wins():
    assert rr.apt_suite("Fedora", "40", "6.2.4", override="jammy") == "jammy"


# The 7.x release table against the facts it cites (module_utils/planning/rocm_release.py names each source).
@pytest.mark.parametrize("version, repo_dir, graphics_dir, amdgpu_dir", [
    ("7.0.1", "7.0.1", "7.0.1", "30.10.1"),   # ROCm/amdgpu-docs conf.py for 7.0.1
    ("7.0.2", "7.0.2", "7.0.2", "30.10.2"),   # graphics/7.0.2/ubuntu in ROCm/hipThreads' README; driver of 10 Oct 2025
    ("7.2.1", "7.2.1", "7.2.1", "30.30.2"),   # amdgpu-docs PR #97 (before)
    ("7.2.3", "7.2.3", "7.2.3", "30.30.3"),   # amdgpu-docs PR #97 (after) and conf.py
    ("7.0", "7.0", "7.0", "30.10"),           # a .0 release: two-component ROCm and driver directories
    ("6.2.4", "6.2.4", None, "6.2.4"),        # up to 6.4 the driver directory is the ROCm one, no graphics repo
])
def test_7x_directories(version, repo_dir, graphics_dir, amdgpu_dir):
    info = rr.release(version)
    assert (info["repo_dir"], info["graphics_dir"], info["amdgpu_dir"]) == (repo_dir, graphics_dir, amdgpu_dir)


def test_7x_suites_debian_mapping_and_code():
    info = rr.release("7.2.3")
    assert info["ubuntu_suites"] == ["jammy", "noble"]
    assert info["code"] == "70203" and info["prefix"] == "/opt/rocm-7.2.3"
    assert rr.apt_suite("Debian", "12", "7.2.3") == "jammy" and rr.apt_suite("Debian", "13", "7.2.3") == "noble"
    assert info["kdb_scheme"] == "miopen-hip-{gfx}kdb"
    # amdgpu-docs: Ubuntu's driver line is arch=amd64,i386, Debian's arch=amd64.
    assert info["driver_architectures"] == {"Ubuntu": "amd64,i386", "Debian": "amd64"}


@pytest.mark.parametrize("version, index", [
    ("6.2.4", "rocm6.2.4"), ("6.2", "rocm6.2"), ("7.1.1", "rocm7.1"), ("7.2.3", "rocm7.2")])
def test_pytorch_index(version, index):
    assert rr.release(version)["pytorch_index"] == index


def test_default_is_the_newest_production_release_of_the_table():
    from ansible_collections.gpulab.rocm.plugins.module_utils.planning import stack
    assert rr.newest_stable() == "10.1.0" == rr.known_core()[-1]
    assert stack.DEFAULTS["rocm_version"] == rr.newest_stable()
    # The legacy stream ends at 7.2.4 with driver 30.30.4 (the last legacy release; AMD's Core SDK install pages
    # say to uninstall "ROCm 7.2.4 or older").
    assert rr.newest_legacy() == "7.2.4" and rr.release("7.2.4")["amdgpu_dir"] == "30.30.4"


@pytest.mark.parametrize("directory, code", [("30.10.2", "30100200"), ("30.10", "30100000"), ("6.2.4", "60204")])
def test_driver_code(directory, code):
    # amdgpu-dkms 6.10.5.30100200-2109964.24.04 is 30.10.2 (AMD's blog on the driver version scheme).
    assert rr.driver_code(directory) == code


def test_driver_too_old_names_the_table_answer():
    text = rr.driver_problem("7.2.3", "6.4.3")
    assert "too old for ROCm 7.2.3" in text and "30.10 or later" in text and "30.30.3" in text
    assert rr.driver_problem("7.2.3", "30.10.2") is None  # the 7.2.2 notes list 30.10.x as supported
    assert rr.driver_problem("6.2.4", "6.2.4") is None
    assert "is not a driver version such as 30.30.3" in rr.driver_problem("7.2.3", "latest")


def test_a_7x_release_outside_the_table_has_no_driver_directory():
    info = rr.release("7.2.5")
    assert info["amdgpu_dir"] is None and info["graphics_dir"] == "7.2.5" and not info["known"]


@pytest.mark.parametrize("version", ["7.9", "7.10.0", "7.13"])
def test_the_previews_are_refused_naming_the_production_releases(version):
    with pytest.raises(ValueError, match=r"technology preview.*7\.14\.0, 7\.14\.1, 10\.0\.0, 10\.1\.0.*7\.2\.4"):
        rr.release(version)


# Each Core row against its cited facts (rocm_release.CORE_RELEASES' comment; rocm-reference.md 13).
@pytest.mark.parametrize("version, url, key_url, driver, oldest", [
    ("7.14.0", "https://repo.amd.com/rocm/packages-multi-arch",
     "https://repo.amd.com/rocm/packages-multi-arch/gpg/rocm.gpg", "31.40.1", "30.10"),
    ("7.14.1", "https://repo.amd.com/rocm/packages-multi-arch",
     "https://repo.amd.com/rocm/packages-multi-arch/gpg/rocm.gpg", "31.40.1", "30.10"),
    ("10.0.0", "https://stable.repo.amd.com/rocm/core/packages", "https://stable.repo.amd.com/rocm/gpg/packages.gpg",
     "31.50", "31.50"),
    ("10.1", "https://stable.repo.amd.com/rocm/core/packages", "https://stable.repo.amd.com/rocm/gpg/packages.gpg",
     "31.50", "31.50"),
])
def test_the_core_releases_carry_their_repository_driver_and_layout(version, url, key_url, driver, oldest):
    info = rr.release(version)
    series = "%d.%d" % (info["major"], info["minor"])
    assert info["stream"] == "core" and info["known"]
    assert (info["core_url"], info["core_key_url"]) == (url, key_url)
    assert (info["amdgpu_dir"], info["amdgpu_min"]) == (driver, oldest)
    assert info["prefix"] == "/opt/rocm/core-" + series and info["package_suffix"] == series
    assert info["code"] is None and info["repo_dir"] is None and info["graphics_dir"] is None
    assert "gfx942" in info["targets"] and "gfx1153" in info["targets"] and len(info["targets"]) == 15
    # The amdgpu driver keeps the 8-digit code in its DKMS version (6.19.14.31400000 is 31.40.0).
    assert rr.driver_code(driver) == {"31.40.1": "31400100", "31.50": "31500000"}[driver]


def test_the_core_key_is_pinned_and_debian_has_its_own_folders():
    assert rr.CORE_FINGERPRINTS == ("D0F004A0025A1145C7807FCD0701EAC4D5E02107",)
    assert rr.core_distro("Debian", "12.8") == "debian12" and rr.core_distro("Debian", "13") == "debian13"
    assert rr.core_distro("Ubuntu", "24.04") == "ubuntu2404"
    with pytest.raises(ValueError, match="Ubuntu 20.04 has no ROCm Core SDK repository.*Debian 12"):
        rr.core_distro("Ubuntu", "20.04")


def test_a_core_release_the_table_lacks_has_its_line_s_repository_and_no_driver():
    newer, patch = rr.release("10.2.0"), rr.release("7.14.2")
    assert not newer["known"] and newer["targets"] is None and newer["amdgpu_dir"] is None
    assert newer["core_url"] == "https://stable.repo.amd.com/rocm/core/packages"
    assert patch["core_url"] == "https://repo.amd.com/rocm/packages-multi-arch"


@pytest.mark.parametrize("version, driver, verdict", [
    ("10.1.0", "31.50", None), ("10.1.0", "31.50.2", None), ("10.1.0", "31.40.1", "too old"),
    ("10.1.0", "31.60", "newer than ROCm 10.1.0"), ("7.14.0", "30.10", None), ("7.14.0", "31.40.1", None),
    ("7.14.1", "31.40.2", "newer than ROCm 7.14.1"), ("7.14.0", "30.30.4", None),
])
def test_the_core_driver_window_refuses_too_old_and_too_new(version, driver, verdict):
    text = rr.driver_problem(version, driver)
    assert (text is None) if verdict is None else (verdict in text and "rocm_repo_amdgpu_version" in text)


# --- the kernel range of each driver line (rocm_driver's guard) ------------------------------------------------------

def test_every_driver_the_table_installs_has_a_kernel_range():
    drivers = [directory for _version, directory in rr.RELEASES_7] + [row[3] for row in rr.CORE_RELEASES]
    assert sorted(set(rr.driver_line(d) for d in drivers)) == ["30.10", "30.20", "30.30", "31.40", "31.50"]
    for directory in drivers:
        row = rr.kernel_range(directory)
        assert row is not None and rr.series_key(row["oldest"]) <= rr.series_key(row["newest"])
        assert row["known"] in ("documented", "tested", "inferred") and row["source"]
        # An inferred row says so in its source, as the project marks what it did not verify.
        assert (row["known"] == "inferred") == row["source"].startswith("INFERRED")
    # A ROCm-numbered driver (up to 6.4) has no row: its kernels are not checked.
    assert rr.kernel_range("6.2.4") is None and rr.driver_line("6.2.4") is None and rr.kernel_range(None) is None


@pytest.mark.parametrize("directory, newest, dkms", [
    ("30.10.2", "6.14", "6.14.14"),
    ("30.20.1", "6.17", "6.16.6"),
    ("30.30.4", "6.17", "6.16.13"),
    ("31.40.1", "7.0", "6.19.14"),
    ("31.50", "7.0", None),
])
def test_the_newest_kernel_of_each_driver_line(directory, newest, dkms):
    row = rr.kernel_range(directory)
    assert (row["newest"], row["dkms"], row["oldest"]) == (newest, dkms, "5.15")


def test_the_driver_lines_that_build_on_a_kernel_name_their_releases():
    assert rr.lines_for_kernel("7.0") == [("31.40", ["7.14.0", "7.14.1"]), ("31.50", ["10.0.0", "10.1.0"])]
    assert [line for line, _releases in rr.lines_for_kernel("6.17")] == ["30.20", "30.30", "31.40", "31.50"]
    assert rr.lines_for_kernel("7.1") == [] and rr.lines_for_kernel("5.4") == []
    assert rr.series_key("6.12.43+deb13-amd64") == (6, 12) and rr.series_key("custom") is None
