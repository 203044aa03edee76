"""AWX configuration as code (playbooks/awx): the survey specs, the job templates and configure.yml, checked as far
as they can be without an AWX server (there is none here; docs/awx.md says what is and is not covered).

- Every survey passes the checks AWX's API applies when a survey is saved. They are restated here from the AWX
  source (ansible/awx, awx/api/views/__init__.py, JobTemplateSurveySpec._validate_spec_data and ALLOWED_TYPES,
  read at commit 318274c70f07ef048434f84efe1cb6ebf5da11c4); a mutation test shows each check can fail.
- Every survey variable is one the job's playbook reads, with a matching type (and choices within the role's).
- configure.yml runs with AWX's API pointed at a closed port on 127.0.0.1: each awx.awx module validates its
  arguments (unknown options, wrong choices or types fail there) and only then fails to connect.
"""

import copy
import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpulab.rocm.plugins.module_utils.planning import stack

ROOT = Path(__file__).resolve().parents[2]
AWX = ROOT / "playbooks" / "awx"
TEMPLATES = yaml.safe_load((AWX / "job_templates.yml").read_text())["gpulab_awx_job_templates"]
SURVEYS = sorted((AWX / "surveys").glob("*.json"))

# What AWX stores for each question type, and the Python type a default must have.
ALLOWED_TYPES = {"text": str, "textarea": str, "password": str, "multiplechoice": str, "multiselect": str,
                 "integer": int, "float": float}


def survey_errors(spec):
    """The reasons AWX would refuse this survey spec (empty: it would accept it)."""
    errors = []
    for field, kind in (("name", str), ("description", str), ("spec", list)):
        if field not in spec:
            errors.append("field %r is missing" % field)
        elif not isinstance(spec[field], kind):
            errors.append("field %r must be a %s" % (field, kind.__name__))
    if errors:
        return errors
    if not spec["spec"]:
        errors.append("'spec' has no questions")
    seen = set()
    for index, question in enumerate(spec["spec"]):
        where = "question %d" % index
        if not isinstance(question, dict):
            errors.append("%s is not an object" % where)
            continue
        missing = [f for f in ("type", "question_name", "variable", "required") if f not in question]
        if missing:
            errors.append("%s lacks %s" % (where, ", ".join(missing)))
            continue
        for field in ("type", "question_name", "variable"):
            if not isinstance(question[field], str):
                errors.append("%s: %r must be a string" % (where, field))
        if not isinstance(question["required"], bool):
            errors.append("%s: 'required' must be a boolean" % where)
        if question["variable"] in seen:
            errors.append("%s: variable %r is used twice" % (where, question["variable"]))
        seen.add(question["variable"])
        qtype = question["type"]
        if qtype not in ALLOWED_TYPES:
            errors.append("%s: type %r is not one of %s" % (where, qtype, sorted(ALLOWED_TYPES)))
            continue
        default = question.get("default", "")
        # bool is an int in Python; AWX would accept True for an integer, a survey author never means it.
        if default != "" and (not isinstance(default, ALLOWED_TYPES[qtype]) or isinstance(default, bool)):
            errors.append("%s: default %r is not a %s" % (where, default, qtype))
        for key in ("min", "max"):
            if question.get(key) is not None and (not isinstance(question[key], int) or isinstance(question[key], bool)):
                errors.append("%s: %r must be an integer" % (where, key))
        if qtype in ("multiplechoice", "multiselect"):
            choices = question.get("choices")
            if not choices:
                errors.append("%s: a %s question needs choices" % (where, qtype))
                continue
            choices = choices.splitlines() if isinstance(choices, str) else choices
            defaults = default.splitlines() if isinstance(default, str) else default
            if qtype == "multiplechoice" and len(defaults) > 1:
                errors.append("%s: a multiplechoice question has one default" % where)
            if any(item not in choices for item in defaults):
                errors.append("%s: default %r is not among the choices" % (where, default))
        if isinstance(default, str) and default.startswith("$encrypted$"):
            errors.append("%s: $encrypted$ is reserved for stored password defaults" % where)
    return errors


def load(path):
    return json.loads(Path(path).read_text())


