"""Release facts per the reference: directory spelling, version code, suites, kdb naming."""

import pytest

from ansible_collections.gpulab.rocm.plugins.module_utils import rocm_release as rr


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
