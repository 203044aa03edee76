"""Hostile input, second round (issue 20): what a GPU user, a flashed card or a wedged GPU could still do to a run
as root, each case at the reader or validator where it happens. The Molecule scenario `security` runs the same
cases through site.yml on a container."""

import copy
import json
import os
import shutil
import subprocess
import sys
import time

import pytest

from ansible_collections.gpulab.rocm.plugins.module_utils.apt import openpgp
from ansible_collections.gpulab.rocm.plugins.module_utils.host import groups, node_state as ns
from ansible_collections.gpulab.rocm.plugins.module_utils.parsers import _facts_common as common, gpu_tools
from ansible_collections.gpulab.rocm.plugins.module_utils.planning import (
    plan_access, plan_containers, plan_driver, plan_env, plan_repo, plan_sdk, plan_slurm,
    plan_preflight as preflight, validation,
)
from ansible_collections.gpulab.rocm.plugins.module_utils.planning.plan_common import PlanError
from ansible_collections.gpulab.rocm.tests.unit.gpu_facts_helpers import fixture
from ansible_collections.gpulab.rocm.tests.unit.plugins.module_utils import plan_helpers as base

TIMEOUT = shutil.which("timeout")
GPG = shutil.which("gpg")


# --- 1. bounded reads ---------------------------------------------------------------------------------------------

def test_a_sparse_64g_bashrc_is_described_without_reading_it_whole(tmp_path):
    bashrc = tmp_path / ".bashrc"
    with open(bashrc, "wb") as handle:
        handle.truncate(64 << 30)  # what `truncate -s 64G ~/.bashrc` makes: no disk, no quota
    started = time.monotonic()
    info = ns.describe_file(str(bashrc), with_content=False)
    # The old reader read all 64 GiB into memory (OOM in a 3 GiB container); now at most HASH_LIMIT + 1 bytes.
    assert (info["type"], info["size"], info["sha1"], info["over_limit"]) == ("file", 64 << 30, None, True)
    assert time.monotonic() - started < 30  # not a benchmark: 64 GiB could not be read in this time here
    data = ns.read_bytes(str(bashrc), ns.BASHRC_LIMIT)
    assert len(data) == ns.BASHRC_LIMIT + 1


def test_a_checksum_under_the_bound_is_the_files(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"x" * (3 << 20))
    import hashlib
    assert ns.describe_file(str(path))["sha1"] == hashlib.sha1(b"x" * (3 << 20)).hexdigest()


def test_a_bashrc_over_the_bound_is_left_with_a_notice():
    node = copy.deepcopy(base.probe(base.CONVERGED))
    node["users"]["alice"]["bashrc"].update(markers="over_limit", block=None, limit=ns.BASHRC_LIMIT)
    plan = plan_env.plan(node, base.ENV, base.inputs())
    assert "alice" not in plan["bashrc"]
    assert any("larger than 4 MiB, more than the probe reads: not changed" in n for n in plan["notices"])


def test_a_keyring_over_the_bound_is_not_read_whole(tmp_path):
    from ansible_collections.gpulab.rocm.plugins.modules.node_probe import Probe
    path = tmp_path / "keyring.gpg"
    with open(path, "wb") as handle:
        handle.truncate(8 << 30)
    info = Probe.keyring(str(path))
    assert info["clean"] is False and "larger than 1048576 bytes" in info["error"]


# --- 2 and 3. every string valid UTF-8 ----------------------------------------------------------------------------

def test_a_link_to_a_name_that_is_not_utf8_is_replaced_and_named(tmp_path):
    link = tmp_path / ".bashrc"
    os.symlink(b"/tmp/\xff", bytes(link))
    places = []
    node = common.valid_utf8({"users": {"alice": {"bashrc": ns.describe_file(str(link))}}}, "gpulab_node", places)
    assert node["users"]["alice"]["bashrc"]["target"] == "/tmp/\ufffd"
    json.dumps(node, ensure_ascii=False).encode("utf-8")  # what ansible-core refused with surrogates
    assert places == ["gpulab_node.users.alice.bashrc.target"]
    assert "gpulab_node.users.alice.bashrc.target" in common.utf8_notice(places)


