"""The rocm_validate role through ansible-playbook -c local against localhost: threshold evaluation of canned and
real reports (pass, fail listing every figure, unknown model), check mode, bad input, a full tiny CPU run
(copy, run, fetch, evaluate) whose second run changes nothing, and the PyTorch venv install from a wheel index."""

import base64
import hashlib
import json
import os
import re
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
PLAYBOOK = REPO / "playbooks" / "validate.yml"
REPORTS = REPO / "collections/ansible_collections/gpulab/rocm/tests/unit/plugins/filter/fixtures"
H200 = REPORTS / "gpu_bench-nvidia-h200-2026-11-29.json"
RX6900XT = REPORTS / "gpu_bench-rx6900xt-canned-slow-resnet50.json"
CPU_TINY = REPORTS / "gpu_bench-cpu-tiny.json"
ANSIBLE_PLAYBOOK = Path(sys.executable).with_name("ansible-playbook")

pytestmark = pytest.mark.skipif(not ANSIBLE_PLAYBOOK.exists(), reason="ansible-playbook is not beside this python")


def playbook(tmp_path, *extra, check=False):
    # The folder in which each run makes its private one (like /var/tmp): it must be empty again afterwards.
    (tmp_path / "remote").mkdir(exist_ok=True)
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_LOCALHOST_WARNING="false",
               ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0", ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-tmp"))
    args = [str(ANSIBLE_PLAYBOOK), "-c", "local", "-i", "localhost,", str(PLAYBOOK),
            "-e", "rocm_validate_hosts=localhost", "-e", "ansible_python_interpreter=%s" % sys.executable,
            "-e", "rocm_validate_fetch_dest=%s" % (tmp_path / "reports"),
            "-e", "rocm_validate_remote_dir=%s" % (tmp_path / "remote"), *extra]
    if check:
        args += ["--check", "--diff"]
    proc = subprocess.run(args, cwd=str(REPO), env=env, capture_output=True, text=True, timeout=600, check=False)
    return proc, proc.stdout + proc.stderr


def recap(output, host="localhost"):
    match = re.search(r"^%s\s+:\s+ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)" % re.escape(host),
                      output, re.M)
    assert match, output
    return {"ok": int(match[1]), "changed": int(match[2]), "unreachable": int(match[3]), "failed": int(match[4])}


RESULT_LINE = re.compile(r"^(ok|changed|fatal|failed|skipping): \[([^\]]+)\](: FAILED!)?( =>)?\s*$")


def results_by_host(stdout):
    """{host: {task name: result}} as the default callback prints them (ansible.cfg: callback_result_format = yaml):
    each result's indented YAML block read back, with its status; loop items are left out."""
    found, task, lines = {}, None, stdout.splitlines()
    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        banner = re.match(r"^TASK \[(.*)\] \*+$", line)
        if banner:
            task = banner[1]
            continue
        match = RESULT_LINE.match(line)
        if not match:
            continue
        block = []
        # the indented block, blank lines in a block scalar (pip's message) included
        while index < len(lines) and (lines[index].startswith(" ") or not lines[index]):
            block.append(lines[index])
            index += 1
        result = (yaml.safe_load(textwrap.dedent("\n".join(block))) if match[4] and block else None) or {}
        found.setdefault(match[2], {})[task] = dict(result, status=match[1])
    return found


def hosts_playbook(tmp_path, hosts, *extra, check=False):
    """The role over an inventory of local hosts in one ansible-playbook run, each host with its own settings (host
    variables) and its own folders: tmp_path/HOST/remote (the shared folder its runs make theirs in, which must be
    empty again afterwards) and tmp_path/HOST/reports. Returns the process, its output and, per host, its recap and
    its results by task name."""
    inventory = {}
    for host, settings in hosts.items():
        (tmp_path / host / "remote").mkdir(parents=True, exist_ok=True)
        inventory[host] = dict(settings, rocm_validate_fetch_dest=str(tmp_path / host / "reports"),
                               rocm_validate_remote_dir=str(tmp_path / host / "remote"))
    (tmp_path / "hosts.json").write_text(json.dumps({"all": {"hosts": inventory, "vars": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable}}}))
    # results_by_host reads the default callback's YAML results (ansible.cfg's choice), whatever the environment says
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_LOCALHOST_WARNING="false",
               ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0", ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-tmp"),
               ANSIBLE_STDOUT_CALLBACK="default", ANSIBLE_CALLBACK_RESULT_FORMAT="yaml")
    args = [str(ANSIBLE_PLAYBOOK), "-i", str(tmp_path / "hosts.json"), str(PLAYBOOK), "-e", "rocm_validate_hosts=all",
            *extra]
    if check:
        args += ["--check", "--diff"]
    proc = subprocess.run(args, cwd=str(REPO), env=env, capture_output=True, text=True, timeout=600, check=False)
    out = proc.stdout + proc.stderr
    results = results_by_host(proc.stdout)
    return proc, out, dict((host, {"recap": recap(out, host), "tasks": results.get(host, {})}) for host in hosts)


