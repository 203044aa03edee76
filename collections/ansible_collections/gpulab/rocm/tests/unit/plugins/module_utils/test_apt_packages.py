# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""apt_packages (what gpulab.rocm.apt_packages runs and reads) over real apt-get, apt-mark and dpkg-query output
captured in a Debian 12 container against the fixture ROCm mirror (fixtures/apt/apt-packages-bookworm.txt,
capture-apt-packages.sh; SOURCES.md)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible_collections.gpulab.rocm.plugins.module_utils.apt import apt_errors
from ansible_collections.gpulab.rocm.plugins.module_utils.apt import apt_packages as ap

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "apt")
V = "6.2.4.60204-139~22.04"


def section(title):
    """One command's output from the capture (between its ===== header and the next)."""
    with open(os.path.join(FIXTURES, "apt-packages-bookworm.txt")) as handle:
        parts = handle.read().split("===== ")
    found = [part.split("\n", 1)[1] for part in parts if part.startswith(title)]
    assert len(found) == 1, title
    return found[0]


def test_simulated_install_lists_every_package_at_its_version():
    sim = ap.parse_simulation(section("apt-get --simulate install rocm-hip-sdk="))
    assert len(sim["install"]) == 13 and sim["install"]["rocm-hip-sdk"] == V
    assert sim["install"]["hip-runtime-amd"] == "6.2.41134.60204-139~22.04"
    assert sim["remove"] == [] and sim["purge"] == [] and len(sim["configure"]) == 13


def test_simulated_purge_names_the_dependants_with_their_trailing_brackets():
    sim = ap.parse_simulation(section("apt-get --simulate purge rocm-core\n"))
    assert sim["install"] == {} and len(sim["purge"]) == 13
    assert "rocblas" in sim["purge"] and "miopen-hip" in sim["purge"]


def test_simulation_of_an_unknown_package_fails_with_apts_line():
    text = section("apt-get --simulate install of a package no source has")
    assert ap.parse_simulation(text)["install"] == {}
    assert apt_errors.classify(text)["kind"] == "not_found"


def test_simulation_blocked_by_holds_reads_as_a_dependency_problem():
    text = section("apt-get --simulate purge rocm-core while rocm-core and rocblas are held")
    assert ap.parse_simulation(text) == {"install": {}, "remove": [], "purge": [], "configure": []}
    assert apt_errors.classify(text)["kind"] == "dependencies"


def test_real_install_and_purge_say_what_dpkg_did():
    done = ap.parse_done(section("apt-get install rocm-hip-sdk="))
    assert len(done["installed"]) == 13 and done["installed"]["rocm-core"] == V and done["removed"] == []
    # dpkg ends its lines with a carriage return (removed from the fixture): the same result with them.
    assert ap.parse_done(section("apt-get install rocm-hip-sdk=").replace("\n", "\r\n")) == done
    gone = ap.parse_done(section("apt-get purge rocm-core"))
    assert gone["installed"] == {} and len(gone["removed"]) == 13 and "rocm-core" in gone["removed"]


def test_dpkg_status_of_named_packages_one_unknown():
    status = ap.parse_status(section("dpkg-query of named packages"))
    assert status == {"rocblas": ("ii", "4.2.4.60204-139~22.04"), "rocm-core": ("ii", V), "rocm-hip-sdk": ("ii", V)}
    held = ap.parse_status(section("apt-mark hold rocm-core rocblas"))
    assert held["rocm-core"] == ("hi", V)


def test_plan_installs_only_what_is_missing_or_at_another_version():
    status = ap.parse_status(section("dpkg-query of named packages"))
    items = ap.parse_items(["rocm-core=%s" % V, "rocblas=4.2.3.60203-1~22.04", "hipfft", "rocm-hip-sdk"], "install")
    todo = ap.plan(status, install=items)
    assert todo["install"] == ["rocblas=4.2.3.60203-1~22.04", "hipfft"]


def test_plan_of_a_converged_host_is_empty():
    status = ap.parse_status(section("apt-mark hold rocm-core rocblas"))
    todo = ap.plan(status, install=ap.parse_items(["rocm-core=%s" % V], "install"),
                   holds={"rocm-core": "hold", "rocblas": "hold", "hipfft": "hold"})
    assert not any(todo.values())


