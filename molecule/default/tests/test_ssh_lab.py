"""The SSH lab (molecule/shared/ssh_lab.yml and its group_vars): the runs log in over SSH as `ops`, an account
that is not root, and become root with sudo (no password on bookworm, the vaulted one on trixie); a wrong sudo
password stops the run before it changes anything. The checks read the hosts through docker exec as root."""

import os
import re
import subprocess

import testinfra

from gpulab_test_helpers import gpulab_runs as runs

HOSTS = {"molecule-rocm-bookworm": "NOPASSWD", "molecule-rocm-trixie": "password"}
testinfra_hosts = sorted(HOSTS)


def ad_hoc(name, *args):
    """`ansible NAME -m command -a 'id -un'` over the scenario's inventory (SSH), with args such as --become: the
    user the command ran as."""
    env = dict(os.environ, ANSIBLE_FORCE_COLOR="0", ANSIBLE_NOCOLOR="1", ANSIBLE_LOAD_CALLBACK_PLUGINS="1",
               ANSIBLE_STDOUT_CALLBACK="ansible.builtin.minimal")
    proc = subprocess.run(["ansible", "-i", runs.inventory(), name, "-m", "ansible.builtin.command", "-a", "id -un",
                           *args], capture_output=True, text=True, env=env, cwd=runs.PROJECT, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # "NAME | CHANGED | rc=0 >>" and the command's output on the next line
    found = re.search(r"^%s \| CHANGED \| rc=0 >>\n(\S+)$" % re.escape(name), proc.stdout, re.M)
    assert found, proc.stdout + proc.stderr
    return found.group(1)


def test_the_run_logs_in_as_an_admin_that_is_not_root_and_becomes_root_with_sudo(host):
    name = host.backend.name
    assert ad_hoc(name) == "ops"
    assert ad_hoc(name, "--become") == "root"
    # sudo's own log: the converge and its second run became root through sudo, as ops.
    log = host.file("/var/log/gpulab-sudo.log").content_string
    assert "ops : " in log and "USER=root" in log, log[-2000:]
    assert host.file("/etc/sudoers.d/ops").content_string.count("NOPASSWD") == (HOSTS[name] == "NOPASSWD")


def test_a_wrong_sudo_password_stops_the_run_before_any_change():
    host = testinfra.get_host("docker://molecule-rocm-trixie")
    before = runs.snapshot(host)
    run = runs.playbook("site.yml", "molecule-rocm-trixie", extra_vars={"ansible_become_password": "not-the-password"})
    assert run.rc != 0, run
    assert "Incorrect sudo password" in run.output, run
    assert run.recap["molecule-rocm-trixie"]["ok"] == 0, run
    assert runs.differences(before, runs.snapshot(host)) == []
