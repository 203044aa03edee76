"""The fleet report (module_utils/planning/fleet_report.py) over what the probe reads for real captured outputs: the
probe's own tool readers (module_utils/parsers/gpu_tools.py) answered with the captures the test containers print (the
collection's fixture store, which the fixture mirror's profiles name), so these records are the ones rocm_report and
rocm_verify build on those containers."""

import json
from pathlib import Path

import pytest

from ansible_collections.gpulab.rocm.plugins.module_utils.planning import fleet_report as report
from ansible_collections.gpulab.rocm.plugins.module_utils.parsers import firmware, gpu_tools
from ansible_collections.gpulab.rocm.plugins.module_utils.parsers.pci import gather_pci
from ansible_collections.gpulab.rocm.tests.unit import sysfs_tree
from ansible_collections.gpulab.rocm.tests.unit.gpu_facts_helpers import fixture as capture

ROOT = Path(__file__).resolve().parents[2]
# Four downtrained MI50s with no driver; tests/runner copies the same tree into a container.
MI50_SPEC = Path(__file__).resolve().parent / "sysfs" / "mi50-4x-downtrained-no-driver.json"
MI50_CAPTURE = "lspci/mi50-4x-lnkcap-lnksta-gen1-2.5gts-x8-downgraded.txt"


def tool(reader, answers, present=True):
    """The facts one of the probe's readers returns when the tool prints `answers` (a list of (rc, out, err) in
    call order, or a callable of argv); present=False: the tool is not installed."""
    calls = list(answers) if isinstance(answers, list) else None

    def run(argv):
        return answers(argv) if callable(answers) else calls.pop(0)
    try:
        return reader(run, lambda name: "/opt/rocm/bin/" + name if present else None)
    except gpu_tools.ParseError as exc:
        facts = {"rocminfo": gpu_tools.empty_rocminfo, "rocm_smi": gpu_tools.empty_rocm_smi,
                 "amd_smi": gpu_tools.empty_amd_smi}[reader.__name__.replace("read_", "")]()
        facts.update(present=True, error_kind="unreadable", error="%s output is in no form the parser knows: %s"
                     % (reader.__name__.replace("read_", "").replace("_", "-"), exc))
        return facts


def rocminfo(name=None, rc=0):
    return tool(gpu_tools.read_rocminfo, [(rc, capture(name), "")]) if name else \
        tool(gpu_tools.read_rocminfo, [], present=False)


def rocm_smi(name):
    return tool(gpu_tools.read_rocm_smi, lambda argv: (0, capture(name), ""))


def amd_smi(outputs):
    """amd-smi answered from captures per subcommand (missing: amd-smi's usage error)."""
    def answer(argv):
        name = outputs.get(argv[1])
        if name is None:
            return 2, "", "amd-smi: error: argument : invalid choice: '%s'\n" % argv[1]
        return 0, capture(name), ""
    return tool(gpu_tools.read_amd_smi, answer)


def no_pci(tmp_path):
    (tmp_path / "empty-sys" / "bus" / "pci" / "devices").mkdir(parents=True, exist_ok=True)
    return gather_pci(str(tmp_path / "empty-sys"), str(tmp_path), str(tmp_path))


def node(tmp_path, **sections):
    base = {"tools": {"rocminfo": rocminfo(), "rocm_smi": tool(gpu_tools.read_rocm_smi, [], present=False),
                      "amd_smi": tool(gpu_tools.read_amd_smi, [], present=False)},
            "gpu_pci": no_pci(tmp_path), "versions": {"rocm": "6.2.4-139", "amdgpu": None},
            "os": {"distribution": "Debian", "full_version": "12.12", "kernel": "6.1.0-41-amd64"}}
    tools = dict(base["tools"], **sections.pop("tools", {}))
    base.update(sections, tools=tools)
    return base


def test_rocminfo_only_host(tmp_path):
    host = report.host_record(node(tmp_path, tools={"rocminfo": rocminfo(
        "rocminfo/gfx90a-mi250x-gcd-4numa-epyc7a53-rocm5.7.txt")}), "gpu01")
    assert (host["gpu_count"], host["gfx_targets"], host["problems"]) == (1, ["gfx90a"], [])
    assert (host["rocm_version"], host["rocm_build"], host["driver_version"]) == ("6.2.4", "6.2.4-139", None)
    assert (host["os"], host["kernel"]) == ("Debian 12.12", "6.1.0-41-amd64")
    gpu = host["gpus"][0]
    assert (gpu["model"], gpu["target_id"], gpu["pci_bus"], gpu["seen_by"]) == (
        "AMD Instinct MI250X", "gfx90a:sramecc+:xnack-", "0000:d1:00.0", ["rocminfo"])
    assert gpu["vram_bytes"] == 68702699520 and gpu["link"]["source"] is None and gpu["link"]["degraded"] is None


