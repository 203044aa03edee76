"""The probe's parsers (module_utils/host/node_state.py) that no one phase owns: dpkg's status, whether systemd
runs the host, and the ROCm Core SDK's deb822 sources with the list files apt keeps for them."""

import shutil
import subprocess

import pytest

from ansible_collections.gpulab.rocm.plugins.module_utils.host import node_state as ns
from ansible_collections.gpulab.rocm.plugins.module_utils.planning import rocm_release


def test_dpkg_status_abbreviations():
    text = ("Package: a\nStatus: install ok installed\nVersion: 1\n\nPackage: b\nStatus: hold ok installed\n"
            "Version: 2\n\nPackage: c\nStatus: deinstall ok config-files\nVersion: 3\n\n"
            "Package: d\nStatus: install reinstreq half-configured\nVersion: 4\n\n"
            "Package: e\nStatus: purge ok not-installed\n")
    assert ns.parse_dpkg_status(text) == {"a": ["ii ", "1"], "b": ["hi ", "2"], "c": ["rc ", "3"], "d": ["iFR", "4"]}


def test_the_probe_says_whether_systemd_runs_the_host(tmp_path):
    # sd_booted(3): systemd made /run/systemd/system; rocm_metrics starts its units only there.
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "os-release").write_text('ID=debian\nNAME="Debian GNU/Linux"\nVERSION_ID="12"\n')
    assert ns.os_facts(str(tmp_path), "6.1.0", "x86_64")["systemd"] is False
    (tmp_path / "run" / "systemd" / "system").mkdir(parents=True)
    assert ns.os_facts(str(tmp_path), "6.1.0", "x86_64")["systemd"] is True


# --- the ROCm Core SDK's deb822 sources ---------------------------------------------------------------------------

CORE_SOURCES = ("# Managed by gpulab.rocm (role rocm_repo): ROCm Core SDK 10.1.0. Local changes are overwritten.\n"
                "X-Repo-Id: amdrocm-stable\nTypes: deb\n"
                "URIs: https://stable.repo.amd.com/rocm/core/packages/ubuntu2404/\nSuites: stable\nComponents: main\n"
                "Architectures: amd64\nSigned-By: /etc/apt/keyrings/amdrocm.gpg\n"
                "Enabled: yes\n")


def test_the_core_sources_read_as_one_line_sources_do():
    assert ns.sources_of(ns.CORE_SOURCES_FILE, CORE_SOURCES) == [{
        "options": {"signed-by": "/etc/apt/keyrings/amdrocm.gpg", "arch": "amd64"},
        "uri": "https://stable.repo.amd.com/rocm/core/packages/ubuntu2404/", "suite": "stable",
        "components": ["main"]}]
    # The same file's text read as a .list has no source: the name decides the form, as for apt.
    assert ns.sources_of("/etc/apt/sources.list.d/x.list", CORE_SOURCES) == []


def test_deb822_stanzas_apt_would_not_use_are_left_out():
    text = ("Types: deb-src\nURIs: http://a/\nSuites: s\nComponents: main\n\n"
            "Types: deb\nURIs: http://b/\nSuites: s\nComponents: main\nEnabled: no\n\n"
            "Types: deb deb-src\nURIs: http://c/ http://d/\nSuites: s t\nComponents: main\nSigned-By:\n"
            " -----BEGIN PGP PUBLIC KEY BLOCK-----\n .\n -----END PGP PUBLIC KEY BLOCK-----\n")
    sources = ns.deb822_sources(text)
    assert [(item["uri"], item["suite"]) for item in sources] == [
        ("http://c/", "s"), ("http://c/", "t"), ("http://d/", "s"), ("http://d/", "t")]
    assert all(item["options"] == {} for item in sources)  # an inline key is no keyring path


def test_the_list_file_of_the_core_sources_is_the_one_apt_names(tmp_path):
    # apt-get update --print-uris prints, without fetching anything, each index it would fetch and its list file.
    apt_get = shutil.which("apt-get")
    if apt_get is None:
        pytest.skip("needs apt-get")
    parts, lists = tmp_path / "parts", tmp_path / "lists"
    (lists / "partial").mkdir(parents=True)
    parts.mkdir()
    (parts / "amdrocm-stable.sources").write_text(CORE_SOURCES)
    (tmp_path / "sources.list").write_text("")
    argv = [apt_get, "update", "--print-uris", "-o", "Dir::Etc::SourceList=%s" % (tmp_path / "sources.list"),
            "-o", "Dir::Etc::SourceParts=%s/" % parts, "-o", "Dir::State::Lists=%s/" % lists]
    printed = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    names = [line.split()[1] for line in printed.splitlines() if line.startswith("'")]
    found = ns.apt_lists(str(tmp_path), {ns.CORE_SOURCES_FILE: CORE_SOURCES})["sources"]
    assert [item["file"] for item in found] == [names[0]] == [
        "stable.repo.amd.com_rocm_core_packages_ubuntu2404_dists_stable_InRelease"]
    assert found[0]["exists"] is False
    (tmp_path / "var/lib/apt/lists").mkdir(parents=True)
    (tmp_path / "var/lib/apt/lists" / names[0]).write_text("")
    assert ns.apt_lists(str(tmp_path), {ns.CORE_SOURCES_FILE: CORE_SOURCES})["sources"][0]["exists"] is True


def test_the_probe_reads_the_core_sources_and_both_keyrings():
    assert ns.CORE_SOURCES_FILE in ns.MANAGED_FILES and ns.CORE_SOURCES_FILE in ns.ROCM_SOURCES_FILES
    assert ns.CORE_KEYRING == rocm_release.CORE_KEYRING
