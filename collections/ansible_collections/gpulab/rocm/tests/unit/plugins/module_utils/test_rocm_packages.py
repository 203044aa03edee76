"""The package plan behind rocm_sdk (version switch, side by side, install source, uninstall) over real dpkg-query
and apt-cache madison outputs, and the apt failure classifier over real apt-get failures (fixtures/apt/SOURCES.md)."""

import os

import pytest
from hypothesis import given, strategies as st

from ansible_collections.gpulab.rocm.plugins.module_utils.planning import rocm_packages as rp

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "apt")
SDK = ["rocm-hip-sdk", "rocblas", "miopen-hip"]
DEBIAN13 = ["rocminfo", "rocm-smi", "amd-smi", "hipcc", "libamdhip64-dev", "librocblas-dev"]


def lines(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read().splitlines()


def spec(default, versions=(), kdb=("gfx90a",), source="amd", state="present", distro=()):
    return {
        "state": state, "source": source, "default": default, "versions": list(versions), "packages": SDK,
        "kdb_default": ["miopen-hip-%skdb" % gfx for gfx in kdb], "kdb_targets": list(kdb),
        "distro_packages": list(distro),
    }


def specs_by_name(install):
    return dict(item.split("=", 1) for item in install)


BOOKWORM_624 = lines("dpkg-query-bookworm-rocm6.2.4-plain.txt")
BOOKWORM_SBS = lines("dpkg-query-bookworm-rocm6.2.4-and-6.2.0-versioned.txt")
TRIXIE_DISTRO = lines("dpkg-query-trixie-distro-rocminfo-rocm-smi-amd-smi-hipcc.txt")
TRIXIE_624 = lines("dpkg-query-trixie-rocm6.2.4-plain.txt")
MADISON_571 = lines("madison-bookworm-rocm5.7.1-sources.txt")
MADISON_SBS = lines("madison-bookworm-rocm6.2.4-and-6.2-sources.txt")
MADISON_TRIXIE_AMD = lines("madison-trixie-rocm6.2.4-sources-distro-installed.txt")
MADISON_TRIXIE_DISTRO = lines("madison-trixie-no-amd-sources.txt")


@pytest.mark.parametrize("version, code", [
    ("4.2.4.60204-139~22.04", "60204"),
    ("6.2.41134.60204-139~22.04", "60204"),  # hip-runtime-amd: component version, then the code
    ("2.20.0.50701-98~22.04", "50701"),
    ("6.2.0.60200-66~24.04", "60200"),
    ("6.1.2-2", None),  # Debian's rocminfo
    ("5.7.1-6+deb13u1", None),  # Debian's hipcc
    ("1:6.8.5.60204-2044426.22.04", None),  # amdgpu-dkms: the driver is not rocm_sdk's
])
def test_amd_code(version, code):
    assert rp.amd_code(version) == code


def test_installed_amd_packages_of_a_converged_host():
    installed = rp.parse_installed(BOOKWORM_624)
    amd = dict((name, rp.amd_code(info["version"])) for name, info in installed.items() if rp.amd_code(info["version"]))
    assert set(amd.values()) == {"60204"}
    assert {"rocm-core", "rocm-hip-sdk", "rocminfo", "hipcc", "miopen-hip-gfx90akdb"} <= set(amd)
    assert all(info["installed"] for info in installed.values())


def test_switch_to_an_older_release_moves_every_package_in_one_request():
    plan = rp.plan(spec("5.7.1"), BOOKWORM_624, MADISON_571)
    assert plan["missing"] == [] and plan["prepurge"] == [] and plan["purge"] == []
    install = specs_by_name(plan["install"])
    installed_amd = [n for n, i in rp.parse_installed(BOOKWORM_624).items() if rp.amd_code(i["version"])]
    # The wanted ones first, then every installed ROCm package named at the new release (their dependants need
    # them at exactly that version); AMD's hipcc, not the distribution's 5.2.3-8 that madison also lists.
    assert plan["install"][:4] == ["%s=%s" % (n, install[n]) for n in SDK + ["miopen-hip-gfx90akdb"]]
    assert sorted(install) == sorted(installed_amd)
    assert set(rp.amd_code(v) for v in install.values()) == {"50701"}
    assert install["hipcc"] == "1.0.0.50701-98~22.04"
    assert plan["hold"] == SDK + ["miopen-hip-gfx90akdb"]
    assert plan["prefix"] == "/opt/rocm-5.7.1"
    assert not plan["download_first"]


def test_side_by_side_replaces_the_plain_packages_of_the_same_release():
    plan = rp.plan(spec("6.2.4", ["6.2.4", "6.2"]), BOOKWORM_624, MADISON_SBS)
    install = specs_by_name(plan["install"])
    assert sorted(install) == sorted(n + v for n in SDK + ["miopen-hip-gfx90akdb"] for v in ("6.2.4", "6.2.0"))
    assert install["rocm-hip-sdk6.2.0"] == "6.2.0.60200-66~22.04"
    # Plain 6.2.4 packages hold the same files as rocm-hip-sdk6.2.4 and friends: they go first, after a download.
    installed_amd = [n for n, i in rp.parse_installed(BOOKWORM_624).items() if rp.amd_code(i["version"])]
    assert sorted(plan["prepurge"]) == sorted(installed_amd)
    assert plan["download_first"] and not plan["prepurge_autoremove"]
    assert plan["purge"] == []
    assert plan["prefix"] == "/opt/rocm-6.2.4"


def test_steady_side_by_side_changes_nothing():
    plan = rp.plan(spec("6.2.4", ["6.2.4", "6.2"]), BOOKWORM_SBS, MADISON_SBS)
    assert plan["prepurge"] == [] and plan["purge"] == [] and not plan["download_first"]
    assert len(plan["install"]) == 8


def test_a_new_default_among_the_same_releases_only_moves_the_link():
    plan = rp.plan(spec("6.2", ["6.2.4", "6.2"]), BOOKWORM_SBS, MADISON_SBS)
    assert plan["prepurge"] == [] and plan["purge"] == []
    assert plan["prefix"] == "/opt/rocm-6.2.0"


def test_dropping_a_release_removes_all_its_packages():
    plan = rp.plan(spec("6.2.4", ["6.2.4"]), BOOKWORM_SBS, MADISON_SBS)
    installed = rp.parse_installed(BOOKWORM_SBS)
    assert sorted(plan["purge"]) == sorted(n for n, i in installed.items() if rp.amd_code(i["version"]) == "60200")
    assert "rocm-core6.2.0" in plan["purge"] and plan["prepurge"] == []
    assert all(name.endswith("6.2.4") for name in specs_by_name(plan["install"]))


def test_back_to_plain_names_swaps_the_versioned_packages_of_the_release():
    plan = rp.plan(spec("6.2.4"), BOOKWORM_SBS, MADISON_SBS)
    installed = rp.parse_installed(BOOKWORM_SBS)
    assert sorted(plan["prepurge"]) == sorted(n for n, i in installed.items() if rp.amd_code(i["version"]) == "60204")
    assert sorted(plan["purge"]) == sorted(n for n, i in installed.items() if rp.amd_code(i["version"]) == "60200")
    assert sorted(specs_by_name(plan["install"])) == sorted(SDK + ["miopen-hip-gfx90akdb"])
    assert plan["download_first"]


def test_from_the_distribution_to_amd():
    plan = rp.plan(spec("6.2.4", kdb=("gfx1030",), distro=DEBIAN13), TRIXIE_DISTRO, MADISON_TRIXIE_AMD)
    assert plan["prepurge"] == ["amd-smi", "hipcc", "libamdhip64-dev", "rocm-smi", "rocminfo"]
    assert plan["prepurge_autoremove"]  # their own dependencies (clang-17, libhsa-runtime64-1 ...) go too
    install = specs_by_name(plan["install"])
    # AMD's same-named packages are named at AMD's version, so the download before the purge resolves.
    assert install["rocminfo"] == "1.0.0.60204-139~24.04" and install["hipcc"] == "1.1.1.60204-139~24.04"
    assert install["miopen-hip-gfx1030kdb"] == "3.2.0.60204-139~24.04"
    assert plan["download_first"] and plan["purge"] == []


def test_from_amd_to_the_distribution():
    plan = rp.plan(spec("6.2.4", source="distro", distro=DEBIAN13), TRIXIE_624, MADISON_TRIXIE_DISTRO)
    assert plan["install"] == DEBIAN13 and plan["missing"] == []
    installed = rp.parse_installed(TRIXIE_624)
    assert sorted(plan["prepurge"]) == sorted(n for n, i in installed.items() if rp.amd_code(i["version"]))
    assert plan["download_first"] and plan["prefix"] is None


def test_a_distro_name_the_archive_lacks_is_missing():
    plan = rp.plan(spec("6.2.4", source="distro", distro=DEBIAN13 + ["miopen-hip"]), TRIXIE_624,
                   MADISON_TRIXIE_DISTRO)
    assert plan["missing"] == ["miopen-hip"]
    # The probe lists every name it asked apt about, with no version for one apt lacks: still missing.
    available = rp.parse_madison(MADISON_TRIXIE_DISTRO)
    available["miopen-hip"] = []
    plan = rp.plan_from(spec("6.2.4", source="distro", distro=DEBIAN13 + ["miopen-hip"]),
                        rp.parse_installed(TRIXIE_624), available)
    assert plan["missing"] == ["miopen-hip"] and "miopen-hip" not in plan["install"]


def test_uninstall_purges_every_release():
    plan = rp.plan(spec("6.2.4", state="absent"), BOOKWORM_SBS, [])
    installed = rp.parse_installed(BOOKWORM_SBS)
    assert sorted(plan["purge"]) == sorted(n for n, i in installed.items() if rp.amd_code(i["version"]))
    assert len(plan["purge"]) == 28 and not plan["purge_autoremove"] and plan["install"] == []


def test_uninstall_of_the_distribution_packages_takes_their_dependencies():
    plan = rp.plan(spec("6.2.4", state="absent", distro=DEBIAN13), TRIXIE_DISTRO, [])
    assert plan["purge"] == ["amd-smi", "hipcc", "libamdhip64-dev", "rocm-smi", "rocminfo"]
    assert plan["purge_autoremove"]


def test_missing_and_unpublished_packages():
    wanted = dict(spec("6.2.4", ["6.2.4", "6.2"], kdb=("gfx1102",)), packages=SDK + ["hipfft"])
    plan = rp.plan(wanted, BOOKWORM_SBS, MADISON_SBS)
    assert plan["missing"] == ["hipfft6.2.4 (ROCm 6.2.4)", "hipfft6.2.0 (ROCm 6.2.0)"]
    assert plan["unpublished"] == ["miopen-hip-gfx1102kdb6.2.4", "miopen-hip-gfx1102kdb6.2.0"]


def test_the_default_must_be_among_the_side_by_side_releases():
    with pytest.raises(ValueError, match=r"default ROCm release 6\.2\.4 is not among .*6\.2\.0.*rocm_versions"):
        rp.plan(spec("6.2.4", ["6.2"]), BOOKWORM_SBS, MADISON_SBS)


def test_a_malformed_release_in_the_list_is_rejected():
    with pytest.raises(ValueError, match="not a release number"):
        rp.query_names(spec("6.2.4", ["6.2.4", "6.2.x"]), BOOKWORM_SBS)


def test_query_names_cover_the_wanted_and_the_installed_rocm_packages():
    names = rp.query_names(spec("6.2.4", kdb=("gfx1030",), distro=DEBIAN13), TRIXIE_DISTRO)
    assert names[:4] == SDK + ["miopen-hip-gfx1030kdb"]
    assert {"rocminfo", "hipcc", "rocm-smi", "amd-smi", "libamdhip64-dev"} <= set(names)
    assert len(names) == len(set(names))


def test_half_installed_and_config_file_entries():
    # Rows written here in dpkg-query's format (states seen after the disk-full and dpkg-killed faults): unpacked
    # (iU) packages count as installed; a package removed with its configuration left (rc) is purged when it
    # belongs to a release no longer wanted; purged (pn) ones are ignored.
    rows = ["iU \trocm-core\t6.2.4.60204-139~24.04", "rc \trocm-core6.2.0\t6.2.0.60200-66~24.04",
            "pn \thipfft\t"]
    installed = rp.parse_installed(rows)
    assert installed["rocm-core"]["installed"] and not installed["rocm-core6.2.0"]["installed"]
    assert "hipfft" not in installed
    assert rp.plan(spec("6.2.4"), rows, MADISON_TRIXIE_AMD)["purge"] == ["rocm-core6.2.0"]


@pytest.mark.parametrize("fixture, kind, words", [
    ("apt-get-install-lock-held.txt", "lock", ["held by process 766 (python3)", "lock timeout"]),
    ("apt-get-install-no-space-on-opt.txt", "disk_full", ["No space left on device", "/opt", "next run"]),
    ("apt-get-install-dpkg-killed.txt", "dpkg_interrupted", ["exited unexpectedly", "dpkg --configure -a"]),
    ("apt-get-install-404-rocblas-pool.txt", "download", ["404", "rocblas", "nothing was installed"]),
])
def test_apt_failures_get_a_cause_and_a_fix(fixture, kind, words):
    result = rp.apt_failure("\n".join(lines(fixture)))
    assert result["kind"] == kind
    for word in words:
        assert word in result["reason"]


def test_an_unknown_apt_failure_keeps_its_last_line():
    assert rp.apt_failure("E: something new\n")["reason"] == "apt failed: E: something new"
    assert rp.apt_failure(None)["kind"] == "other"


@given(st.lists(st.text(max_size=80), max_size=30))
def test_parsers_never_raise(rows):
    rp.parse_installed(rows)
    rp.parse_madison(rows)
    rp.apt_failure("\n".join(rows))