def test_expected_count_and_release_are_checked(tmp_path):
    facts = node(tmp_path, tools={"rocminfo": rocminfo("rocminfo/gfx1030-rx6900xt-rocm6.4.txt")})
    assert report.host_record(facts, "ws1", 1, "6.2.4")["problems"] == []
    # The 6.2 repository folder is ROCm 6.2.0 (its rocm-core writes 6.2.0-66).
    facts_620 = dict(facts, versions={"rocm": "6.2.0-66", "amdgpu": None})
    assert report.host_record(facts_620, "ws1", "1", "6.2")["problems"] == []
    problems = report.host_record(facts, "ws1", 2, "6.2")["problems"]
    assert problems == ["1 AMD GPU(s) found, the inventory expects 2 (rocm_expected_gpu_count)",
                        "ROCm 6.2.4 is installed, the inventory asks for 6.2 (rocm_version)"]
    with pytest.raises(report.ReportError, match="expected_gpu_count must be an integer"):
        report.host_record(facts, "ws1", "four")


def test_rocm_smi_and_amd_smi_rows_merge_by_bus(tmp_path):
    # rx6600 profile: rocm-smi --showallinfo JSON and amd-smi static/metric of the same Proxmox host; rocminfo
    # printed something no parser reads.
    host = report.host_record(node(tmp_path, tools={
        "rocminfo": tool(gpu_tools.read_rocminfo, [(0, "this is not rocminfo output\n", "")]),
        "rocm_smi": rocm_smi("rocm-smi/json-showallinfo-rx6600-navi23-jq-reformatted.json"),
        "amd_smi": amd_smi({"static": "amd-smi/static-json-rx6600-navi23-proxmox-bare-array.json",
                            "metric": "amd-smi/metric-json-rx6600-navi23-proxmox-bare-array.json"})}), "ws2")
    assert len(host["problems"]) == 1
    assert host["problems"][0].startswith("rocminfo output is in no form the parser knows: ")
    assert host["gpu_count"] == 1 and host["driver_version"] == "7.0.0-3-pve"
    gpu = host["gpus"][0]
    assert (gpu["pci_bus"], gpu["gfx_target"], gpu["seen_by"]) == ("0000:0b:00.0", "gfx1032", ["amd-smi", "rocm-smi"])
    # amd-smi reports x8 of a max x16 on this x8 card: shown, not judged (only the sysfs path is).
    assert gpu["link"] == {"speed_gts": 16.0, "width": 8, "max_speed_gts": 16.0, "max_width": 16, "degraded": None,
                           "degraded_links": [], "at": None, "source": "amd-smi"}


def test_tools_that_disagree_are_a_problem(tmp_path):
    # mi300x-vf profile: rocminfo sees one VF, the rocm-smi capture (another host) four.
    host = report.host_record(node(tmp_path, tools={
        "rocminfo": rocminfo("rocminfo/gfx942-mi300x-vf-rocm6.4.0.txt"),
        "rocm_smi": rocm_smi("rocm-smi/showallinfo-a-4x-mi300x-vf-sriov-driver6.7.0.txt")}), "vm1")
    assert host["gpu_count"] == 1 and host["driver_version"] == "6.7.0"
    assert host["problems"] == ["rocm-smi lists 4 GPU(s) that rocminfo does not: 0000:26:00.0, 0000:46:00.0, "
                                "0000:65:00.0, 0000:85:00.0"]


def test_rows_without_addresses_match_in_order(tmp_path):
    # rx7600 profile: rocm-smi's concise table prints no bus address.
    host = report.host_record(node(tmp_path, tools={
        "rocminfo": rocminfo("rocminfo/gfx1102-rx7600-rocm7-rock6.16.13-sudo.txt"),
        "rocm_smi": rocm_smi("rocm-smi/default-rocm7-rx7600.txt")}), "ws3")
    assert host["problems"] == [] and host["gpus"][0]["seen_by"] == ["rocm-smi", "rocminfo"]


def test_mi50_tree_holds_its_capture():
    # The spec's addresses and links are the capture's, written as sysfs prints them.
    spec = json.loads(MI50_SPEC.read_text())
    assert [(function["path"][-1], function["link"]) for function in spec["functions"]] == [
        (address, [sysfs_tree.sysfs_speed(sta_speed), int(sta_width), sysfs_tree.sysfs_speed(cap_speed),
                   int(cap_width)])
        for address, cap_speed, cap_width, sta_speed, sta_width in sysfs_tree.lspci_links(capture(MI50_CAPTURE))]