def failure(host):
    """The message of the task that failed the host (its only one: a failed host runs no further task)."""
    failed = [result for result in host["tasks"].values() if result["status"] in ("fatal", "failed")]
    assert len(failed) == 1 and host["recap"]["failed"] == 1, host
    return failed[0]["msg"]


SHOW = "rocm_validate : Show the figures"
WARN = "rocm_validate : Warn about figures under threshold"
BAD_SETTINGS = [
    ({"rocm_validate_report_src": "/nonexistent/report.json"}, "must be an existing"),
    ({"rocm_validate_unknown_model": "ignore"}, "rocm_validate_unknown_model"),
    # Refused by the role's schema (meta/input_constraints.yml) before its plan reads it.
    ({"rocm_validate_thresholds": {"NVIDIA H200": [600]}},
     "rocm_validate_thresholds['NVIDIA H200'] must be a mapping (dict), got a list"),
    ({"rocm_validate_gemm_enabled": False, "rocm_validate_bandwidth_enabled": False,
      "rocm_validate_resnet50_enabled": False, "rocm_validate_bert_enabled": False}, "enable at least one benchmark"),
]


@pytest.fixture(scope="module")
def evaluations(tmp_path_factory):
    """The evaluation of given reports and the refusal of bad settings: one run over one local host per case (each
    a run of its own before, about 2 s each), every host's outcome its own (its recap, results and folders)."""
    tmp_path = tmp_path_factory.mktemp("evaluate")
    figures = json.loads(H200.read_text())["figures"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"schema_version": 1, "figures": {}}))
    hosts = {
        "h200": {"rocm_validate_report_src": str(H200)},
        "rx6900xt": {"rocm_validate_report_src": str(RX6900XT)},
        # Thresholds over every figure of the real H200 report: all of them are named.
        "every-figure": {"rocm_validate_report_src": str(H200), "rocm_validate_thresholds": {
            "NVIDIA H200": dict((name, value * 10) for name, value in figures.items())}},
        "warn-only": {"rocm_validate_report_src": str(RX6900XT), "rocm_validate_fail_on_threshold": False},
        "unknown-report": {"rocm_validate_report_src": str(CPU_TINY)},
        "unknown-fail": {"rocm_validate_report_src": str(CPU_TINY), "rocm_validate_unknown_model": "fail"},
        "bad-report": {"rocm_validate_report_src": str(bad)},
    }
    hosts.update(("bad-settings-%d" % index, settings) for index, (settings, _message) in enumerate(BAD_SETTINGS))
    proc, out, found = hosts_playbook(tmp_path, hosts)
    # Some hosts fail (rc 2); any other status is an error of the run itself.
    assert proc.returncode == 2, out
    return {"path": tmp_path, "figures": figures, "hosts": found}


def test_real_h200_report_passes(evaluations):
    host = evaluations["hosts"]["h200"]
    assert host["recap"]["failed"] == 0 and host["recap"]["unreachable"] == 0, host
    shown = host["tasks"][SHOW]["msg"]
    assert shown["model"] == "NVIDIA H200" and shown["figures"]["gemm_bf16_tflops_median"] == 664.155
    # evaluating a given report touches nothing on the host
    folder = evaluations["path"] / "h200"
    assert not list((folder / "remote").iterdir()) and not (folder / "reports").exists()


