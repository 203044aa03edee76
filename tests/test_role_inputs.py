"""Every role's every variable is checked at the gate by type, range and form (issue 38, "Bad values pass the gate"):
each `main` option of every roles/*/meta/argument_specs.yml, with its meta/input_constraints.yml, read as the plan
action reads them, is given the wrong type, a negative, a zero, a value over its maximum and a line break where each
applies, and role_spec refuses it naming the variable; then the issue's own cases, and the refusal in the gate's
message."""

from pathlib import Path

import pytest
import yaml

from ansible_collections.gpulab.rocm.plugins.action import plan as plan_action
from ansible_collections.gpulab.rocm.plugins.module_utils.planning import plan_pass, role_spec

ROOT = Path(__file__).resolve().parents[1]
ROLES = sorted(p.parents[1].name for p in ROOT.glob("roles/*/meta/argument_specs.yml"))


def schema(role):
    """(options, constraints, defaults) of a role, by the plan action's own loaders."""
    meta = ROOT / "roles" / role / "meta"
    options = plan_action.main_options(str(meta / "argument_specs.yml"))
    constraints = plan_action.input_constraints(str(meta / role_spec.CONSTRAINTS_FILE))
    defaults = yaml.safe_load((ROOT / "roles" / role / "defaults" / "main.yml").read_text()) or {}
    return options, constraints, defaults


def refusals(role, name, value):
    """role_spec's messages for the role's defaults with one variable set to value."""
    options, constraints, defaults = schema(role)
    return role_spec.errors(options, dict(defaults, **{name: value}), constraints)


def bad_values(spec, default):
    """(case, value) for each way a value of this option can be wrong that its schema says it refuses."""
    kind = spec.get("type", "str")
    cases = []
    if kind == "bool":
        cases += [("a capitalised string", str(default)), ("the string 'yes'", "yes"), ("a number", 1)]
    elif kind == "int":
        cases += [("a quoted number", str(default)), ("a fraction", 1.5), ("a boolean", True)]
    elif kind == "float":
        cases += [("a quoted number", str(default)), ("a boolean", False)]
    elif kind in ("str", "path"):
        cases += [("a number", 30.1), ("a list", ["x"]),
                  ("a trailing newline", (default if isinstance(default, str) and default else "x") + "\n"),
                  ("a carriage return", "a\rb")]
    elif kind == "list":
        cases += [("a comma-separated string", "a,b"), ("an element with a newline", ["x\n"])]
        if spec.get("elements") == "str":
            cases.append(("an element of another type", [5]))
    elif kind == "dict":
        cases += [("a key=value string", "a=b"), ("a list", ["a=b"]), ("a value with a newline", {"x": "y\n"}),
                  ("a key with a newline", {"x\n": "y"})]
    if kind in ("int", "float"):
        low = spec.get("minimum", spec.get("exclusive_minimum"))
        if low is not None and low >= 0:
            cases.append(("a negative", -1))
        elif low is not None:
            cases.append(("below its minimum", low - 1))
        if spec.get("minimum", 0) >= 1 or "exclusive_minimum" in spec and spec["exclusive_minimum"] >= 0:
            cases.append(("zero", 0))
        if "maximum" in spec:
            cases.append(("over its maximum", spec["maximum"] + 1))
    return cases


def table():
    rows = []
    for role in ROLES:
        options, constraints, defaults = schema(role)
        for name, spec in sorted(role_spec.merged(options, constraints).items()):
            for case, value in bad_values(spec, defaults.get(name)):
                rows.append(pytest.param(role, name, value, id="%s-%s" % (name, case)))
    return rows


@pytest.mark.parametrize("role", ROLES)
def test_the_schema_of_every_role_is_whole(role):
    options, constraints, defaults = schema(role)
    # Every constraint is of a declared option, with keys role_spec reads (a typo would check nothing).
    assert role_spec.constraint_problems(options, constraints) == []
    # Every number says where its range starts: -1 where -1 means something, else 0 or 1.
    for name, spec in role_spec.merged(options, constraints).items():
        if spec.get("type") in ("int", "float"):
            assert "minimum" in spec or "exclusive_minimum" in spec, "%s: declare its range in %s" % (
                name, role_spec.CONSTRAINTS_FILE)
    # The role's defaults pass its own schema.
    assert role_spec.errors(options, defaults, constraints) == []