def test_gpus_on_the_bus_without_a_driver(tmp_path):
    # no-gpu profile plus the sysfs tree of four downtrained MI50s with no driver bound.
    sysfs_tree.build(str(tmp_path / "sys"), json.loads(MI50_SPEC.read_text()))
    pci = gather_pci(str(tmp_path / "sys"), str(tmp_path), str(tmp_path))
    host = report.host_record(node(tmp_path, gpu_pci=pci, tools={
        "rocminfo": rocminfo("rocminfo/fail-rock-not-loaded-azure-mi25.txt", rc=1)}), "old1", 4)
    # Rows for the four cards, but no GPU ROCm can use: no count, no gfx target (as rocm_verify reports them).
    assert (host["gpu_count"], host["gfx_targets"], host["degraded_links"]) == (0, [], 4)
    assert [gpu["pci_bus"] for gpu in host["gpus"]] == ["0000:31:00.0", "0000:34:00.0", "0000:4b:00.0", "0000:4e:00.0"]
    gpu = host["gpus"][0]
    assert (gpu["model"], gpu["gfx_target"], gpu["seen_by"], gpu["driver"]) == (
        "AMD Instinct MI50 / MI60 / Radeon Pro VII", "gfx906", ["pci"], None)
    assert gpu["link"] == {"speed_gts": 2.5, "width": 8, "max_speed_gts": 16.0, "max_width": 16, "degraded": True,
                           "degraded_links": ["0000:31:00.0"], "at": "0000:31:00.0", "source": "sysfs"}
    assert gpu["problems"] == ["PCIe link degraded: 2.5 GT/s x8, capable of 16 GT/s x16 (at 0000:31:00.0)",
                               "no kernel driver bound (amdgpu not loaded, or it failed on this GPU: see dmesg)"]
    assert host["host_problems"][0].startswith('rocminfo: the amdgpu kernel driver (KFD, "ROCk module") is not loaded')
    assert host["host_problems"][1] == "0 AMD GPU(s) found, the inventory expects 4 (rocm_expected_gpu_count)"
    assert len(host["problems"]) == 2 + 4 * 2 and host["problems"][2].startswith("0000:31:00.0: PCIe link degraded")


def test_one_root_cause_is_listed_once(tmp_path):
    # Debian's real tools on a host without a GPU: rocminfo rc 1, rocm-smi "Driver not initialized" with rc 0.
    smi = tool(gpu_tools.read_rocm_smi, [(0, "", capture("rocm-smi/fail-driver-not-initialized-azure-mi25.txt"))] * 2)
    host = report.host_record(node(tmp_path, tools={
        "rocminfo": rocminfo("rocminfo/fail-rock-not-loaded-azure-mi25.txt", rc=1), "rocm_smi": smi}), "cpu1")
    assert host["gpu_count"] == 0 and len(host["problems"]) == 1 and host["problems"][0].startswith("rocminfo:")


def test_no_rocm_installed(tmp_path):
    host = report.host_record(node(tmp_path, versions={"rocm": None, "amdgpu": None}), "bare1")
    assert host["rocm_version"] is None and host["gpus"] == []
    assert len(host["problems"]) == 1 and "rocminfo was not found" in host["problems"][0]


def test_fleet_lists_unreachable_hosts_and_counts(tmp_path):
    mi250x = report.host_record(node(tmp_path, tools={"rocminfo": rocminfo(
        "rocminfo/gfx90a-mi250x-gcd-4numa-epyc7a53-rocm5.7.txt")}), "b-node")
    # a-node has variables but never built its record; c-node is not in the play. The hosts registered the plan
    # result (phase report) that holds the record.
    # d-node was unreachable: its registered result holds no record.
    host_vars = {"b-node": {"host_record": {"record": mi250x}}, "a-node": {"rocm_version": "6.2.4"},
                 "c-node": {"host_record": {"record": mi250x}},
                 "d-node": {"host_record": {"unreachable": True, "msg": "ssh: connect to host d-node: timed out"}}}
    fleet = report.report_fleet(host_vars, ["b-node", "a-node", "b-node", "d-node"], "host_record")
    assert [host["name"] for host in fleet["hosts"]] == ["a-node", "b-node", "d-node"]
    assert fleet["hosts"][0]["reachable"] is False and fleet["hosts"][0]["problems"] == [report.UNREACHABLE]
    assert fleet["hosts"][2]["reachable"] is False
    assert fleet["summary"] == {"hosts": 3, "unreachable": 2, "hosts_with_problems": 2, "gpus": 1, "amd_gpus": 1,
                                "degraded_links": 0, "hosts_with_drift": 0, "models": {"AMD Instinct MI250X": 1}}
    assert report.report_stats(fleet)["b-node"] == {
        "gpu_count": 1, "gfx_targets": ["gfx90a"], "rocm_version": "6.2.4", "problems": []}
    assert report.report_stats(fleet)["a-node"] == {
        "gpu_count": 0, "gfx_targets": [], "rocm_version": None, "problems": [report.UNREACHABLE]}