def test_plan_holds_releases_and_removes():
    status = {"aa": ("hi", "1"), "bb": ("ii", "1"), "cc": ("rc", "1"), "dd": ("un", ""), "ee": ("iU", "1")}
    todo = ap.plan(status, remove=ap.parse_items(["bb", "cc", "dd"], "remove"), purge=True,
                   holds={"aa": "install", "bb": "hold", "dd": "hold"})
    assert todo["remove"] == ["bb", "cc"] and todo["hold"] == ["bb"] and todo["unhold"] == ["aa"]
    # Without purge a package in config-files state is already removed.
    assert ap.plan(status, remove=[("cc", None)])["remove"] == []
    # A package removed first (AMD's rocminfo before Debian's, same name) is installed again after.
    assert ap.plan(status, install=[("bb", None)], remove_first=[("bb", None)])["install"] == ["bb"]
    assert ap.plan(status, install=[("bb", None)])["install"] == []
    # dpkg left ee unpacked: installing it again lets apt finish it.
    assert ap.plan(status, install=[("ee", None)])["install"] == ["ee"]


@pytest.mark.parametrize("value", ["-o", "rocm-core=", "Rocm", "rocm core", "rocm-core=6.2\n", "a*", "../x", 7])
def test_items_that_are_not_package_names_are_refused_naming_the_option(value):
    with pytest.raises(ValueError, match="^install holds values"):
        ap.parse_items([value], "install")


def test_holds_values_are_checked():
    with pytest.raises(ValueError, match="hold or install"):
        ap.check_holds({"rocm-core": "purge"})
    ap.check_holds({"rocm-core": "hold", "rocblas": "install"})


def test_argv_is_a_list_with_the_lock_timeout_confold_and_an_end_of_options():
    argv = ap.install_argv(["rocm-core=%s" % V], 3, simulate=True, downgrade=True, held=True)
    assert argv[:2] == ["apt-get", "install"] and "DPkg::Lock::Timeout=3" in argv and "--simulate" in argv
    assert "Dpkg::Options::=--force-confold" in argv and "--no-install-recommends" in argv
    assert argv[-2:] == ["--", "rocm-core=%s" % V]
    assert ap.remove_argv(["x"], 5, purge=True)[:2] == ["apt-get", "purge"]
    update = ap.update_argv(60, "/tmp/d")
    assert "Dir::Etc::SourceParts=/tmp/d" in update and "APT::Get::List-Cleanup=0" in update


def test_lock_held_output_names_the_holder():
    with open(os.path.join(FIXTURES, "apt-get-install-lock-held.txt")) as handle:
        result = apt_errors.classify(handle.read())
    assert result["kind"] == "lock" and "held by process 766 (python3)" in result["reason"]


def test_lists_freshness():
    assert ap.lists_fresh([100.0, 900.0], 1000.0, 3600)
    assert not ap.lists_fresh([100.0], 5000.0, 3600)
    assert not ap.lists_fresh([], 1000.0, 3600) and not ap.lists_fresh([999.0], 1000.0, 0)
    assert ap.release_file("h_rocm_dists_jammy_InRelease") and not ap.release_file("h_jammy_main_Packages")


def test_a_version_pattern_is_pinned_to_the_newest_matching_offer():
    # rocm_driver's amdgpu-dkms=*.60204-* (apt-get itself answers "Version '*.60204-*' for 'amdgpu-dkms' was not
    # found"); the offers as apt-cache madison lists them, newest first.
    items = ap.parse_items(["amdgpu-dkms=*.60204-*", "linux-headers-6.1.0-28-amd64", "rocm-core=%s" % V], "install")
    offered = {"amdgpu-dkms": ["1:6.8.5.60300-2084815.22.04", "1:6.8.5.60204-2044426.22.04",
                               "1:6.8.5.60204-2000000.22.04"]}
    resolved, unmatched = ap.resolve(items, offered)
    assert resolved == [("amdgpu-dkms", "1:6.8.5.60204-2044426.22.04"), ("linux-headers-6.1.0-28-amd64", None),
                        ("rocm-core", V)] and unmatched == []
    assert ap.resolve(items, {})[1] == ["amdgpu-dkms=*.60204-*"]
    # An installed version matching the pattern needs nothing.
    status = {"amdgpu-dkms": ("ii", "1:6.8.5.60204-2044426.22.04")}
    assert ap.plan(status, install=items[:1])["install"] == []
    assert ap.plan({"amdgpu-dkms": ("ii", "1:6.8.5.60300-1.22.04")}, install=items[:1])["install"] == [
        "amdgpu-dkms=*.60204-*"]
