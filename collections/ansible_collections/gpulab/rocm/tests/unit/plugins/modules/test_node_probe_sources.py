"""node_probe's view of the apt sources the roles manage: the ROCm Core SDK's deb822 .sources beside rocm.list and
amdgpu.list, the keyrings their signed-by names (a real key made by gpg for the run), and apt's lists of their
sources. The probe's paths are pointed at a test folder; nothing outside it is read."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpulab.rocm.plugins.module_utils.host import node_state as ns
from ansible_collections.gpulab.rocm.plugins.modules import node_probe


def test_the_probe_reads_the_core_sources_and_the_keyrings_they_name(tmp_path, monkeypatch, key):
    _path, fpr, binary = key
    etc = tmp_path / "etc"
    etc.mkdir()
    core_sources = etc / "amdrocm-stable.sources"
    legacy_keyring, core_keyring, lab_keyring = etc / "rocm.gpg", etc / "amdrocm.gpg", etc / "lab-amdrocm.gpg"
    lab_keyring.write_bytes(binary)
    # A lab's own keyring path in Signed-By: read because the managed file names it.
    core_sources.write_text("# Managed by gpulab.rocm\nX-Repo-Id: amdrocm-stable\nTypes: deb\n"
                            "URIs: http://127.0.0.1:9/core/debian12/\nSuites: stable\nComponents: main\n"
                            "Architectures: amd64\nSigned-By: %s\nEnabled: yes\n" % lab_keyring)
    managed = (str(etc / "rocm.list"), str(etc / "amdgpu.list"), str(core_sources))
    monkeypatch.setattr(ns, "ROCM_SOURCES_FILES", managed)
    monkeypatch.setattr(ns, "MANAGED_FILES", managed)
    monkeypatch.setattr(ns, "KEYRING", str(legacy_keyring))
    monkeypatch.setattr(ns, "CORE_KEYRING", str(core_keyring))
    monkeypatch.setattr(ns, "APT_JOURNAL", str(tmp_path / "journal"))
    probe = node_probe.Probe.__new__(node_probe.Probe)
    probe.node = {}
    probe.files()
    assert probe.node["files"][str(core_sources)]["content"].startswith("# Managed by gpulab.rocm\n")
    keyrings = probe.node["keyrings"]
    # Both streams' default keyrings are read though absent; the lab's one from the .sources' Signed-By.
    assert keyrings[str(legacy_keyring)]["exists"] is False and keyrings[str(core_keyring)]["exists"] is False
    assert keyrings[str(lab_keyring)]["fingerprints"] == [fpr] and keyrings[str(lab_keyring)]["clean"] is True
    # apt's list of the .sources' source, as apt() reports it for rocm.list.
    lists = ns.apt_lists(str(tmp_path), {str(core_sources): core_sources.read_text()})["sources"]
    assert [(item["uri"], item["suite"], item["file"]) for item in lists] == [
        ("http://127.0.0.1:9/core/debian12/", "stable", "127.0.0.1:9_core_debian12_dists_stable_InRelease")]