def test_a_latin1_gpu_name_is_replaced_and_the_tool_named():
    # A VBIOS marketing name with a Latin-1 (R): process_run decodes it with surrogateescape.
    text = fixture("rocminfo/gfx90a-mi250x-gcd-4numa-epyc7a53-rocm5.7.txt").replace(
        "AMD Instinct MI250X", "AMD Instinct\udcae MI250X")
    notices = []
    run = common.timed_run(lambda argv, **kwargs: (0, text, ""), None, notices=notices)
    facts = gpu_tools.read_rocminfo(run, lambda tool: "/opt/rocm/bin/rocminfo")
    assert facts["gpus"][0]["marketing_name"] == "AMD Instinct\ufffd MI250X"
    assert notices == ["/opt/rocm/bin/rocminfo printed bytes that are not UTF-8 (in its stdout); they were "
                       "replaced by U+FFFD"]


def test_the_runner_keeps_undecodable_bytes_as_surrogates_and_says_what_is_missing(tmp_path):
    # process_run returns what AnsibleModule.run_command did (text, surrogates for bytes that are not UTF-8), with
    # the environment's additions; a program that is not there is rc 127 with its name, as in a shell.
    script = tmp_path / "tool"
    script.write_bytes(b"#!/bin/sh\nprintf 'AMD Instinct\\256 %s' \"$LC_ALL\"\necho oops >&2\nexit 3\n")
    script.chmod(0o755)
    rc, stdout, stderr = common.process_run([str(script)], environ_update={"LC_ALL": "C"})
    assert (rc, stdout, stderr) == (3, "AMD Instinct\udcae C", "oops\n")
    rc, stdout, stderr = common.process_run([str(tmp_path / "absent")])
    assert rc == 127 and stdout == "" and str(tmp_path / "absent") in stderr


def test_the_runner_keeps_the_modules_payload_off_a_python_childs_path(monkeypatch):
    # As AnsibleModule.run_command does: a Python tool (rocm-smi is one) must not import the module's payload.
    monkeypatch.setenv("PYTHONPATH", "/tmp/ansible_x/ansible_modlib.zip:/usr/lib/lab:/tmp/x/debug_dir")
    assert common.process_run(["sh", "-c", 'printf %s "$PYTHONPATH"'])[1] == "/usr/lib/lab"
    monkeypatch.setenv("PYTHONPATH", "/tmp/ansible_x/ansible_modlib.zip")
    assert common.process_run(["sh", "-c", 'printf %s "${PYTHONPATH-unset}"'])[1] == "unset"


# --- 4. a wedged GPU tool -----------------------------------------------------------------------------------------

@pytest.mark.skipif(TIMEOUT is None, reason="coreutils timeout is not installed")
def test_a_tool_that_never_returns_is_stopped_and_named(tmp_path):
    wedged = tmp_path / "rocminfo"
    wedged.write_text("#!/bin/sh\nexec sleep 600\n")
    wedged.chmod(0o755)
    started = time.monotonic()
    tools = gpu_tools.read_all(common.timed_run(common.process_run, TIMEOUT, seconds=1),
                               lambda tool: str(wedged) if tool == "rocminfo" else None)
    assert time.monotonic() - started < 30
    facts = tools["rocminfo"]
    assert facts["error_kind"] == "timeout"
    assert facts["error"].startswith("%s did not finish within 1 s and was stopped: the GPU or its driver may be "
                                     "wedged" % wedged)
    node = copy.deepcopy(base.probe(base.CONVERGED))
    node["timeouts"] = [facts["error"]]
    verdict = preflight.plan(node, {"gpus_required": False, "unsupported_gpu": "fail", "degraded_link": "warn",
                                    "min_free_gb": 0}, base.inputs())
    assert facts["error"] in verdict["problems"]


