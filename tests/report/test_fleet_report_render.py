"""The fleet report page as Ansible renders it (issue 20, item 10): ansible-core 2.19's templar ignores
`{% autoescape %}`, so a page that relied on it was escaped under plain Jinja2 and not under ansible-playbook. Here
the role's own write tasks render a record forged the way a node's probe reply could be, through ansible-playbook."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import test_fleet_report as base  # noqa: E402  (its node and tool helpers)

ROOT = Path(__file__).resolve().parents[2]
ANSIBLE_PLAYBOOK = Path(sys.executable).with_name("ansible-playbook")
PLAYBOOK = """
- name: Write the fleet report of one forged record
  hosts: localhost
  gather_facts: false
  tasks:
    - name: The record, as gpulab.rocm.plan (phase report) would register it
      ansible.builtin.set_fact:
        __rocm_report_host: {record: "{{ lookup('ansible.builtin.file', record_file) | from_json }}"}
    - name: The role's own writing tasks
      ansible.builtin.include_role:
        name: rocm_report
        tasks_from: write.yml
"""


@pytest.mark.skipif(not ANSIBLE_PLAYBOOK.exists(), reason="ansible-playbook is not beside this python")
def test_the_page_ansible_writes_escapes_every_value(tmp_path):
    record = base.report.host_record(base.node(tmp_path, tools={"rocminfo": base.rocminfo(
        "rocminfo/gfx90a-mi250x-gcd-4numa-epyc7a53-rocm5.7.txt")}), 'n1"><script>alert(1)</script>')
    gpu = record["gpus"][0]
    gpu["model"] = "<img src=x onerror=alert(1)>"
    # The value the old page printed without | e: the link's "limited at" (the numbers are the record's own).
    gpu["link"].update(at='0000:d1:00.0" onmouseover="alert(2)', source="sysfs", width=8, speed_gts=16.0)
    gpu["driver"] = "<b>amdgpu</b>"
    # The host tuning's line and findings (rocm_tuning's plan) come from the node too.
    record["tuning"] = {"line": "memlock: <i>written now</i>", "findings": ['cpu governor: <a href="x">none</a>']}
    (tmp_path / "record.json").write_text(json.dumps(record))
    (tmp_path / "play.yml").write_text(PLAYBOOK)
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_LOCALHOST_WARNING="false",
               ANSIBLE_NOCOLOR="1", ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-tmp"))
    proc = subprocess.run([str(ANSIBLE_PLAYBOOK), "-c", "local", "-i", "localhost,", str(tmp_path / "play.yml"),
                           "-e", "ansible_python_interpreter=%s" % sys.executable,
                           "-e", "record_file=%s" % (tmp_path / "record.json"),
                           "-e", "rocm_report_dest=%s" % (tmp_path / "report"), "-e", '{"rocm_report_set_stats": false}'],
                          cwd=str(ROOT), env=env, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    page = (tmp_path / "report" / "fleet-report.html").read_text()
    for live in ("<script>alert", "<img src=x", 'onmouseover="alert', "<b>amdgpu", "<i>written", "<a href"):
        assert live not in page, live
    assert ">Tuning</th>" in page and "memlock: &lt;i&gt;written now&lt;/i&gt;" in page
    assert "limited at 0000:d1:00.0&#34; onmouseover=&#34;alert(2)" in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page and "&lt;b&gt;amdgpu" in page


FLEET = """
- name: The fleet report of two hosts, one of them without a record
  hosts: all
  gather_facts: false
  tasks:
    - name: The record of n1, as gpulab.rocm.plan (phase report) would register it
      ansible.builtin.set_fact:
        __rocm_report_host: {record: "{{ lookup('ansible.builtin.file', record_file) | from_json }}"}
      when: inventory_hostname == 'n1'
    - name: The role's own writing tasks
      ansible.builtin.include_role:
        name: rocm_report
        tasks_from: write.yml
