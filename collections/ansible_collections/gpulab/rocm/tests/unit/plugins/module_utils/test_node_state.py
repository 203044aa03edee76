"""The probe's parsers (module_utils/host/node_state.py) that no one phase owns: dpkg's status, and whether systemd
runs the host."""

from ansible_collections.gpulab.rocm.plugins.module_utils.host import node_state as ns


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