def test_canned_slow_rx6900xt_fails_naming_the_figure(evaluations):
    message = failure(evaluations["hosts"]["rx6900xt"])
    assert message.startswith("rx6900xt failed GPU validation, 1 figure(s) under threshold")
    assert "resnet50_images_per_s = 290.4 is under its threshold 312" in message
    assert "bert_samples_per_s" not in message.split("failed GPU validation")[1]


def test_every_failing_figure_is_listed(evaluations):
    """Thresholds over every figure of the real H200 report, given as the host's variables: all of them are named."""
    figures = evaluations["figures"]
    message = failure(evaluations["hosts"]["every-figure"]).split("failed GPU validation, ", 1)[1]
    assert message.startswith("%d figure(s) under threshold" % len(figures))
    for name in figures:
        assert name + " = " in message, name


def test_warn_only_does_not_fail(evaluations):
    host = evaluations["hosts"]["warn-only"]
    assert host["recap"]["failed"] == 0 and host["recap"]["unreachable"] == 0, host
    assert host["tasks"][WARN]["msg"] == ["AMD Radeon RX 6900 XT: resnet50_images_per_s = 290.4 is under its "
                                          "threshold 312"]


def test_unknown_model_reports_only_or_fails_by_policy(evaluations):
    host = evaluations["hosts"]["unknown-report"]
    assert host["recap"]["failed"] == 0 and host["recap"]["unreachable"] == 0, host
    assert host["tasks"][SHOW]["msg"]["thresholds"] == "none for this model: report only"
    assert "no thresholds for GPU model 'cpu'" in failure(evaluations["hosts"]["unknown-fail"])


@pytest.mark.parametrize("index, message", [(index, message) for index, (_settings, message) in enumerate(BAD_SETTINGS)])
def test_bad_settings_fail_before_anything_runs(evaluations, index, message):
    assert message in failure(evaluations["hosts"]["bad-settings-%d" % index])
    assert not list((evaluations["path"] / ("bad-settings-%d" % index) / "remote").iterdir())


def test_bad_report_gives_a_clear_error(evaluations):
    assert "the validation report has no device.name" in failure(evaluations["hosts"]["bad-report"])


@pytest.fixture(name="torch_python")
def fixture_torch_python():
    pytest.importorskip("torch", reason="torch is pinned in requirements-validate.txt")
    return sys.executable


@pytest.fixture(scope="module")
def check_mode(tmp_path_factory):
    """One run in check mode over two fresh hosts: one given a report (evaluated even so), and one set for the tiny
    CPU run, which test_tiny_cpu_run_end_to_end_and_idempotent alone goes on to run for real from where it stands."""
    tmp_path = tmp_path_factory.mktemp("check-mode")
    hosts = {"given": {"rocm_validate_report_src": str(RX6900XT)},
             "tiny": {"rocm_validate_python": sys.executable, "rocm_validate_tiny": True}}
    proc, out, found = hosts_playbook(tmp_path, hosts, check=True)
    # the given report fails its host (rc 2); any other status is an error of the run itself
    assert proc.returncode == 2, out
    return {"path": tmp_path, "hosts": found}


def test_check_mode_still_evaluates_a_given_report(check_mode):
    assert "resnet50_images_per_s = 290.4 is under its threshold 312" in failure(check_mode["hosts"]["given"])