"""


def _fleet_run(tmp_path, *extra):
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_LOCALHOST_WARNING="false",
               ANSIBLE_NOCOLOR="1", ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-tmp"), ANSIBLE_SHOW_CUSTOM_STATS="1",
               ANSIBLE_CALLBACK_RESULT_FORMAT="json")
    return subprocess.run([str(ANSIBLE_PLAYBOOK), "-c", "local", "-i", "n1,n2,", str(tmp_path / "fleet.yml"),
                           "-e", "ansible_python_interpreter=%s" % sys.executable,
                           "-e", "record_file=%s" % (tmp_path / "record.json"),
                           "-e", "rocm_report_dest=%s" % (tmp_path / "report")] + list(extra),
                          cwd=str(ROOT), env=env, capture_output=True, text=True, timeout=300, check=False)


def _changed(run):
    """changed= of each host in the recap (n1, n2): the write counts on the host that ran it once."""
    import re
    return [int(count) for count in re.findall(r"changed=(\d+)", run.stdout.split("PLAY RECAP")[1])]


@pytest.mark.skipif(not ANSIBLE_PLAYBOOK.exists(), reason="ansible-playbook is not beside this python")
def test_one_task_writes_the_report_records_the_figures_and_shows_the_summary(tmp_path):
    # gpulab.rocm.fleet_report, as the role runs it: the JSON is the report of module_utils/planning/fleet_report.py, the
    # host without a record is listed with a problem, the figures go to set_stats, a second run changes nothing
    # and check mode writes nothing.
    record = base.report.host_record(base.node(tmp_path, tools={"rocminfo": base.rocminfo(
        "rocminfo/gfx90a-mi250x-gcd-4numa-epyc7a53-rocm5.7.txt")}), "n1")
    (tmp_path / "record.json").write_text(json.dumps(record))
    (tmp_path / "fleet.yml").write_text(FLEET)
    check = _fleet_run(tmp_path, "--check")
    assert check.returncode == 0, check.stdout + check.stderr
    assert not (tmp_path / "report").exists() and _changed(check) == [0, 0], check.stdout
    assert "fleet report (not written in check mode): 2 host(s)" in check.stdout, check.stdout
    first = _fleet_run(tmp_path)
    assert first.returncode == 0, first.stdout + first.stderr
    written = json.loads((tmp_path / "report" / "fleet-report.json").read_text())
    assert written == base.report.report_fleet({"n1": {"r": record}}, ["n1", "n2"], "r")
    assert [host["reachable"] for host in written["hosts"]] == [True, False]
    assert "1 host(s) with problems, 1 unreachable" in first.stdout and "  n2: " in first.stdout, first.stdout
    # ANSIBLE_SHOW_CUSTOM_STATS: the recap ends with "CUSTOM STATS: ... RUN: {the set_stats data}".
    stats = json.loads(first.stdout.split("CUSTOM STATS")[1].split("RUN:", 1)[1])
    assert stats["rocm_report_nodes"]["n1"]["gfx_targets"] == record["gfx_targets"], stats
    assert stats["rocm_report_nodes"]["n2"]["problems"] == written["hosts"][1]["problems"], stats
    again = _fleet_run(tmp_path)
    assert _changed(first) == [1, 0] and again.returncode == 0 and _changed(again) == [0, 0], again.stdout


@pytest.mark.skipif(not ANSIBLE_PLAYBOOK.exists(), reason="ansible-playbook is not beside this python")
@pytest.mark.parametrize("inside, expected", [
    (False, "{project}/fleet-report {project}/validation-reports"),
    (True, "{home}/gpulab-rocm/fleet-report {home}/gpulab-rocm/validation-reports"),
])
def test_report_defaults_outside_an_installed_collection(tmp_path, inside, expected):
    # Issue 20, item 12: a playbook of the installed collection (an AWX execution environment) has its playbook_dir
    # in the collection, root's there; the defaults must not point into it.
    project = tmp_path / ("usr/share/ansible/collections/ansible_collections/gpulab/rocm" if inside else "project")
    (project / "playbooks").mkdir(parents=True)
    (project / "playbooks" / "show.yml").write_text("""