# --- 5. bashrc markers: what the probe accepts is what blockinfile finds --------------------------------------

@pytest.mark.parametrize("text, lines", [
    ("a\n# BEGIN gpulab.rocm environment\nexport X=1\n# END gpulab.rocm environment", [4]),  # no last newline
    ("a\n  # BEGIN gpulab.rocm environment\nexport X=1\n# END gpulab.rocm environment\n", [2]),  # indented
    ("a\r\n# BEGIN gpulab.rocm environment\r\nexport X=1\r\n# END gpulab.rocm environment\r\n", [2, 4]),  # CRLF
])
def test_markers_blockinfile_would_not_find_leave_the_file_alone(text, lines):
    assert ns.bashrc_block("f", text) == {"block": None, "markers": "inexact", "inexact_lines": lines}
    node = copy.deepcopy(base.probe(base.CONVERGED))
    node["users"]["alice"]["bashrc"].update(ns.bashrc_block("f", text))
    plan = plan_env.plan(node, base.ENV, base.inputs())
    assert "alice" not in plan["bashrc"]
    assert any("would add a second block" in n and str(lines) in n for n in plan["notices"])


def test_exact_markers_are_still_one_block():
    text = "a\n# BEGIN gpulab.rocm environment\nexport X=1\n# END gpulab.rocm environment\n"
    assert ns.bashrc_block("f", text) == {"block": "export X=1", "markers": "one"}


# --- 6. validators match the whole value --------------------------------------------------------------------------

@pytest.mark.parametrize("key, value", [
    ("base_url", "http://mirror.example/rocm\n"),
    ("base_url", "http://mirror.example/rocm#main"),
    ("key_url", "http://mirror.example/key.gpg\n"),
    ("architecture", "amd64\n"),
    ("pin_origin", "repo.radeon.com\n"),
    ("keyring", "/etc/apt/keyrings/rocm.gpg\n"),
    ("core_base_url", "https://mirror.example/core#main"),
    ("core_key_url", "https://mirror.example/core/packages.gpg\n"),
    ("core_keyring", "/etc/apt/keyrings/amdrocm.gpg\n"),
    ("core_pin_origin", "stable.repo.amd.com\n"),
])
def test_repository_values_with_a_newline_or_a_hash_are_refused(key, value):
    node = base.probe(base.CONVERGED)
    with pytest.raises(PlanError, match="rocm_repo_%s" % key):
        plan_repo.plan(node, base.repo_wanted(node, **{key: value}), base.inputs())


@pytest.mark.parametrize("wanted, message", [
    ({"rocm_path": "/opt/rocm\n"}, "rocm_env_rocm_path must be an absolute path"),
    ({"extra_variables": {"GOOD\n": "x"}}, "not shell variable names"),
    ({"hsa_override_gfx_version": "10.3.0\n"}, "hsa_override_gfx_version"),
])
def test_environment_values_with_a_newline_are_refused(wanted, message):
    with pytest.raises(PlanError, match=message):
        plan_env.plan(base.probe(base.CONVERGED), dict(base.ENV, **wanted), base.inputs())


def test_user_and_group_names_with_a_newline_are_refused():
    with pytest.raises(base.stack.StackError, match="not user names"):
        base.stack.resolve({"rocm_gpu_users": ["alice\n"]})
    assert not groups.NAME_RE.match("alice\n")
    with pytest.raises(PlanError):
        plan_access.plan(base.probe(base.CONVERGED), dict(base.ACCESS, groups=["video\n"]), base.inputs())


def test_slurm_node_names_with_a_newline_are_refused():
    from ansible_collections.gpulab.rocm.plugins.module_utils.parsers import slurm_conf
    assert slurm_conf.NODE_NAME_RE.match("gpu01") and not slurm_conf.NODE_NAME_RE.match("gpu01\n")
    assert not slurm_conf.VALUE_RE.match("x\n") and not slurm_conf.HOST_RE.match("10.0.0.1\n")
    assert plan_slurm.sc is slurm_conf