def test_tiny_cpu_run_end_to_end_and_idempotent(check_mode, torch_python):
    # Check mode first, on the fresh host (the check_mode run, settings as its host variables): no benchmark runs, no
    # report is fetched or evaluated.
    host = check_mode["hosts"]["tiny"]
    assert host["recap"]["failed"] == 0 and host["recap"]["unreachable"] == 0, host
    assert host["tasks"]["rocm_validate : Skip the benchmarks in check mode"]["msg"].startswith(
        "Check mode runs no benchmark")
    tmp_path = check_mode["path"] / "tiny"
    assert not (tmp_path / "reports").exists()
    extra = ["-e", "rocm_validate_python=%s" % torch_python, "-e", '{"rocm_validate_tiny": true}']

    # Traps another user of the host could set in the shared folder before the run (as in /var/tmp): a folder of
    # the name older releases used, holding a script of theirs, and report files linked to a file of root's.
    remote = tmp_path / "remote"
    remote.chmod(0o1777)
    squatted = remote / "gpulab-validate"
    squatted.mkdir()
    marker = tmp_path / "planted-script-ran"
    (squatted / "gpu_bench.py").write_text("open(%r, 'w').close()\n" % str(marker))
    victim = tmp_path / "root-file"
    victim.write_text("root's file\n")
    for name in ("report.json", "report.json.tmp"):
        (remote / name).symlink_to(victim)
        (squatted / name).symlink_to(victim)
    os.chown(squatted, 65534, 65534)
    planted = sorted(str(p.relative_to(remote)) for p in remote.rglob("*"))

    proc, out = playbook(tmp_path, *extra)
    assert proc.returncode == 0, out
    first = recap(out)
    # The script ran from a private folder made for the run and removed after it: the planted script never ran,
    # the links were not followed, and the shared folder holds only what was planted.
    assert first["failed"] == 0 and first["changed"] == 0
    assert not marker.exists()
    assert victim.read_text() == "root's file\n"
    assert sorted(str(p.relative_to(remote)) for p in remote.rglob("*")) == planted
    report = json.loads((tmp_path / "reports" / "localhost.json").read_text())
    assert report["device"]["name"] == "cpu" and report["config"]["tiny"] is True
    assert report["errors"] == {} and report["figures"]["resnet50_images_per_s"] > 0

    # The run changed nothing on the host (the benchmarks run every time; the report is fetched to the controller),
    # so a second real run would only repeat them: check mode over what the first left is the re-run that matters.
    proc, out = playbook(tmp_path, *extra, check=True)
    assert proc.returncode == 0, out
    assert recap(out)["changed"] == 0


WHEEL_INDEXES = {
    "6.2.4": "rocm6.2.4",  # the point release with its own index (rocm-reference.md 8.1)
    "6.2": "rocm6.2",
    "6.1.3": "rocm6.1",
    "6.3.1": "rocm6.3",
    "6.4.0": "rocm6.4",
    "7.2.3": "rocm7.2",  # torch 2.11 is built for ROCm 7.2 (rocm-reference.md 8.1), from the release table
    "7.1": "rocm7.1",
}
# The ROCm Core SDK: AMD's own index (plan_validate.py).
CORE_WHEEL_INDEXES = {
    "10.1.0": "https://stable.repo.amd.com/rocm/whl-next/",
    "7.14.1": "https://repo.amd.com/rocm/whl-multi-arch/",
}


