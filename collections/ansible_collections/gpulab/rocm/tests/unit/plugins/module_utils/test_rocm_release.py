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
    with pytest.raises(ValueError, match="6.2.4|5.3"):
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


def test_default_is_the_newest_release_of_the_table():
    from ansible_collections.gpulab.rocm.plugins.module_utils.planning import stack
    assert rr.newest_stable() == "7.2.3" == rr.known_7x()[-1]
    assert stack.DEFAULTS["rocm_version"] == rr.newest_stable()


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
    info = rr.release("7.2.4")
    assert info["amdgpu_dir"] is None and info["graphics_dir"] == "7.2.4"


@pytest.mark.parametrize("version", ["7.9", "7.13", "7.14.0", "10.0"])
def test_therock_releases_are_refused_saying_why(version):
    with pytest.raises(ValueError, match="TheRock.*not verified|TheRock.*has not verified"):
        rr.release(version)