def test_bad_input_is_a_clear_error():
    with pytest.raises(report.ReportError, match="built from the probe"):
        report.host_record(["not", "a", "dict"], "x")
    with pytest.raises(report.ReportError, match="built from hostvars"):
        report.report_fleet([], [], "host_record")


def test_real_h200_pci_facts(tmp_path):
    # gpu_pci_facts on the lent H200 machine (docs/h200-pci/gpu_pci_h200.json, real sysfs): an NVIDIA GPU gets a
    # row of its own, its link judged from sysfs; no ROCm there, which is the host's one problem.
    real = json.loads((ROOT / "docs" / "h200-pci" / "gpu_pci_h200.json").read_text())["gpu_pci"]
    host = report.host_record(node(tmp_path, gpu_pci=real, versions={"rocm": None, "amdgpu": None}), "h200")
    assert (host["gpu_count"], host["in_container"], len(host["gpus"])) == (0, True, 1)
    gpu = host["gpus"][0]
    assert (gpu["vendor"], gpu["model"], gpu["driver"], gpu["seen_by"]) == ("NVIDIA", "NVIDIA H200", "nvidia", ["pci"])
    assert (gpu["link"]["speed_gts"], gpu["link"]["width"], gpu["link"]["degraded"], gpu["link"]["source"]) == (
        32.0, 16, False, "sysfs")
    assert len(host["problems"]) == 1 and "rocminfo was not found" in host["problems"][0]


def test_the_page_escapes_every_value(tmp_path):
    # Issue 15, item 11: the link's "limited at" address went into a title attribute unescaped.
    import jinja2
    record = report.host_record(node(tmp_path, tools={"rocminfo": rocminfo(
        "rocminfo/gfx90a-mi250x-gcd-4numa-epyc7a53-rocm5.7.txt")}), 'n1"><script>alert(1)</script>')
    evil = '0000:d1:00.0" onmouseover="alert(1)'
    record["gpus"][0]["model"] = '<img src=x onerror=alert(1)>'
    record["gpus"][0]["link"].update(at=evil, source="sysfs", width=8, speed_gts=16.0)
    # The page shows the inventory's name of the host (a record cannot claim another host's), escaped.
    fleet = report.report_fleet({record["name"]: {"r": record}}, [record["name"]], "r")
    template = ROOT / "roles" / "rocm_report" / "templates"
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(template)))
    page = env.get_template("fleet-report.html.j2").render(__rocm_report=fleet, rocm_report_title="t")
    assert 'onmouseover="alert' not in page and "<script>alert" not in page and "<img src=x" not in page
    assert "limited at 0000:d1:00.0&#34; onmouseover=&#34;alert(1)" in page


def test_the_slurm_column_only_where_a_host_has_slurm(tmp_path):
    # A fleet without Slurm gets the page it had before Slurm came (no column); with one Slurm node, every row has
    # the column (the same number of cells as headers), its value escaped.
    import re

    import jinja2
    template = ROOT / "roles" / "rocm_report" / "templates"
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(template)))

    def page(records):
        fleet = report.report_fleet(dict((name, {"r": record}) for name, record in records.items()), sorted(records),
                                    "r")
        html = env.get_template("fleet-report.html.j2").render(__rocm_report=fleet, rocm_report_title="t")
        heads = re.findall(r"<th\b", html)
        rows = [len(re.findall(r"<td\b", row)) for row in re.findall(r"<tr class=.*?</tr>", html, re.S)]
        return html, len(heads), rows

    plain = report.host_record(node(tmp_path), "n1")
    assert plain["slurm"] is None
    html, heads, rows = page({"n1": plain})
    assert "Slurm GRES" not in html and rows == [heads]
    slurm = report.host_record(node(tmp_path), "n2")
    slurm["slurm"] = {"node": "n2", "listed": True, "gres": "gpu:<b>x</b>:2", "gres_used": None, "state": "IDLE",
                      "reason": None}
    html, with_slurm, rows = page({"n1": plain, "n2": slurm})
    assert with_slurm == heads + 1 and rows == [with_slurm, with_slurm]
    assert "Slurm GRES" in html and "gpu:&lt;b&gt;x&lt;/b&gt;:2" in html and "<b>x</b>" not in html


