# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the host tuning of Instinct nodes decides on (node_probe section `tuning`, planning/plan_tuning.py): the
running kernel's command line, GRUB's defaults and drop-ins, NUMA balancing (running and configured), the memlock
lines of the PAM limits files, the CPUs' cpufreq governors and our governor unit. Read-only, root-relative (tests
lay out a fake root), every file through the probe's bounded reader, never following a link, a bounded number of
files per folder. Pure of Ansible."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

from ansible_collections.gpulab.rocm.plugins.module_utils.host import node_state as ns

# Our own files (the plan writes only these; everything else is the lab's, read and left alone).
GRUB_DROPIN = '/etc/default/grub.d/gpulab-rocm-tuning.cfg'
SYSCTL_FILE = '/etc/sysctl.d/60-gpulab-rocm-tuning.conf'
LIMITS_FILE = '/etc/security/limits.d/60-gpulab-rocm-memlock.conf'
GOVERNOR_UNIT = '/etc/systemd/system/gpulab-cpu-governor.service'
GOVERNOR_UNIT_NAME = 'gpulab-cpu-governor.service'
GOVERNOR_WANTS = '/etc/systemd/system/multi-user.target.wants/' + GOVERNOR_UNIT_NAME
OWN_FILES = (GRUB_DROPIN, SYSCTL_FILE, LIMITS_FILE, GOVERNOR_UNIT)
# What the role writes once it rebooted, or marked the reboot, for the kernel arguments it names: a node that comes
# back without them is not rebooted again for the same arguments (verify says GRUB did not boot them).
REBOOT_RECORD = '/var/lib/gpulab-rocm/tuning-reboot'

GRUB_DEFAULT = '/etc/default/grub'
GRUB_DIR = '/etc/default/grub.d'
SYSCTL_CONF = '/etc/sysctl.conf'
SYSCTL_DIR = '/etc/sysctl.d'
LIMITS_CONF = '/etc/security/limits.conf'
LIMITS_DIR = '/etc/security/limits.d'
# Debian's and Ubuntu's update-grub (grub2-common: `grub-mkconfig -o /boot/grub/grub.cfg`); where /boot/grub is
# not there the host does not boot through this GRUB (a container, systemd-boot, a VM booted by its hypervisor).
UPDATE_GRUB = ('/usr/sbin/update-grub', '/sbin/update-grub')
BOOT_GRUB = '/boot/grub'

# Bounds: files per folder, bytes per file (config files are small; a larger one is named, not read).
FILES_LIMIT = 64
TEXT_LIMIT = 64 * 1024
CMDLINE_LIMIT = 8192


def _conf_files(root, folder, suffix):
    """Sorted names of the regular files ending in suffix in folder (at most FILES_LIMIT; a link is not read)."""
    try:
        names = sorted(name for name in os.listdir(ns.at(root, folder)) if name.endswith(suffix))
    except OSError:
        return [], False
    return [folder + '/' + name for name in names[:FILES_LIMIT]], len(names) > FILES_LIMIT


def _texts(root, paths):
    found = {}
    for path in paths:
        text = ns.read_text(ns.at(root, path), limit=TEXT_LIMIT)
        if text is not None:
            found[path] = text
    return found


def read_memlock(proc_root, pid='self'):
    """The soft and hard 'Max locked memory' of a process (/proc/<pid>/limits), as 'unlimited' or bytes."""
    text = ns.read_text(os.path.join(proc_root, str(pid), 'limits'), limit=TEXT_LIMIT) or ''
    for line in text.splitlines():
        if line.startswith('Max locked memory'):
            parts = line[len('Max locked memory'):].split()
            if len(parts) >= 2:
                return {'soft': parts[0], 'hard': parts[1]}
    return None


def read_cpufreq(sysfs_root):
    """{'present', 'cpus', 'governors': {governor: count}, 'available': [...]} from
    devices/system/cpu/cpu*/cpufreq; present False where no CPU has a cpufreq folder (a VM or container whose
    hypervisor owns the clocks)."""
    base = os.path.join(sysfs_root, 'devices/system/cpu')
    try:
        cpus = sorted(name for name in os.listdir(base) if re.match(r'^cpu\d+$', name))
    except OSError:
        cpus = []
    governors, available = {}, None
    for cpu in cpus[:4096]:
        value = ns.read_text(os.path.join(base, cpu, 'cpufreq/scaling_governor'), limit=64)
        if value is None:
            continue
        governors[value.strip()] = governors.get(value.strip(), 0) + 1
        if available is None:
            available = (ns.read_text(os.path.join(base, cpu, 'cpufreq/scaling_available_governors'),
                                      limit=1024) or '').split()
    return {'present': bool(governors), 'cpus': len(cpus), 'governors': governors, 'available': available or []}


def tuning_state(root='/', proc_root='/proc', sysfs_root='/sys'):
    """Everything plan_tuning decides on, as plain data."""
    grub_files, grub_more = _conf_files(root, GRUB_DIR, '.cfg')
    sysctl_files, sysctl_more = _conf_files(root, SYSCTL_DIR, '.conf')
    limits_files, limits_more = _conf_files(root, LIMITS_DIR, '.conf')
    numa = ns.read_text(os.path.join(proc_root, 'sys/kernel/numa_balancing'), limit=64)
    cmdline = ns.read_text(os.path.join(proc_root, 'cmdline'), limit=CMDLINE_LIMIT)
    return {
        'cmdline': cmdline.strip() if cmdline is not None else None,
        'grub': _texts(root, [GRUB_DEFAULT] + grub_files),
        'boot_grub': os.path.isdir(ns.at(root, BOOT_GRUB)) and not os.path.islink(ns.at(root, BOOT_GRUB)),
        'update_grub': next((path for path in UPDATE_GRUB if os.path.isfile(ns.at(root, path))), None),
        'numa_balancing': numa.strip() if numa is not None else None,
        'sysctl': _texts(root, [SYSCTL_CONF] + sysctl_files),
        'limits': _texts(root, [LIMITS_CONF] + limits_files),
        'too_many': [folder for folder, more in ((GRUB_DIR, grub_more), (SYSCTL_DIR, sysctl_more),
                                                 (LIMITS_DIR, limits_more)) if more],
        'memlock': read_memlock(proc_root),
        'cpufreq': read_cpufreq(sysfs_root),
        'files': dict((path, ns.describe_file(ns.at(root, path))) for path in OWN_FILES),
        'unit_enabled': os.path.islink(ns.at(root, GOVERNOR_WANTS)),
        'reboot_record': ns.describe_file(ns.at(root, REBOOT_RECORD)),
        'booted_at': boot_time(proc_root),
    }


def boot_time(proc_root):
    """This boot's time (btime of /proc/stat, seconds since the epoch), or None."""
    match = re.search(r'^btime (\d+)$', ns.read_text(os.path.join(proc_root, 'stat'), limit=1 << 20) or '', re.M)
    return int(match.group(1)) if match else None
