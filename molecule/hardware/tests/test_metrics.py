"""rocm_metrics on the fixture GPU nodes, scraped by a real Prometheus (Debian's) on the build node.

The containers have no systemd: the converge wrote the units and ran the writer once (the role says so). Here
node_exporter (Debian's, installed by the role) starts on each GPU node with the command line of the role's
drop-in, and Prometheus on the build node with the role's scrape configuration (intervals of 2 s), rules and the
file_sd targets the role wrote on the controller. The test copy of the rules has `for: 10s` on the "fell off the
bus" alert instead of 2m: the same expression, a shorter wait.

node_exporter's own drm and hwmon collectors read /sys, which in a container is this machine's (no AMD GPU): they
run (their scrape series are checked) but show no amdgpu card; the GPU series come from the textfile, which the
writer builds from the fixture tree under /srv/gpulab-sysfs.

AMD's exporter: the MI250X node gets the fixture mirror's stand-in amdgpu-exporter and its config.json; the Radeon
nodes do not (one of them asks for it and is told why not).
"""

import json
import os
import time
import urllib.parse
import urllib.request

import pytest
import testinfra
import yaml

from gpulab_test_helpers import gpulab_runs as runs

BUILD = "molecule-hw-build"
# The ports of host_vars (rocm_metrics_listen_address, hw_prometheus_port).
NODES = {"molecule-hw-navi22": 19611, "molecule-hw-mi250x": 19612, "molecule-hw-mixed": 19613}
PROMETHEUS = 19610
FILES = runs.PROJECT / "roles" / "rocm_metrics" / "files"
DROPIN = "/etc/systemd/system/prometheus-node-exporter.service.d/gpulab.conf"
EXPORTER_CONFIG = "/etc/metrics/config.json"
testinfra_hosts = [BUILD]


def node(name):
    return testinfra.get_host("docker://" + name)


def put(host, path, text):
    host.check_output("mkdir -p %s && printf %%s %s > %s" % (os.path.dirname(path), runs._quote(text), path))


def start(host, argv, name):
    """Start a daemon in the container (no systemd there) once; its pid in /run/NAME.pid, its output in
    /var/log/NAME.log."""
    pidfile = "/run/%s.pid" % name
    if host.run("kill -0 \"$(cat %s 2>/dev/null)\" 2>/dev/null" % pidfile).rc != 0:
        host.check_output("setsid -f sh -c %s" % runs._quote("echo $$ > %s; exec %s >/var/log/%s.log 2>&1"
                                                             % (pidfile, argv, name)))


def api(path, **params):
    url = "http://127.0.0.1:%d%s?%s" % (PROMETHEUS, path, urllib.parse.urlencode(params))
    with urllib.request.urlopen(url, timeout=10) as reply:
        return json.load(reply)["data"]


def query(expr):
    """{instance: value} of an instant query."""
    return dict((row["metric"].get("instance"), float(row["value"][1])) for row in api("/api/v1/query", query=expr)
                ["result"])


def wait(what, check, seconds):
    deadline = time.time() + seconds
    while True:
        value = check()
        if value:
            return value
        assert time.time() < deadline, "%s: not within %d s" % (what, seconds)
        time.sleep(1)