# --- 7. an expired signing key is fetched again ------------------------------------------------------------------

def gpg(home, *args):
    return subprocess.run([GPG, "--homedir", str(home), "--batch", "--pinentry-mode", "loopback"] + list(args),
                          check=True, capture_output=True).stdout


@pytest.mark.skipif(GPG is None, reason="gpg is not installed")
def test_an_expired_key_and_its_reissue_with_the_same_fingerprint(tmp_path):
    home = tmp_path / "gnupg"
    home.mkdir(mode=0o700)
    # Made in 2020 with a one-day expiry (expired since), then re-issued now with a new expiry, as AMD did.
    gpg(home, "--faked-system-time", "20200101T000000", "--passphrase", "", "--quick-gen-key",
        "Test Signing <test@example.invalid>", "rsa2048", "sign", "1d")
    fpr = [line.split(":")[9] for line in gpg(home, "--with-colons", "--fingerprint").decode().splitlines()
           if line.startswith("fpr:")][0]
    expired = gpg(home, "--export", fpr)
    assert openpgp.expired_keys(expired, time.time()) == [fpr]
    gpg(home, "--passphrase", "", "--quick-set-expire", fpr, "2y")
    reissued = gpg(home, "--export", fpr)
    assert openpgp.primary_fingerprints(reissued) == [fpr] and openpgp.expired_keys(reissued, time.time()) == []

    node = copy.deepcopy(base.probe(base.CONVERGED))
    node["keyrings"][ns.KEYRING].update(expired=[fpr])
    plan = plan_repo.plan(node, base.repo_wanted(node), base.inputs())
    assert plan["key"] == {ns.KEYRING: "install"}
    assert "has expired (apt reports EXPKEYSIG)" in plan["changes"][0]["reason"]


# --- 8. a run killed between the driver install and its reboot marker -------------------------------------------

def driver_node(**versions):
    node = copy.deepcopy(base.probe(base.CONVERGED))
    node["gpu_pci"]["in_container"] = False
    node["packages"]["amdgpu-dkms"] = ["ii ", "1:6.8.5.60204-2044426.22.04"]
    node["versions"] = dict({"amdgpu": None, "booted_at": 1000, "driver_installed_at": 2000.0,
                             "reboot_recorded_at": None, "reboot_marked": False}, **versions)
    return node


@pytest.mark.parametrize("versions, pending", [
    ({}, True),  # installed after this boot, never rebooted or marked for: the killed run's leftovers
    ({"reboot_marked": True}, False),  # /run/reboot-required is there: someone was told
    ({"reboot_recorded_at": 2001.0}, False),  # the role rebooted (or marked) for it since
    ({"booted_at": 3000}, False),  # booted since the install
    ({"amdgpu": "6.8.5"}, False),  # the loaded module is the installed one
])
def test_the_driver_plan_compares_the_installed_driver_with_the_loaded_one(versions, pending):
    plan = plan_driver.plan(driver_node(**versions), {"packages": ["amdgpu-dkms"], "headers_package": "",
                                                      "reboot": False}, base.inputs())
    assert plan["install"] == [] and plan["reboot_pending"] is pending
    assert bool(plan["changes"]) is pending


# --- 9. rocm_validate's folder -------------------------------------------------------------------------------------

def stat(mode, uid=0, isdir=True, islnk=False):
    return {"exists": True, "isdir": isdir, "islnk": islnk, "mode": mode, "uid": uid}


@pytest.mark.parametrize("folder, parent, problem", [
    (stat("1777"), stat("0755"), None),  # /var/tmp
    (stat("0700"), stat("0755"), None),
    (stat("2770"), stat("0755"), "has mode 2770: its group may rename"),  # a lab group's scratch
    (stat("0777"), stat("0755"), "its other users may rename"),
    (stat("0755", uid=1003), stat("0755"), "belongs to uid 1003"),
    (stat("1777"), stat("0775"), "the parent of rocm_validate_remote_dir /scratch has mode 0775"),
    (stat("0777", islnk=True, isdir=False), stat("0755"), "is a symlink"),
])
def test_a_folder_others_may_rename_in_is_refused(folder, parent, problem):
    problems = validation.remote_dir_problems("/scratch/lab", folder, parent)
    assert (problems == []) if problem is None else any(problem in text for text in problems), problems