@pytest.fixture(scope="module")
def index_urls(tmp_path_factory):
    """index_url.yml (the role's index default, rendered) once over one local host per release: {release: URL}."""
    tmp_path = tmp_path_factory.mktemp("index-url")
    releases = sorted(set(WHEEL_INDEXES) | set(CORE_WHEEL_INDEXES))
    hosts = dict(("r" + release, {"rocm_version": release}) for release in releases)
    inventory = tmp_path / "hosts.json"
    inventory.write_text(json.dumps({"all": {"hosts": hosts, "vars": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable}}}))
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_LOCALHOST_WARNING="false",
               ANSIBLE_NOCOLOR="1", ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-tmp"))
    proc = subprocess.run([str(ANSIBLE_PLAYBOOK), "-i", str(inventory), str(Path(__file__).with_name("index_url.yml"))],
                          cwd=str(REPO), env=env, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    found = dict(re.findall(r"^\s*msg: r(\S+) INDEX=(\S+?)\"?$", proc.stdout, re.M))
    assert sorted(found) == releases, proc.stdout
    return found


@pytest.mark.parametrize("rocm_version, index", sorted(WHEEL_INDEXES.items()))
def test_wheel_index_follows_the_rocm_version(index_urls, rocm_version, index):
    # the host part is the role default's; what varies is the index folder
    assert re.fullmatch(r"https://\S+/whl/(rocm[0-9.]+)/?", index_urls[rocm_version]).group(1) == index


@pytest.mark.parametrize("rocm_version, index", sorted(CORE_WHEEL_INDEXES.items()))
def test_a_core_release_takes_amds_wheel_index(index_urls, rocm_version, index):
    assert index_urls[rocm_version] == index


def test_argument_specs_mirror_defaults():
    yaml = pytest.importorskip("yaml")
    role = REPO / "roles" / "rocm_validate"
    defaults = yaml.safe_load((role / "defaults" / "main.yml").read_text())
    options = yaml.safe_load((role / "meta" / "argument_specs.yml").read_text())["argument_specs"]["main"]["options"]
    assert set(defaults) == set(options)
    for name, value in defaults.items():
        assert options[name].get("default") == value, name


def test_readme_shows_the_defaults_as_they_are():
    role = REPO / "roles" / "rocm_validate"
    body = (role / "defaults" / "main.yml").read_text().split("---\n", 1)[1].rstrip("\n")
    assert "```yaml\n%s\n```" % body in (role / "README.md").read_text()


def build_wheel_index(root, project="gpulab-fixture-torch", version="1.0"):
    """A PEP 503 index in root/simple holding one small pure-Python wheel, built here (zipfile: no network, no
    build backend). Returns the index URL."""
    module = project.replace("-", "_")
    dist_info = "%s-%s.dist-info" % (module, version)
    files = {
        "%s/__init__.py" % module: "VERSION = %r\n" % version,
        "%s/METADATA" % dist_info: "Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (project, version),
        "%s/WHEEL" % dist_info: "Wheel-Version: 1.0\nGenerator: gpulab-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = ["%s,sha256=%s,%d" % (name, base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest())
                                   .rstrip(b"=").decode(), len(text.encode())) for name, text in files.items()]
    files["%s/RECORD" % dist_info] = "\n".join(record + ["%s/RECORD,," % dist_info]) + "\n"
    folder = root / "simple" / project
    folder.mkdir(parents=True)
    wheel = "%s-%s-py3-none-any.whl" % (module, version)
    with zipfile.ZipFile(folder / wheel, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    (folder / "index.html").write_text('<!DOCTYPE html><html><body><a href="%s">%s</a></body></html>\n'
                                       % (wheel, wheel))
    (root / "simple" / "index.html").write_text('<!DOCTYPE html><html><body><a href="%s/">%s</a></body></html>\n'
                                                % (project, project))
    return (root / "simple").as_uri()


def test_the_venv_is_installed_from_the_wheel_index(tmp_path):
    # The install path of rocm_validate_install_pytorch, for real: python3 -m venv, then pip from the index the role
    # is given (a local one with a wheel built here, as a lab mirror of PyTorch's index would be).
    index = build_wheel_index(tmp_path / "index")
    venv = tmp_path / "torch-venv"
    extra = ["--tags", "rocm_validate_install", "-e", '{"rocm_validate_install_pytorch": true}',
             "-e", "rocm_validate_venv=%s" % venv, "-e", "rocm_validate_pytorch_index_url=%s" % index,
             "-e", '{"rocm_validate_pytorch_packages": ["gpulab-fixture-torch==1.0"]}']
    proc, out = playbook(tmp_path, *extra)
    assert proc.returncode == 0, out
    assert recap(out)["changed"] == 1, out
    version = subprocess.run([str(venv / "bin" / "python"), "-c", "import gpulab_fixture_torch as m; print(m.VERSION)"],
                             capture_output=True, text=True, check=True).stdout.strip()
    assert version == "1.0"
    # Then one run over two hosts on that venv: the same package again changes nothing, and a package the index does
    # not hold fails with pip's own words, naming it. Side by side on one venv, neither pip writes to it: one finds
    # the package there, the other finds no 2.0 in the index before it would install anything.
    proc, out, hosts = hosts_playbook(tmp_path, {
        "again": {"rocm_validate_pytorch_packages": ["gpulab-fixture-torch==1.0"]},
        "missing": {"rocm_validate_pytorch_packages": ["gpulab-fixture-torch==2.0"]}}, *extra[:-2])
    assert proc.returncode == 2, out
    again = hosts["again"]["recap"]
    assert again["failed"] == again["unreachable"] == again["changed"] == 0, out
    failure(hosts["missing"])
    pip = hosts["missing"]["tasks"]["rocm_validate : Install the PyTorch ROCm wheels into the venv"]["msg"]
    assert ":stderr:" in pip and "gpulab-fixture-torch==2.0" in pip.split(":stderr:", 1)[1], pip
    # and the venv holds what the first run installed
    version = subprocess.run([str(venv / "bin" / "python"), "-c", "import gpulab_fixture_torch as m; print(m.VERSION)"],
                             capture_output=True, text=True, check=True).stdout.strip()
    assert version == "1.0"