@pytest.fixture(scope="module")
def prometheus(host):
    for name, port in NODES.items():
        gpu = node(name)
        exec_start = [line for line in gpu.file(DROPIN).content_string.splitlines() if line.startswith("ExecStart=/")]
        assert len(exec_start) == 1 and "--web.listen-address=127.0.0.1:%d" % port in exec_start[0]
        start(gpu, exec_start[0][len("ExecStart="):].replace("$ARGS", ""), "gpulab-test-node-exporter")
    targets = os.path.join(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"], "gpulab-targets.json")
    with open(targets) as handle:
        put(host, "/etc/prometheus/file_sd/gpulab.json", handle.read())
    rules = (FILES / "gpulab-alerts.rules.yml").read_text()
    assert rules.count("for: 2m") == 1
    put(host, "/etc/prometheus/rules/gpulab-alerts.rules.yml", rules.replace("for: 2m", "for: 10s"))
    config = (FILES / "prometheus-scrape.yml").read_text().replace("scrape_interval: 30s", "scrape_interval: 2s")
    put(host, "/etc/prometheus/gpulab-test.yml", "global:\n  evaluation_interval: 2s\n" + config.split("---\n", 1)[1])
    start(host, "prometheus --config.file=/etc/prometheus/gpulab-test.yml --web.listen-address=127.0.0.1:%d "
          "--storage.tsdb.path=/var/lib/gpulab-test-prometheus" % PROMETHEUS, "gpulab-test-prometheus")
    wait("Prometheus answers", lambda: _ready(), 60)
    wait("every node scraped", lambda: len([v for v in query('up{job="gpulab-nodes"}').values() if v == 1]) == 3, 60)
    return host


def _ready():
    try:
        return bool(api("/api/v1/status/buildinfo"))
    except OSError:
        return False


def test_the_targets_file_lists_each_gpu_node_in_its_class():
    with open(os.path.join(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"], "gpulab-targets.json")) as handle:
        targets = json.load(handle)
    assert sorted((group["labels"]["node_class"], group["targets"]) for group in targets) == [
        ("hw_mi250x", ["127.0.0.1:19612"]), ("hw_mixed", ["127.0.0.1:19613"]), ("hw_navi22", ["127.0.0.1:19611"])]


def test_gpus_found_per_node(prometheus):
    # The fixture trees: one Radeon beside an NVIDIA card, four MI250X GCDs, two Radeons (molecule/hardware/sysfs).
    assert query('gpulab_gpus_found{source="pci"}') == {"127.0.0.1:19611": 1, "127.0.0.1:19612": 4,
                                                        "127.0.0.1:19613": 2}
    assert query('gpulab_gpus_expected{source="pci"}') == query('gpulab_gpus_found{source="pci"}')
    classes = api("/api/v1/query", query="gpulab_rocm_info")["result"]
    assert sorted(row["metric"]["node_class"] for row in classes) == ["hw_mi250x", "hw_mixed", "hw_navi22"]


def test_the_degraded_fixture_link_shows(prometheus):
    widths = api("/api/v1/query", query='gpulab_gpu_pcie_link_width{instance="127.0.0.1:19612"}')["result"]
    assert sorted((row["metric"]["pci_bdf"], row["value"][1]) for row in widths) == [
        ("0000:c1:00.0", "16"), ("0000:c9:00.0", "16"), ("0000:d1:00.0", "8"), ("0000:d6:00.0", "16")]
    assert query('gpulab_gpu_pcie_link_degraded == 1') == {"127.0.0.1:19612": 1}


def test_node_exporter_runs_the_drm_hwmon_and_textfile_collectors(prometheus):
    for port in NODES.values():
        found = api("/api/v1/query", query='node_scrape_collector_success{instance="127.0.0.1:%d",'
                                           'collector=~"drm|hwmon|textfile"}' % port)["result"]
        assert sorted(row["metric"]["collector"] for row in found) == ["drm", "hwmon", "textfile"]


def test_a_gpu_falling_off_the_bus_fires_the_alert(prometheus):
    mixed = node("molecule-hw-mixed")
    link = "/srv/gpulab-sysfs/bus/pci/devices/0000:0b:00.0"

    def alerts(instance, state=None):
        return [(alert["labels"]["source"], alert["state"]) for alert in api("/api/v1/alerts")["alerts"]
                if alert["labels"]["alertname"] == "GpulabGpuFellOffTheBus" and alert["labels"]["instance"] == instance
                and state in (None, alert["state"])]

    assert alerts("127.0.0.1:19613") == []
    target = mixed.check_output("readlink %s" % link)
    mixed.check_output("rm %s && /usr/local/sbin/gpulab-metrics-textfile" % link)  # the timer's run
    try:
        # Scraped within 2 s, pending, then firing 10 s later (the test copy's `for`).
        started = time.time()
        wait("the alert is pending", lambda: alerts("127.0.0.1:19613", "pending"), 15)
        assert wait("the alert fires", lambda: alerts("127.0.0.1:19613", "firing"), 60) == [("pci", "firing")]
        assert time.time() - started >= 8
    finally:
        mixed.check_output("ln -s %s %s && /usr/local/sbin/gpulab-metrics-textfile" % (target, link))


def test_an_expected_count_the_kfd_does_not_show_fires_too(prometheus):
    """The MI250X node's inventory says rocminfo lists 1 agent (rocm_expected_gpu_count, its rocminfo capture),
    while its fixture tree has no KFD: the writer expects 1 agent and finds none, and the alert says so."""
    assert query('gpulab_gpus_expected{source="kfd",instance="127.0.0.1:19612"}') == {"127.0.0.1:19612": 1}
    assert query('gpulab_gpus_found{source="kfd",instance="127.0.0.1:19612"}') == {"127.0.0.1:19612": 0}
    wait("the alert fires", lambda: [alert for alert in api("/api/v1/alerts")["alerts"]
                                     if alert["labels"]["alertname"] == "GpulabGpuFellOffTheBus"
                                     and alert["labels"]["instance"] == "127.0.0.1:19612"
                                     and alert["labels"]["source"] == "kfd" and alert["state"] == "firing"], 40)


def test_amds_exporter_is_installed_and_configured_on_the_instinct_node():
    """The fixture mirror's stand-in amdgpu-exporter (AMD's paths), installed from AMD's exporter repository, and
    its config.json from the role's defaults and the node's host_vars."""
    mi250x = node("molecule-hw-mi250x")
    package = mi250x.package("amdgpu-exporter")
    assert package.is_installed and package.version == "1.5.2~22.04"
    assert "gpulab.rocm TEST FIXTURE" in mi250x.check_output("dpkg-query -W -f '${Description}' amdgpu-exporter")
    defaults = yaml.safe_load((runs.PROJECT / "roles" / "rocm_metrics" / "defaults" / "main.yml").read_text())
    assert json.loads(mi250x.file(EXPORTER_CONFIG).content_string) == {
        "ServerPort": 19615, "GPUConfig": {"Fields": defaults["rocm_metrics_amd_exporter_fields"],
                                           "Labels": defaults["rocm_metrics_amd_exporter_labels"],
                                           "CustomLabels": {"node_class": "hw_mi250x"}}}
    # AMD's unit starts the program with no option: it reads that file (the stand-in prints which one it read).
    assert "ExecStart=/usr/local/bin/amd-metrics-exporter\n" in \
        mi250x.file("/usr/lib/systemd/system/amd-metrics-exporter.service").content_string
    assert mi250x.check_output("/usr/local/bin/amd-metrics-exporter").startswith(
        "amd-metrics-exporter (gpulab.rocm TEST FIXTURE, not AMD's package): config %s\n" % EXPORTER_CONFIG)


def test_the_radeon_nodes_do_not_get_amds_exporter():
    # molecule-hw-navi22 asks for it (host_vars): the check-mode run below shows the note that says why not.
    for name in ("molecule-hw-navi22", "molecule-hw-mixed"):
        assert not node(name).package("amdgpu-exporter").is_installed
        assert not node(name).file(EXPORTER_CONFIG).exists


def test_check_mode_writes_nothing():
    hosts = [node("molecule-hw-navi22"), node("molecule-hw-mi250x")]
    before = [runs.snapshot(host) for host in hosts]
    run = runs.playbook("site.yml", "molecule-hw-navi22,molecule-hw-mi250x",
                        {"rocm_metrics_interval": "2min", "rocm_metrics_amd_exporter_port": 19616}, check=True,
                        tags="metrics")
    assert run.rc == 0 and run.changed("molecule-hw-navi22") > 0 and run.changed("molecule-hw-mi250x") > 0, run
    writes = "rocm_metrics : Write the writer's folders, code, configuration, units and command"
    assert run.changed_tasks() == [writes], run
    assert "+OnUnitActiveSec=2min" in run.output, run  # the diff of the timer that would change
    assert '+  "ServerPort": 19616' in run.output, run  # and of AMD's exporter's config on the MI250X
    # The note, as the YAML callback prints it (folded lines, quotes doubled).
    said = " ".join(run.output.split()).replace("''", "'")
    assert "AMD's exporter (rocm_metrics_amd_exporter_enabled) is skipped: AMD Radeon RX 6700 / 6700 XT / 6750 XT " \
           "/ 6800M (gfx1031) is not an Instinct MI2xx/MI3xx" in said, run
    # The log of the node_exporter this test started grows meanwhile: not the run's doing.
    for host, earlier in zip(hosts, before):
        assert [line for line in runs.differences(earlier, runs.snapshot(host)) if "/gpulab-test-" not in line] == []