@pytest.mark.skipif(__import__("os").geteuid() != 0, reason="last.json is read only when root owns it")
def test_the_health_verdict_and_failing_checks(tmp_path):
    # A real run of the check (health_run) over an empty bus that expects one GPU, its last.json read back as the
    # probe's section health reads it; the column only where a host has a verdict, every value escaped.
    import re

    import jinja2

    from ansible_collections.gpulab.rocm.plugins.module_utils.node import health_run
    data = tmp_path / "health.json"
    data.write_text(json.dumps({"sysfs_root": str(no_pci(tmp_path) and tmp_path / "empty-sys"), "gpu_count": 1,
                                "node_class": "<i>mi</i>"}))
    health_run.run(str(data), str(tmp_path / "state"), lambda name: None)
    sick = report.host_record(node(tmp_path, health=health_run.read_result(str(tmp_path / "state" / "last.json"))),
                              "n2")
    assert sick["health"]["verdict"] == "unhealthy"
    # No run time in the report: the check runs on every converge, and the report must stay the same (changed=0).
    assert "time" not in sick["health"]
    assert sick["health"]["failing"][0] == "GPU_COUNT: 0 GPU(s) in KFD and 0 on the PCI bus, 1 expected"
    assert [line.split(":")[0] for line in sick["health"]["failing"]] == ["GPU_COUNT", "AMDGPU_LOADED", "KFD_NODE",
                                                                          "ROCMINFO"]
    assert "health check: %s" % "; ".join(sick["health"]["failing"]) in sick["problems"]
    plain = report.host_record(node(tmp_path), "n1")
    assert plain["health"] is None
    sick["health"]["failing"].append("X: <b>bold</b>")
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(ROOT / "roles" / "rocm_report" / "templates")))
    fleet = report.report_fleet({"n1": {"r": plain}, "n2": {"r": sick}}, ["n1", "n2"], "r")
    html = env.get_template("fleet-report.html.j2").render(__rocm_report=fleet, rocm_report_title="t")
    heads = len(re.findall(r"<th\b", html))
    assert ">Health</th>" in html and ">unhealthy</span>" in html and "X: &lt;b&gt;bold&lt;/b&gt;" in html
    assert [len(re.findall(r"<td\b", row)) for row in re.findall(r"<tr class=.*?</tr>", html, re.S)] == [heads] * 2


def test_each_host_links_to_its_metrics_where_a_prometheus_is_set(tmp_path):
    import jinja2
    record = report.host_record(node(tmp_path, tools={"rocminfo": rocminfo(
        "rocminfo/gfx90a-mi250x-gcd-4numa-epyc7a53-rocm5.7.txt")}), 'n1"><b>x')
    fleet = report.report_fleet({'n1"><b>x': {"r": record}}, ['n1"><b>x'], "r")
    template = ROOT / "roles" / "rocm_report" / "templates"
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(template)))
    page = env.get_template("fleet-report.html.j2")
    assert ">metrics</a>" not in page.render(__rocm_report=fleet, rocm_report_title="t")
    assert ">metrics</a>" not in page.render(__rocm_report=fleet, rocm_report_title="t",
                                             rocm_report_prometheus_url="javascript:alert(1)")
    html = page.render(__rocm_report=fleet, rocm_report_title="t", rocm_report_prometheus_url="http://prom:9090/")
    assert ('<a href="http://prom:9090/graph?g0.tab=1&amp;g0.expr=gpulab_gpu_info%7Binstance%3D~%22n1%22%3E%3Cb%3Ex'
            '%28%3A%5B0-9%5D%2B%29%3F%22%7D">metrics</a>') in html


# --- one host's record cannot spoil the report (issue 38): every field checked, every value bounded -------------

def _page(fleet):
    import jinja2
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(ROOT / "roles" / "rocm_report" / "templates")))
    return env.get_template("fleet-report.html.j2").render(__rocm_report=fleet, rocm_report_title="t")


def _good(tmp_path, name):
    return report.host_record(node(tmp_path, tools={"rocminfo": rocminfo(
        "rocminfo/gfx90a-mi250x-gcd-4numa-epyc7a53-rocm5.7.txt")}), name)