def test_the_users_own_folder_is_fine():
    assert validation.remote_dir_problems("/home/alice/tmp", stat("0755", uid=1001), stat("0755", uid=1001),
                                          uid=1001) == []


# --- 11. messages --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("stderr, expected", [
    ("E: Malformed entry 1 in list file /etc/apt/sources.list.d/half.list (Component)\n"
     "E: The list of sources could not be read.\n",
     "E: Malformed entry 1 in list file /etc/apt/sources.list.d/half.list (Component); E: The list of sources "
     "could not be read."),
    ("E: Conflicting values set for option Signed-By regarding source http://mirror.example/rocm/apt/6.2.4/ jammy: "
     "/etc/apt/keyrings/old.gpg != /etc/apt/keyrings/rocm.gpg\nE: The list of sources could not be read.\n",
     "(named in /etc/apt/sources.list.d/old-rocm.list)"),
])
def test_apt_s_own_line_and_the_file_reach_the_message(tmp_path, stderr, expected):
    lists = tmp_path / "etc" / "apt" / "sources.list.d"
    lists.mkdir(parents=True)
    (lists / "old-rocm.list").write_text("deb [signed-by=/etc/apt/keyrings/old.gpg] "
                                         "http://mirror.example/rocm/apt/6.2.4 jammy main\n")
    error = ns.apt_source_error(str(tmp_path), stderr)
    assert expected in error
    node = copy.deepcopy(base.probe(base.CONVERGED))
    node["candidates"] = {}
    node["sources_error"] = error
    with pytest.raises(PlanError, match="apt cannot read the host's apt sources, so it offers none of"):
        plan_sdk.plan(node, dict(base.SDK, packages=["rocm-hip-sdk6.2.4"]), base.inputs())


def test_a_user_without_a_home_folder_is_a_notice():
    node = copy.deepcopy(base.probe(base.CONVERGED))
    node["users"]["alice"]["home_state"] = {"exists": False, "type": None}
    node["users"]["alice"]["bashrc"] = {"exists": False, "type": None}
    plan = plan_env.plan(node, base.ENV, base.inputs())
    assert "alice" not in plan["bashrc"]
    assert any("user alice has no home folder (/home/alice does not exist)" in n for n in plan["notices"])


def test_a_fifo_is_named_a_fifo(tmp_path):
    fifo = tmp_path / ".bashrc"
    os.mkfifo(fifo)
    info = ns.describe_file(str(fifo))
    assert info["type"] == "FIFO"
    node = copy.deepcopy(base.probe(base.CONVERGED))
    node["users"]["alice"]["bashrc"] = dict(info, uid=node["users"]["alice"]["uid"])
    plan = plan_env.plan(node, base.ENV, base.inputs())
    notice = [n for n in plan["notices"] if "alice" in n][0]
    assert "is a FIFO, not a plain file: not changed" in notice and "link" not in notice


@pytest.mark.parametrize("text, message", [
    ("[" * 50000 + "]" * 50000, "nests more than 64 levels"),
    ('{"x": NaN}', "NaN is not JSON"),
    ('{"x": 1e400}', "out of range"),
])
def test_daemon_json_docker_would_not_read_is_refused_clearly(text, message):
    with pytest.raises(PlanError, match=message):
        plan_containers.parse_daemon_json("/etc/docker/daemon.json", {"exists": True, "type": "file",
                                                                      "content": text})


def test_the_probe_module_imports():
    # node_probe's glue: the names it imports from the helpers exist (a typo would fail every run on the host).
    from ansible_collections.gpulab.rocm.plugins.modules import node_probe
    assert node_probe.timed_run is common.timed_run and sys.modules[node_probe.__name__]