- name: Show the report defaults as the roles read them
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Read the defaults
      ansible.builtin.include_vars:
        file: "{{ item }}"
      loop: ["%s", "%s", "%s", "%s"]
    - name: Write them down
      ansible.builtin.copy:
        content: "{{ rocm_report_dest | normpath }} {{ rocm_validate_fetch_dest | normpath }}"
        dest: "%s"
        mode: "0644"
""" % (ROOT / "roles/rocm_report/defaults/main.yml", ROOT / "roles/rocm_report/vars/main.yml",
       ROOT / "roles/rocm_validate/defaults/main.yml", ROOT / "roles/rocm_validate/vars/main.yml",
       tmp_path / "defaults.txt"))
    home = tmp_path / "home"
    env = dict(os.environ, HOME=str(home), ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCALHOST_WARNING="false", ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-tmp"))
    proc = subprocess.run([str(ANSIBLE_PLAYBOOK), "-c", "local", "-i", "localhost,",
                           str(project / "playbooks" / "show.yml"),
                           "-e", "ansible_python_interpreter=%s" % sys.executable],
                          cwd=str(ROOT), env=env, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "defaults.txt").read_text() == expected.format(project=project, home=home)


PER_HOST = """
- name: The fleet report of three hosts, each with its own record
  hosts: all
  gather_facts: false
  tasks:
    - name: The record of this host, as gpulab.rocm.plan (phase report) would register it
      ansible.builtin.set_fact:
        __rocm_report_host: {record: "{{ lookup('ansible.builtin.file', records ~ '/' ~ inventory_hostname ~ '.json') | from_json }}"}
    - name: The role's own writing tasks
      ansible.builtin.include_role:
        name: rocm_report
        tasks_from: write.yml
"""


@pytest.mark.skipif(not ANSIBLE_PLAYBOOK.exists(), reason="ansible-playbook is not beside this python")
def test_a_forged_record_among_good_ones_through_ansible(tmp_path):
    # Issue 38: one host's probe reply with a string where the link width is and a 10**12 GPU count stopped the
    # report for every host. Through ansible-playbook (the record as Ansible's hostvars hold it): n1 and n3 are
    # reported, n2 is listed with its problem, and the task succeeds.
    records = tmp_path / "records"
    records.mkdir()
    for name in ("n1", "n2", "n3"):
        record = base.report.host_record(base.node(tmp_path, tools={"rocminfo": base.rocminfo(
            "rocminfo/gfx90a-mi250x-gcd-4numa-epyc7a53-rocm5.7.txt")}), name)
        if name == "n2":
            record["gpus"][0]["link"]["width"] = "x"
            record["gpu_count"] = 10 ** 12
        (records / ("%s.json" % name)).write_text(json.dumps(record))
    (tmp_path / "play.yml").write_text(PER_HOST)
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_LOCALHOST_WARNING="false",
               ANSIBLE_NOCOLOR="1", ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-tmp"))
    proc = subprocess.run([str(ANSIBLE_PLAYBOOK), "-c", "local", "-i", "n1,n2,n3,", str(tmp_path / "play.yml"),
                           "-e", "ansible_python_interpreter=%s" % sys.executable, "-e", "records=%s" % records,
                           "-e", "rocm_report_dest=%s" % (tmp_path / "report"), "-e", "rocm_report_set_stats=false"],
                          cwd=str(ROOT), env=env, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    written = json.loads((tmp_path / "report" / "fleet-report.json").read_text())
    assert [(host["name"], len(host["gpus"])) for host in written["hosts"]] == [("n1", 1), ("n2", 0), ("n3", 1)]
    assert written["hosts"][1]["problems"][0].startswith("the host record is invalid at gpu_count: int 1000000000000 "
                                                         "is out of range (0 to 1024)")
    assert "3 host(s), 2 GPU(s)" in proc.stdout and "  n2: the host record is invalid at gpu_count" in proc.stdout
    page = (tmp_path / "report" / "fleet-report.html").read_text()
    assert [page.count('data-host="%s"' % name) for name in ("n1", "n2", "n3")] == [1, 1, 1]
