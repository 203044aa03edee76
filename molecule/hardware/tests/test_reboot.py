"""rocm_driver's reboot after a driver change, for real up to the reboot command: the MI250X container with no
container hint left (its own cgroup namespace, /.dockerenv moved away) stands in for a bare-metal host, and a
reboot stand-in records each call and gives the host a new boot id (rocm_driver_reboot_command and
rocm_driver_boot_time_command). The same host with the control node's machine id is never rebooted."""

import re
import shlex
from pathlib import Path

import pytest

from gpulab_test_helpers import gpulab_runs as runs

NODE = "molecule-hw-mi250x"
testinfra_hosts = [NODE]
STANDIN = "/usr/local/sbin/gpulab-reboot-standin"
CALLS = "/var/lib/gpulab-fixture/reboot-calls"
BOOT_ID = "/var/lib/gpulab-fixture/boot-id"
# Fixture: records the call and starts a "new boot" (a new boot id) instead of rebooting.
STANDIN_SCRIPT = """#!/bin/sh
printf 'reboot %s\\n' "$*" >> {calls}
cat /proc/sys/kernel/random/uuid > {boot_id}
""".format(calls=CALLS, boot_id=BOOT_ID)
REBOOT_VARS = {"rocm_kernel_driver": "auto", "rocm_driver_reboot_command": STANDIN,
               "rocm_driver_boot_time_command": "cat " + BOOT_ID, "rocm_driver_reboot_timeout": 120}


@pytest.fixture
def bare_metal(host):
    """The host without its container hint, its driver removed (so the next run installs it), the stand-in in place;
    put back as it was afterwards."""
    host.check_output("mv /.dockerenv /.dockerenv.gpulab-test && mkdir -p /var/lib/gpulab-fixture "
                      "&& cat /proc/sys/kernel/random/uuid > %s && : > %s "
                      "&& if [ -e /etc/machine-id ]; then cp /etc/machine-id /run/machine-id.test; fi"
                      % (BOOT_ID, CALLS))
    host.check_output("cat > %s <<'EOF'\n%sEOF\nchmod 0755 %s" % (STANDIN, STANDIN_SCRIPT, STANDIN))
    yield host
    host.check_output("mv /.dockerenv.gpulab-test /.dockerenv && rm -f %s /etc/machine-id "
                      "&& if [ -e /run/machine-id.test ]; then mv /run/machine-id.test /etc/machine-id; fi" % STANDIN)


def remove_driver(host):
    host.check_output("apt-get remove -y -q amdgpu-dkms >/dev/null && rm -f /run/reboot-required")


def test_a_driver_change_reboots_a_bare_metal_host_once(bare_metal):
    host = bare_metal
    remove_driver(host)
    run = runs.playbook("site.yml", NODE, REBOOT_VARS, tags="driver")
    assert run.rc == 0, run
    calls = host.file(CALLS).content_string.splitlines()
    assert len(calls) == 1 and calls[0].startswith("reboot"), calls
    assert host.package("amdgpu-dkms").is_installed and not host.file("/run/reboot-required").exists
    # The driver is there now: the next run neither installs nor reboots.
    again = runs.playbook("site.yml", NODE, REBOOT_VARS, tags="driver")
    assert again.rc == 0 and again.changed(NODE) == 0, again
    assert len(host.file(CALLS).content_string.splitlines()) == 1


# The driver guard (docs/hardware.md, "The DKMS driver guard"): a host laid out under one root
# (rocm_driver_kernel_root) with a kernel whose headers apt does not offer, a kernel newer than the release's driver
# builds on, a foreign amdgpu DKMS tree and a full /boot (a 1 MiB tmpfs, molecule.yml).
GUARD_ROOT = "/srv/gpulab-guard"
GUARD_LAYOUT = """set -e
r={root}
mkdir -p $r/lib/modules/6.12.99-gpulab-amd64 $r/lib/modules/7.1.0-3-generic
touch $r/lib/modules/6.12.99-gpulab-amd64/modules.dep $r/lib/modules/7.1.0-3-generic/modules.dep
mkdir -p $r/usr/src/linux-headers-7.1.0-3-generic/include
ln -sfn /usr/src/linux-headers-7.1.0-3-generic $r/lib/modules/7.1.0-3-generic/build
mkdir -p $r/var/lib/dkms/amdgpu/6.10-custom
ln -sfn /usr/src/amdgpu-6.10-custom $r/var/lib/dkms/amdgpu/6.10-custom/source
""".format(root=GUARD_ROOT)


def test_the_driver_guard_refuses_every_problem_before_any_change(bare_metal):
    host = bare_metal
    remove_driver(host)
    host.check_output("sh -c %s" % shlex.quote(GUARD_LAYOUT))
    before = runs.snapshot(host)
    run = runs.playbook("site.yml", NODE, dict(REBOOT_VARS, rocm_driver_kernel_root=GUARD_ROOT), tags="driver")
    assert run.rc != 0, run
    text = " ".join(run.output.split())
    assert "is not ready for ROCm 10.1.0" in text and "nothing was changed" in text, run
    assert ("kernel 6.12.99-gpulab-amd64 is installed, but its headers (linux-headers-6.12.99-gpulab-amd64) are "
            "neither installed nor offered by apt's sources") in text, run
    assert ("kernel 7.1.0-3-generic is newer than amdgpu 31.50 (ROCm 10.1.0, DKMS module of the 31.50 line) builds "
            "on: the newest kernel series for it is 7.0") in text, run
    assert ("a DKMS tree amdgpu/6.10-custom is not one of AMD's amdgpu-dkms packages (its source is "
            "/usr/src/amdgpu-6.10-custom)") in text and "dkms remove amdgpu/6.10-custom --all" in text, run
    assert re.search(r"/boot has \d+ MiB free \(filesystem of /boot\), 300 MiB needed "
                     r"\(rocm_driver_boot_min_free_mb\)", text), run
    # Nothing changed but the log of the node_exporter that test_metrics.py left running (it keeps writing).
    changed = [line for line in runs.differences(before, runs.snapshot(host))
               if not line.endswith(" /var/log/gpulab-test-node-exporter.log -> ")]
    assert changed == []
    assert not host.package("amdgpu-dkms").is_installed and host.file(CALLS).content_string == ""


def test_the_control_node_is_never_rebooted(bare_metal):
    # The same host given the control node's machine id: to the planner it is the machine running ansible-playbook.
    host = bare_metal
    remove_driver(host)
    host.check_output("printf '%%s\\n' %s > /etc/machine-id" % Path("/etc/machine-id").read_text().strip())
    run = runs.playbook("site.yml", NODE, REBOOT_VARS, tags="driver")
    assert run.rc == 0, run
    assert host.file(CALLS).content_string == ""
    assert host.package("amdgpu-dkms").is_installed and host.file("/run/reboot-required").exists
    message = " ".join(run.output.split())
    assert "needs a reboot, not done here: the host is the control node; reboot it yourself" in message, message