@pytest.mark.parametrize("path", SURVEYS, ids=[p.name for p in SURVEYS])
def test_survey_is_one_awx_accepts(path):
    assert survey_errors(load(path)) == []


MUTATIONS = {
    "no name": (lambda s: s.pop("name"), "field 'name' is missing"),
    "spec not a list": (lambda s: s.update(spec={}), "field 'spec' must be a list"),
    "no questions": (lambda s: s.update(spec=[]), "'spec' has no questions"),
    "no required": (lambda s: s["spec"][0].pop("required"), "lacks required"),
    "required as text": (lambda s: s["spec"][0].update(required="true"), "'required' must be a boolean"),
    "duplicate variable": (lambda s: s["spec"].append(dict(s["spec"][0])), "is used twice"),
    "unknown type": (lambda s: s["spec"][0].update(type="boolean"), "is not one of"),
    "text default for a float": (lambda s: s["spec"][2].update(default="0.9"), "is not a float"),
    "float min": (lambda s: s["spec"][2].update(min=0.5), "'min' must be an integer"),
    "choice default not offered": (lambda s: s["spec"][0].update(default="maybe"), "is not among the choices"),
    "multiplechoice without choices": (lambda s: s["spec"][0].pop("choices"), "needs choices"),
}


@pytest.mark.parametrize("mutation", sorted(MUTATIONS))
def test_survey_checks_can_fail(mutation):
    spec = copy.deepcopy(load(AWX / "surveys" / "validate.json"))
    change, reason = MUTATIONS[mutation]
    change(spec)
    assert any(reason in error for error in survey_errors(spec)), survey_errors(spec)


def role_options():
    """Every role variable with its argument spec (type, choices)."""
    options = {}
    for spec_file in (ROOT / "roles").glob("*/meta/argument_specs.yml"):
        options.update(yaml.safe_load(spec_file.read_text())["argument_specs"]["main"].get("options", {}))
    return options


def task_roles(tasks):
    """The roles tasks import or include (the plan pass imports each role's tasks/plan.yml), through blocks."""
    roles = set()
    for task in tasks or []:
        for key in ("ansible.builtin.import_role", "ansible.builtin.include_role"):
            if key in task:
                roles.add(task[key]["name"])
        for key in ("block", "rescue", "always"):
            roles |= task_roles(task.get(key))
    return roles


def playbook_roles(playbook):
    """The roles a playbook runs, through the playbooks it imports (upgrade.yml imports provision.yml)."""
    plays = yaml.safe_load((ROOT / playbook).read_text())
    roles = set()
    for play in plays:
        if "ansible.builtin.import_playbook" in play:
            roles |= playbook_roles(str(Path(playbook).parent / play["ansible.builtin.import_playbook"]))
        roles |= {role["role"] if isinstance(role, dict) else role for role in play.get("roles", [])}
        for section in ("pre_tasks", "tasks", "post_tasks"):
            roles |= task_roles(play.get(section))
    return roles


def test_job_templates_point_at_playbooks_and_surveys():
    assert len({t["name"] for t in TEMPLATES}) == len(TEMPLATES)
    assert sorted(t["survey"] for t in TEMPLATES) == sorted(p.name for p in SURVEYS)
    for template in TEMPLATES:
        assert (ROOT / template["playbook"]).is_file(), template
        assert template["job_type"] in ("run", "check")
    drift = [t for t in TEMPLATES if t["job_type"] == "check"]
    assert [t["playbook"] for t in drift] == ["playbooks/provision.yml"] and drift[0]["diff_mode"] is True