def test_a_forged_record_is_its_hosts_problem_and_the_others_render(tmp_path):
    # b-node's probe reply put a string where the link width is (the page multiplies speed by width: "x" * 16.0
    # stopped the whole report before); a-node and c-node are real records and are reported as they are.
    good_a, good_c = _good(tmp_path, "a-node"), _good(tmp_path, "c-node")
    forged = _good(tmp_path, "b-node")
    forged["gpus"][0]["link"].update(width="sixteen", speed_gts=16.0)
    fleet = report.report_fleet({"a-node": {"r": {"record": good_a}}, "b-node": {"r": {"record": forged}},
                                 "c-node": {"r": {"record": good_c}}}, ["c-node", "b-node", "a-node"], "r")
    assert [host["name"] for host in fleet["hosts"]] == ["a-node", "b-node", "c-node"]
    assert fleet["hosts"][0] == good_a and fleet["hosts"][2] == good_c
    bad = fleet["hosts"][1]
    assert (bad["reachable"], bad["gpus"], bad["gpu_count"]) == (True, [], 0)
    assert bad["problems"] == bad["host_problems"] and len(bad["problems"]) == 1
    assert bad["problems"][0].startswith("the host record is invalid at gpus[0].link.width: a whole number was "
                                         "expected, not str 'sixteen'")
    assert fleet["summary"] == {"hosts": 3, "unreachable": 0, "hosts_with_problems": 1, "gpus": 2, "amd_gpus": 2,
                                "degraded_links": 0, "hosts_with_drift": 0, "models": {"AMD Instinct MI250X": 2}}
    page = _page(fleet)
    assert page.count('data-host="a-node"') == 1 and page.count('data-host="c-node"') == 1
    assert page.count('data-host="b-node"') == 1 and "invalid at gpus[0].link.width" in page
    json.loads(json.dumps(fleet, allow_nan=False))  # the JSON file is valid JSON
    assert report.report_stats(fleet)["b-node"]["problems"] == bad["problems"]


def _forge(record, field, value):
    """record with one field (a dotted path; a number is a list index) set to value."""
    target = record
    keys = [int(key) if key.isdigit() else key for key in field.split(".")]
    for key in keys[:-1]:
        target = target[key]
    target[keys[-1]] = value
    return record


HUGE = 10 ** 12


@pytest.mark.parametrize("field, value, where, why", [
    ("gpu_count", HUGE, "gpu_count", "int 1000000000000 is out of range (0 to 1024)"),
    ("gpu_count", "8", "gpu_count", "a whole number was expected, not str '8'"),
    ("gpu_count", True, "gpu_count", "a whole number was expected, not bool"),
    ("degraded_links", 10 ** 400, "degraded_links", "an integer of 1329 bits is out of range"),
    ("gpus.0.model", "M" * (100 * 1024 * 1024), "gpus[0].model", "104857600 characters, at most 512"),
    ("gpus.0.vram_bytes", 10 ** 400, "gpus[0].vram_bytes", "an integer of 1329 bits is out of range"),
    ("gpus.0.vram_bytes", float("nan"), "gpus[0].vram_bytes", "a whole number was expected, not float nan"),
    ("gpus.0.link.speed_gts", float("inf"), "gpus[0].link.speed_gts", "float inf is out of range"),
    ("gpus.0.link.speed_gts", "16", "gpus[0].link.speed_gts", "a number was expected, not str '16'"),
    ("gpus.0.link.width", HUGE, "gpus[0].link.width", "out of range (0 to 64)"),
    ("gpus.0.link", "x16", "gpus[0].link", "an object was expected, not str"),
    ("gpus", None, "gpus", "a list was expected, not NoneType"),
    ("problems", "one string", "problems", "a list was expected, not str 'one string'"),
    ("problems", ["p" * 4097], "problems[0]", "4097 characters, at most 4096"),
    ("problems", ["p" * 4000] * 300, "problems[262]", "more than 1048576 characters"),
    ("gfx_targets", [7], "gfx_targets[0]", "a string was expected, not int 7"),
    ("reachable", "yes", "reachable", "true or false was expected, not str 'yes'"),
    ("slurm", {"node": "n", "listed": 1}, "slurm.listed", "true or false was expected, not int 1"),
    ("health", {"verdict": None, "failing": []}, "health.verdict", "a string was expected, not NoneType"),
])
def test_every_field_is_checked_and_every_value_bounded(tmp_path, field, value, where, why):
    import time
    import tracemalloc
    record = _forge(_good(tmp_path, "bad"), field, value)
    good = _good(tmp_path, "good")
    tracemalloc.start()
    started = time.monotonic()
    try:
        fleet = report.report_fleet({"bad": {"r": record}, "good": {"r": good}}, ["good", "bad"], "r")
        page = _page(fleet)
        text = json.dumps(fleet, allow_nan=False)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # Within a bound whatever the value: no copy of a 100 MB string, no "x" * 10**12, under a second.
    assert peak < 8 * 1024 * 1024 and time.monotonic() - started < 5 and len(page) < 64 * 1024 and len(text) < 16384
    bad, other = fleet["hosts"]
    assert other == good
    assert bad["problems"][0].startswith("the host record is invalid at %s: " % where), bad["problems"][0]
    assert why in bad["problems"][0]