@pytest.mark.parametrize("role, name, value", table())
def test_every_variable_refuses_a_bad_value_by_name(role, name, value):
    messages = refusals(role, name, value)
    assert messages, "%s=%r passed the gate" % (name, value)
    # Only this variable is named, each message from its name on.
    assert all(message.startswith(name) or "'%s'" % name in message for message in messages), messages
    assert name in role_spec.refusal(role, messages)


def test_every_role_and_every_variable_is_in_the_table():
    # The table is built from the specs; make sure it did not come out empty or skip a role.
    named = set(row.values[1] for row in table())
    for role in ROLES:
        options, _constraints, _defaults = schema(role)
        assert set(options) <= named, sorted(set(options) - named)


# The cases, each of which passed the gate and broke a node later.
def test_a_negative_health_maximum_is_refused():
    messages = refusals("rocm_health", "rocm_health_max_uncorrectable_ecc", -1)
    assert messages == ["rocm_health_max_uncorrectable_ecc must be at least 0, got -1"]


def test_a_zero_resume_window_is_refused():
    assert refusals("rocm_health", "rocm_health_resume_window_hours", 0) == [
        "rocm_health_resume_window_hours must be at least 1, got 0"]


def test_a_quoted_gpu_count_of_a_node_class_is_refused():
    messages = refusals("rocm_health", "rocm_health_node_classes", {"mi300": {"gpu_count": "8"}})
    assert messages == ["rocm_health_node_classes['mi300'].gpu_count must be a whole number (unquoted), "
                        "got the string '8'"]


@pytest.mark.parametrize("key, value, words", [
    ("gpu_count", -2, "rocm_health_node_classes['mi300'].gpu_count must be at least -1, got -2"),
    ("max_uncorrectable_ecc", -1, "rocm_health_node_classes['mi300'].max_uncorrectable_ecc must be at least 0"),
    ("resume_window_hours", 0, "rocm_health_node_classes['mi300'].resume_window_hours must be at least 1"),
    ("rocminfo_timeout", 0, "rocm_health_node_classes['mi300'].rocminfo_timeout must be at least 1"),
    ("link_policy", "fail\n", "rocm_health_node_classes['mi300'].link_policy holds a line break"),
    ("link_policy", "off", "rocm_health_node_classes['mi300'].link_policy must be one of fail, warn"),
    ("gpu_counts", 8, "rocm_health_node_classes['mi300'] has keys it cannot set: gpu_counts"),
])
def test_every_value_of_a_node_class_is_checked(key, value, words):
    messages = refusals("rocm_health", "rocm_health_node_classes", {"mi300": {"gpu_count": 8, key: value}})
    assert len(messages) == 1 and messages[0].startswith(words), messages


def test_a_node_class_of_good_values_passes():
    classes = {"mi300": {"gpu_count": 8, "link_policy": "warn", "max_uncorrectable_ecc": 2, "resume_limit": 0,
                         "resume_window_hours": 12, "rocminfo_timeout": 30}, "build": {"gpu_count": -1}}
    assert refusals("rocm_health", "rocm_health_node_classes", classes) == []


def test_the_gpu_models_are_checked():
    # YAML reads an unquoted 0x74a1 as the number 29857.
    assert refusals("rocm_health", "rocm_health_gpu_models", {29857: {"link_width": 16}}) == [
        "rocm_health_gpu_models key 29857 must be a PCI device id such as '0x74a1' (quoted, lower case), "
        "got 29857"]
    assert refusals("rocm_health", "rocm_health_gpu_models", {"0x74a1": {"link_width": 0}}) == [
        "rocm_health_gpu_models['0x74a1'].link_width must be at least 1, got 0"]
    assert refusals("rocm_health", "rocm_health_gpu_models",
                    {"0x74a1": {"link_width": 16, "link_speed_gts": 32.0}}) == []