@pytest.mark.parametrize("template", TEMPLATES, ids=[t["survey"] for t in TEMPLATES])
def test_survey_variables_are_what_the_playbook_reads(template):
    options = role_options()
    roles = playbook_roles(template["playbook"])
    text = (ROOT / template["playbook"]).read_text()
    for question in load(AWX / "surveys" / template["survey"])["spec"]:
        variable = question["variable"]
        if variable in stack.DEFAULTS:
            # A stack-wide input: gpulab.rocm.plan reads it for every role of the job (rocm_validate reads the release).
            assert any(role in roles for role in ("rocm_preflight", "rocm_report", "rocm_validate")), template
            wanted = {"integer": int, "text": str}[question["type"]]
            assert isinstance(stack.DEFAULTS[variable], wanted), (variable, question["type"])
            continue
        role = next((r for r in roles if variable.startswith(r + "_")), None)
        if role is None:
            assert re.search(r"\b%s\b" % re.escape(variable), text), (
                "%s: %s is neither a variable of the roles %s nor read by the playbook" % (
                    template["survey"], variable, sorted(roles)))
            continue
        assert variable in options, "%s: %s is not in %s's argument_specs" % (template["survey"], variable, role)
        spec = options[variable]
        if question["type"] == "multiplechoice" and spec.get("type") == "bool":
            assert sorted(question["choices"]) == ["false", "true"], question
        elif question["type"] == "multiplechoice":
            assert set(question["choices"]) <= set(spec.get("choices", [])), question
        else:
            wanted = {"integer": "int", "float": "float", "text": "str"}[question["type"]]
            assert spec.get("type", "str") == wanted, (variable, spec.get("type"), question["type"])


def closed_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run_configure(playbook_dir, start_at, tmp_path):
    """configure.yml from --start-at-task, AWX's API on a closed port: {task name: [failure messages]}."""
    key = tmp_path / "id_test"
    if not key.exists():
        key.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nnot a real key, never sent\n-----END OPENSSH PRIVATE KEY-----\n")
    env = dict(os.environ, CONTROLLER_HOST="http://127.0.0.1:%d" % closed_port(), CONTROLLER_OAUTH_TOKEN="test",
               ANSIBLE_STDOUT_CALLBACK="ansible.posix.json", ANSIBLE_COLLECTIONS_PATH=str(ROOT / "collections"))
    result = subprocess.run(
        [str(Path(sys.executable).parent / "ansible-playbook"), str(playbook_dir / "configure.yml"),
         "-e", "gpulab_awx_scm_url=https://git.invalid/gpulab-rocm.git", "-e", "gpulab_awx_ssh_key_file=%s" % key,
         "-e", "gpulab_awx_hide_secrets=false", "--start-at-task", start_at],
        capture_output=True, text=True, env=env, cwd=str(ROOT), timeout=300)
    report = json.loads(result.stdout)
    failures = {}
    for play in report["plays"]:
        for task in play["tasks"]:
            outcome = task["hosts"]["localhost"]
            messages = [item.get("msg", "") for item in outcome.get("results", [])] or [outcome.get("msg", "")]
            failures[task["task"]["name"]] = messages if outcome.get("failed") else []
    return failures


AWX_TASKS = ["Create the machine credential", "Create the project", "Create the inventory",
             "Source the inventory from the project", "Create the job templates with their surveys"]


@pytest.mark.parametrize("task", AWX_TASKS)
def test_configure_arguments_pass_the_modules_own_validation(task, tmp_path):
    failures = run_configure(AWX, task, tmp_path)
    messages = failures[task]
    # Each item got as far as calling the API: its arguments were accepted.
    expected = len(TEMPLATES) if task.startswith("Create the job templates") else 1
    assert len(messages) == expected and all("Connection refused" in m for m in messages), messages


def test_configure_check_catches_an_unknown_option(tmp_path):
    copy_dir = tmp_path / "awx"
    subprocess.run(["cp", "-r", str(AWX), str(copy_dir)], check=True)
    playbook = copy_dir / "configure.yml"
    playbook.write_text(playbook.read_text().replace("ask_limit_on_launch: true", "ask_limit_on_lunch: true"))
    messages = run_configure(copy_dir, AWX_TASKS[-1], tmp_path)[AWX_TASKS[-1]]
    assert messages and all("Unsupported parameters" in m and "ask_limit_on_lunch" in m for m in messages), messages


def test_configure_needs_the_repository_url(tmp_path):
    result = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), str(AWX / "configure.yml")],
                            capture_output=True, text=True, cwd=str(ROOT), timeout=300,
                            env=dict(os.environ, CONTROLLER_HOST="http://127.0.0.1:%d" % closed_port()))
    assert result.returncode == 2 and "Set gpulab_awx_scm_url" in result.stdout, result.stdout[-2000:]