def test_a_huge_list_is_refused_by_its_length(tmp_path):
    # 10**6 GPU rows (one dict, referenced a million times: cheap to forge, expensive to render): refused by count.
    record = _good(tmp_path, "bad")
    record["gpus"] = record["gpus"] * 10 ** 6
    fleet = report.report_fleet({"bad": {"r": record}}, ["bad"], "r")
    assert fleet["hosts"][0]["problems"][0].startswith(
        "the host record is invalid at gpus: 1000000 entries, at most 1024")


def test_every_record_the_captures_give_is_valid(tmp_path):
    # The schema accepts what host_record builds from real captures (rocminfo, rocm-smi, amd-smi, the MI50 tree, the
    # H200's sysfs): a check that refused real hosts would be worse than none.
    real = json.loads((ROOT / "docs" / "h200-pci" / "gpu_pci_h200.json").read_text())["gpu_pci"]
    records = [
        _good(tmp_path, "mi250x"),
        report.host_record(node(tmp_path, gpu_pci=real, versions={"rocm": None, "amdgpu": None}), "h200"),
        report.host_record(node(tmp_path, versions={"rocm": None, "amdgpu": None}), "bare"),
    ]
    for name in sorted((ROOT / "collections/ansible_collections/gpulab/rocm/tests/unit/plugins/module_utils/fixtures"
                        / "rocminfo").glob("*.txt")):
        records.append(report.host_record(node(tmp_path, tools={"rocminfo": rocminfo("rocminfo/" + name.name)}),
                                          name.stem))
    for name in sorted((ROOT / "collections/ansible_collections/gpulab/rocm/tests/unit/plugins/module_utils/fixtures"
                        / "rocm-smi").glob("*.json")):
        records.append(report.host_record(node(tmp_path, tools={"rocm_smi": rocm_smi("rocm-smi/" + name.name)}),
                                          name.stem))
    assert len(records) > 10
    for record in records:
        assert report.valid_record(record, record["name"]) == record


# --- firmware and drift within a node class ----------------------------------------------------------------------

R9700_FIRST = "firmware/debugfs-amdgpu_firmware_info-2x-r9700-plus-raphael-igpu-kernel6.17-issue6155-first-host.txt"
R9700_SECOND = "firmware/debugfs-amdgpu_firmware_info-3x-r9700-kernel6.17-one-vbios-each-issue6155-second-host.txt"
STRIX = "firmware/debugfs-amdgpu_firmware_info-strix-halo-gfx1151-kernel7.0-issue6165.txt"


def debugfs_host(tmp_path, name, gpus):
    """gpu_pci facts of a host from real amdgpu_firmware_info captures: gpus [(address, device id, text)], each a
    PCI function (sysfs_tree) with its text under <sysfs>/kernel/debug/dri/<address>/ as root reads it. The
    addresses of the first host's cards are the test's (its paste names none; the issue's dmesg names 03:00.0)."""
    sysfs = str(tmp_path / name / "sys")
    for number, (bdf, device, text) in enumerate(gpus):
        sysfs_tree.add_function(sysfs, ["pci0000:00", "0000:00:0%d.1" % (number + 1), bdf], cls="0x030000",
                                vendor="0x1002", device=device, driver="amdgpu", drm=["card%d" % number])
        dri = Path(sysfs) / "kernel" / "debug" / "dri" / bdf
        dri.mkdir(parents=True)
        (dri / "amdgpu_firmware_info").write_text(text)
    return firmware.add_to_pci(gather_pci(sysfs, str(tmp_path), str(tmp_path)), sysfs)


def blocks(name):
    """The amdgpu_firmware_info outputs of a paste that holds several one after another (each ends with VBIOS)."""
    return [part if part.startswith("VCE") else "VCE" + part for part in capture(name).split("\nVCE")]


def r9700_fleet(tmp_path):
    """Issue 6155's two hosts, one node class: the first (two R9700s on MES 0x81, and a Raphael iGPU), the second
    (three R9700s on MES 0x8b, each with another VBIOS); the DKMS drivers the issue names (6.16.13, then 6.19.0);
    and a Strix Halo alone in another class."""
    first = blocks(R9700_FIRST)
    second = [block[block.index("VCE"):] for block in capture(R9700_SECOND).split("GPU BDF:")[1:]]
    hosts = {
        "r9700-a": (debugfs_host(tmp_path, "a", [("0000:03:00.0", "0x7551", first[0]),
                                                ("0000:0b:00.0", "0x7551", first[1]),
                                                ("0000:7c:00.0", "0x164e", first[2])]), "6.16.13", "r9700_nodes"),
        "r9700-b": (debugfs_host(tmp_path, "b", [("0000:0a:00.0", "0x7551", second[0]),
                                                ("0000:0d:00.0", "0x7551", second[1]),
                                                ("0000:45:00.0", "0x7551", second[2])]), "6.19.0", "r9700_nodes"),
        "strix-01": (debugfs_host(tmp_path, "s", [("0000:c1:00.0", "0x1586", capture(STRIX))]), "6.19.0", "apu"),
    }
    records = dict((name, report.host_record(node(tmp_path, gpu_pci=pci, versions={"rocm": "7.2.0-43",
                                                                                    "amdgpu": driver}),
                                             name, node_class=node_class))
                   for name, (pci, driver, node_class) in hosts.items())
    return records, report.report_fleet(dict((name, {"r": record}) for name, record in records.items()),
                                        sorted(records), "r")


