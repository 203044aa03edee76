"""Every shipped filter, called as a filter in a real playbook with its documented example (the EXAMPLES of its
.yml), over real inputs: the validation reports in fixtures/, the role's default thresholds and apt's own lock
message. A filter no role calls is not shipped (issue 19)."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpulab.rocm.plugins.module_utils.node import health

HERE = Path(__file__).resolve().parent
COLLECTION = HERE.parents[3]
FILTERS = COLLECTION / "plugins" / "filter"
ROOT = COLLECTION.parents[3]
ANSIBLE_PLAYBOOK = (shutil.which("ansible-playbook")
                    or shutil.which("ansible-playbook", path=os.path.dirname(sys.executable)))
pytestmark = pytest.mark.skipif(ANSIBLE_PLAYBOOK is None, reason="needs ansible-playbook")
# What apt-get printed with the dpkg lock held (the faults scenario's lock fault).
LOCK = ("E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 4242 (apt-get)\n"
        "E: Unable to acquire the dpkg frontend lock (/var/lib/dpkg/lock-frontend), is another process using it?")


def example(name):
    """The documented example of a filter: one `key: template` mapping."""
    return yaml.safe_load(yaml.safe_load((FILTERS / (name + ".yml")).read_text())["EXAMPLES"])


def inputs():
    thresholds = yaml.safe_load((ROOT / "roles" / "rocm_validate" / "defaults" / "main.yml").read_text())[
        "rocm_validate_thresholds"]
    slow = json.loads((HERE / "fixtures" / "gpu_bench-rx6900xt-canned-slow-resnet50.json").read_text())
    return {
        # Plays of filters whose examples build on each other run together, in this order.
        ("apt_failure",): {"ansible_failed_result": {"msg": "non-zero return code", "stdout": LOCK}},
        ("validation_thresholds",): {"report": slow, "rocm_validate_thresholds": thresholds},
        ("validation_failures",): {"report": slow, "rocm_validate_thresholds": thresholds},
        # What gpulab-gpu-health prints for a node whose second GPU left KFD (the checks' own entries).
        ("health_failures",): {"health": {"stdout": json.dumps({
            "schema": 1, "verdict": "unhealthy",
            "checks": health.check_gpu_count(1, 2, 2) + health.check_amdgpu(True, [])})}},
        # A lab-group scratch folder (2770, not sticky) as ansible.builtin.stat describes it, under a root-owned /.
        ("validation_remote_dir",): {"folder": {"stat": {"exists": True, "isdir": True, "islnk": False, "uid": 0,
                                                         "mode": "2770", "wgrp": True, "woth": False}},
                                     "parent": {"stat": {"exists": True, "isdir": True, "islnk": False, "uid": 0,
                                                         "mode": "0755", "wgrp": False, "woth": False}}},
        # The play's one host with the metrics on, as its hostvars give them.
        ("metrics_file_sd",): {"__facts": {"rocm_metrics_enabled": True, "rocm_metrics_node_class": "mi300_nodes",
                                           "rocm_metrics_listen_address": "127.0.0.1:19612"}},
    }


def run(tmp_path):
    plays = []
    kept = {}
    for index, (names, variables) in enumerate(inputs().items()):
        # A set_fact per example: a later example reads what an earlier one set.
        tasks = []
        if "__facts" in variables:
            # hostvars carry facts (not play vars): the host's variables as an inventory would give them.
            tasks.append({"name": "The host's variables", "ansible.builtin.set_fact": variables["__facts"]})
        for name in names:
            for key, template in example(name).items():
                tasks.append({"name": name, "ansible.builtin.set_fact": {key: template}})
        keys = [key for name in names for key in example(name)]
        # The play's results under a name of its own (plays set the same keys: failures), written by the last play.
        kept["+".join(names)] = "__example_results_%d" % index
        tasks.append({"name": "Keep the results for the test", "ansible.builtin.set_fact": {
            kept["+".join(names)]: "{{ %s }}" % ("{" + ", ".join("'%s': %s" % (key, key) for key in keys) + "}")}})
        plays.append({"name": "+".join(names), "hosts": "localhost", "gather_facts": False, "vars": variables,
                      "tasks": tasks})
    # One file for all the plays' results: a copy per play cost half a second each.
    plays.append({"name": "Write the results for the test", "hosts": "localhost", "gather_facts": False, "tasks": [
        {"name": "Write the results", "ansible.builtin.copy": {
            "dest": str(tmp_path / "results.json"), "mode": "0600",
            "content": "{{ %s | to_json }}" % ("{" + ", ".join("'%s': %s" % item for item in kept.items()) + "}")}}]})
    playbook = tmp_path / "examples.yml"
    playbook.write_text(yaml.safe_dump(plays))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(ROOT / "collections"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"))
    proc = subprocess.run([ANSIBLE_PLAYBOOK, "-c", "local", "-i", "localhost,", str(playbook), "-e",
                           "ansible_python_interpreter=%s" % sys.executable], capture_output=True, text=True,
                          env=env, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    results = json.loads((tmp_path / "results.json").read_text())
    assert sorted(results) == sorted(kept), results
    return results


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    return run(tmp_path_factory.mktemp("filters"))


def test_every_shipped_filter_has_its_example_run():
    shipped = sorted(path.stem for path in FILTERS.glob("*.py"))
    assert shipped == sorted(name for names in inputs() for name in names)


def test_apt_failure_names_the_process_holding_the_lock(results):
    failure = results["apt_failure"]["msg"]
    assert failure["kind"] == "lock" and "4242" in failure["reason"], failure


def test_validation_failures_gives_the_documented_result(results):
    documented = ["AMD Radeon RX 6900 XT: resnet50_images_per_s = 290.4 is under its threshold 312"]
    # The example's comment is the result for the canned slow RX 6900 XT report.
    assert "# %s" % json.dumps(documented).replace('"', "'") in \
        yaml.safe_load((FILTERS / "validation_failures.yml").read_text())["EXAMPLES"]
    assert results["validation_failures"]["failures"] == documented


def test_validation_thresholds_are_those_of_the_report_s_model(results):
    applied = results["validation_thresholds"]["applied"]
    assert applied == {"resnet50_images_per_s": 312, "bert_samples_per_s": 58}, applied


def test_health_failures_lists_the_failing_checks(results):
    assert results["health_failures"]["failures"] == ["health check: 1 GPU(s) in KFD and 2 on the PCI bus, 2 expected"]


def test_validation_remote_dir_refuses_a_group_writable_folder(results):
    problems = results["validation_remote_dir"]["problems"]
    assert len(problems) == 1 and "2770" in problems[0], problems


def test_metrics_file_sd_targets_only_the_hosts_with_metrics(results):
    assert results["metrics_file_sd"]["targets"] == [{"targets": ["localhost:19612"], "labels": {"node_class": "mi300_nodes"}}]