def test_a_group_name_with_a_trailing_newline_is_refused():
    messages = refusals("rocm_health", "rocm_health_kfd_group", "render\n")
    assert len(messages) == 1
    assert messages[0].startswith("rocm_health_kfd_group holds a line break ('render\\n'); it must be one line")
    assert refusals("rocm_health", "rocm_health_render_group", "Render Group") == [
        "rocm_health_render_group must be a group name such as render, got 'Render Group'"]


def test_a_boolean_is_true_or_false_or_a_surveys_true_or_false():
    # AWX's surveys have no boolean type: a choice sends 'true' or 'false', which the roles read through `| bool`.
    # Any other string is refused, not converted.
    assert refusals("rocm_metrics", "rocm_metrics_enabled", False) == []
    assert refusals("rocm_metrics", "rocm_metrics_enabled", "false") == []
    messages = refusals("rocm_metrics", "rocm_metrics_enabled", "no")
    assert messages == ["rocm_metrics_enabled must be a boolean (true or false), got the string 'no' "
                        "(-e name=value gives a string: pass it as YAML or JSON, for example "
                        "-e '{\"rocm_metrics_enabled\": ...}')"]


def test_every_boolean_is_read_through_the_bool_filter():
    # 'false' passes the gate, so no role may read a boolean option raw (a non-empty string is true to Python).
    import glob
    import re
    bools = set()
    for path in glob.glob(str(ROOT / "roles" / "*" / "meta" / "argument_specs.yml")):
        options = ((yaml.safe_load(open(path)).get("argument_specs") or {}).get("main") or {}).get("options") or {}
        bools |= set(name for name, option in options.items() if option.get("type") == "bool")
    raw = []
    for path in glob.glob(str(ROOT / "roles" / "*" / "*" / "*.yml")):
        if "/meta/" in path or "/defaults/" in path:
            continue
        for number, line in enumerate(open(path), 1):
            code = line.split("#", 1)[0]
            raw += ["%s:%d %s" % (path, number, name) for name in bools
                    if re.search(r"\b%s\b(?!\s*\|\s*bool)" % name, code)]
    assert raw == []


def test_a_threshold_of_validate_is_a_number():
    assert refusals("rocm_validate", "rocm_validate_thresholds", {"NVIDIA H200": {"bert_samples_per_s": "550"}}) == [
        "rocm_validate_thresholds['NVIDIA H200']['bert_samples_per_s'] must be a number (unquoted), "
        "got the string '550'"]
    assert refusals("rocm_validate", "rocm_validate_threshold_scale", 0) == [
        "rocm_validate_threshold_scale must be more than 0, got 0"]


def test_choices_are_still_checked_by_ansible():
    messages = refusals("rocm_repo", "rocm_repo_state", "gone")
    assert len(messages) == 1 and "rocm_repo_state" in messages[0] and "present, absent" in messages[0]


def test_every_problem_of_every_role_reaches_the_gate_message():
    # The plan action turns role_spec's messages into the phase's refusal, the pass records it, the gate lists it.
    first = role_spec.refusal("rocm_health", refusals("rocm_health", "rocm_health_resume_window_hours", 0)
                              + refusals("rocm_health", "rocm_health_kfd_group", "render\n"))
    second = role_spec.refusal("rocm_metrics", refusals("rocm_metrics", "rocm_metrics_enabled", "no"))
    recorded = plan_pass.record(plan_pass.record({}, "health", refusals=[first]), "metrics", refusals=[second])
    message = plan_pass.gate_message("node1", "6.2.4", recorded)
    assert message.startswith("node1 is not ready for ROCm 6.2.4: 2 problems, found by planning every phase before "
                              "any change, so nothing was changed.")
    for words in ("rocm_health_resume_window_hours must be at least 1, got 0",
                  "rocm_health_kfd_group holds a line break ('render\\n')",
                  "rocm_metrics_enabled must be a boolean (true or false), got the string 'no'"):
        assert words in message, message
    assert "\n" not in message