def test_each_gpu_row_carries_its_firmware(tmp_path):
    records, _fleet = r9700_fleet(tmp_path)
    rows = dict((gpu["pci_bus"], gpu) for gpu in records["r9700-b"]["gpus"])
    assert [rows[bus]["firmware"]["vbios"] for bus in sorted(rows)] == [
        "113-48WD6SHD1-P02", "113-APM107573-101", "113-R9700AT-F40"]
    assert rows["0000:0a:00.0"]["firmware"]["source"] == "debugfs"
    assert rows["0000:0a:00.0"]["firmware"]["firmware"]["mes"] == "0x0000008b"
    assert records["r9700-a"]["node_class"] == "r9700_nodes"
    for record in records.values():
        assert report.valid_record(record, record["name"]) == record


def test_drift_within_the_node_class(tmp_path):
    _records, fleet = r9700_fleet(tmp_path)
    hosts = dict((host["name"], host) for host in fleet["hosts"])
    a = dict((gpu["pci_bus"], gpu) for gpu in hosts["r9700-a"]["gpus"])
    b = dict((gpu["pci_bus"], gpu) for gpu in hosts["r9700-b"]["gpus"])
    # MES 0x81 on the first host's two cards, 0x8b on the second's three: the first host's cards are unlike the class.
    assert "mes 0x00000081, unlike the class (0x0000008b on 3 of 5 GPUs)" in a["0000:03:00.0"]["drift"]
    assert "smc 0x00684a00, unlike the class (0x00684c00 on 3 of 5 GPUs)" in a["0000:0b:00.0"]["drift"]
    same = ("rlc ", "imu ", "ta_ras ", "sdma0 ", "VBIOS ")
    assert not any(item.startswith(same) for item in a["0000:03:00.0"]["drift"])
    # The VBIOS: 113-APM107573-101 on three cards (two of the first host, one of the second).
    assert b["0000:0a:00.0"]["drift"] == [
        "VBIOS 113-48WD6SHD1-P02, unlike the class (113-APM107573-101 on 3 of 5 GPUs)"]
    assert b["0000:0d:00.0"]["drift"] == []
    assert b["0000:45:00.0"]["drift"] == ["VBIOS 113-R9700AT-F40, unlike the class (113-APM107573-101 on 3 of 5 GPUs)"]
    # The iGPU is a model of its own in the class; the Strix Halo a class of its own: nothing to compare.
    assert a["0000:7c:00.0"]["drift"] == [] and hosts["strix-01"]["gpus"][0]["drift"] == []
    # Two hosts, two drivers: the class is split, both are listed; the same ROCm release: nothing.
    for name, driver in (("r9700-a", "6.16.13"), ("r9700-b", "6.19.0")):
        assert hosts[name]["drift"] == ["amdgpu driver %s: the class is split (6.16.13 on 1, 6.19.0 on 1 hosts)"
                                        % driver]
    assert hosts["strix-01"]["drift"] == []
    assert fleet["summary"]["hosts_with_drift"] == 2


def test_the_page_shows_firmware_and_drift(tmp_path):
    import re
    import jinja2
    _records, fleet = r9700_fleet(tmp_path)
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(ROOT / "roles" / "rocm_report" / "templates")))
    html = env.get_template("fleet-report.html.j2").render(__rocm_report=fleet, rocm_report_title="t")
    heads = len(re.findall(r"<th\b", html))
    assert [len(re.findall(r"<td\b", row)) for row in re.findall(r"<tr class=.*?</tr>", html, re.S)] == [heads] * 7
    assert "VBIOS 113-48WD6SHD1-P02" in html and "class r9700_nodes" in html
    assert "VBIOS 113-R9700AT-F40, unlike the class (113-APM107573-101 on 3 of 5 GPUs)" in html
    assert "the class is split (6.16.13 on 1, 6.19.0 on 1 hosts)" in html
    assert re.search(r"<b>2</b>hosts unlike their class", html)
