# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A GPU's live state from its PCI function's sysfs folder: PCIe AER error counters and amdgpu's sensors.

The one reader of these files for the health check and the metrics textfile. No AnsibleModule; every reader takes the
function's folder (`/sys/bus/pci/devices/<bdf>`), so tests point it at a tree built from a capture. Reads are
bounded (sysfs attributes are at most a page) and never raise: a file that is absent or unreadable gives None, and
so does one the driver refuses to read because the GPU does not support it (read_attr_state tells which).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import os
import re

# A sysfs attribute is at most one page; read a little more so an oversized file is seen as such and refused.
MAX_ATTR_BYTES = 8192
# The kernel's AER files (Documentation/ABI/testing/sysfs-bus-pci-devices-aer_stats): one "<error> <count>" line
# per error type, then TOTAL_ERR_COR / TOTAL_ERR_FATAL / TOTAL_ERR_NONFATAL.
AER_KINDS = ('correctable', 'nonfatal', 'fatal')
_AER_LINE = re.compile(r'^([A-Za-z][A-Za-z0-9_]*) (\d+)$')
_HWMON_DIR = re.compile(r'^hwmon\d+$')


# What amdgpu answers, at read(), for an attribute the GPU has but does not support: pcie_bw gives ENODATA where
# the ASIC has no PCIe usage counters (APUs, and ASICs without them), xgmi_error EINVAL on a GPU without
# XGMI; EOPNOTSUPP/ENOTSUP and ENODEV likewise mean "not on this GPU". Such a file is "unsupported": no value, never
# an error or a failing check.
UNSUPPORTED_ERRNOS = frozenset(code for code in (
    getattr(errno, 'ENODATA', None), errno.EINVAL, getattr(errno, 'EOPNOTSUPP', None),
    getattr(errno, 'ENOTSUP', None), errno.ENODEV) if code is not None)


def read_attr_state(path):
    """(text, state) of one sysfs attribute: the stripped text and 'ok'; else None and 'absent' (no such file),
    'unsupported' (the driver refuses it for this GPU: UNSUPPORTED_ERRNOS) or 'unreadable' (any other error, a
    link, more than MAX_ATTR_BYTES, not ASCII)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, 'O_NOFOLLOW', 0) | getattr(os, 'O_NONBLOCK', 0))
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return None, 'absent'
        return None, 'unsupported' if exc.errno in UNSUPPORTED_ERRNOS else 'unreadable'
    try:
        data = os.read(fd, MAX_ATTR_BYTES + 1)
    except OSError as exc:
        return None, 'unsupported' if exc.errno in UNSUPPORTED_ERRNOS else 'unreadable'
    finally:
        os.close(fd)
    if len(data) > MAX_ATTR_BYTES:
        return None, 'unreadable'
    try:
        return data.decode('ascii').strip(), 'ok'
    except UnicodeDecodeError:
        return None, 'unreadable'


def read_attr(path):
    """The text of one sysfs attribute, stripped; None when absent, unsupported, unreadable, not text or over
    MAX_ATTR_BYTES."""
    return read_attr_state(path)[0]


def read_int(path):
    text = read_attr(path)
    if text is None or not re.match(r'^-?\d+\Z', text):
        return None
    return int(text)


def read_pcie_replay_count(device_dir):
    """amdgpu's pcie_replay_count (PCIe link-level replays the GPU counted since the driver loaded); None where the
    file is absent (APUs, older kernels) or not supported."""
    count = read_int(os.path.join(device_dir, 'pcie_replay_count'))
    return count if count is None or count >= 0 else None


def parse_aer(text):
    """One AER file's counters -> {error name: count}; lines that are not "<name> <count>" are skipped."""
    counters = {}
    for line in (text or '').splitlines():
        match = _AER_LINE.match(line.strip())
        if match:
            counters[match.group(1)] = int(match.group(2))
    return counters


def read_aer(device_dir):
    """{kind: {error name: count}} for the kinds the kernel reports (a kernel without AER stats: {})."""
    counters = {}
    for kind in AER_KINDS:
        text = read_attr(os.path.join(device_dir, 'aer_dev_' + kind))
        if text is not None:
            counters[kind] = parse_aer(text)
    return counters


def aer_totals(counters):
    """{kind: total} from read_aer's result: the kernel's TOTAL_ERR_* line, or the sum where it printed none."""
    totals = {}
    for kind, values in counters.items():
        total = [count for name, count in values.items() if name.startswith('TOTAL_ERR_')]
        totals[kind] = total[0] if total else sum(values.values())
    return totals


# amdgpu's RAS error counters (drivers/gpu/drm/amd/amdgpu/amdgpu_ras.c, amdgpu_ras_sysfs_read): one file per IP
# block, ras/<block>_err_count, printing "ue: N" and "ce: N" lines (UMC also "de: N", deferred). Only GPUs with RAS
# (Instinct, some Radeon Pro) have the folder.
_RAS_FILE = re.compile(r'^([a-z0-9_]+)_err_count$')
_RAS_LINE = re.compile(r'^(ue|ce|de): (\d+)$')
RAS_KINDS = {'ue': 'uncorrectable', 'ce': 'correctable', 'de': 'deferred'}


def read_ras(device_dir):
    """{block: {'uncorrectable'|'correctable'|'deferred': count}} from ras/*_err_count; {} without RAS."""
    folder = os.path.join(device_dir, 'ras')
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return {}
    counters = {}
    for name in names:
        match = _RAS_FILE.match(name)
        text = read_attr(os.path.join(folder, name)) if match else None
        if text is None:
            continue
        values = {}
        for line in text.splitlines():
            found = _RAS_LINE.match(line.strip())
            if found:
                values[RAS_KINDS[found.group(1)]] = int(found.group(2))
        if values:
            counters[match.group(1)] = values
    return counters


def _hwmon_dir(device_dir):
    try:
        names = sorted(name for name in os.listdir(os.path.join(device_dir, 'hwmon')) if _HWMON_DIR.match(name))
    except OSError:
        return None
    return os.path.join(device_dir, 'hwmon', names[0]) if names else None


def read_sensors(device_dir):
    """amdgpu's sensors of one GPU, in base units; a value the driver does not expose is None.

    Units as the kernel's amdgpu documentation gives them (Documentation/gpu/amdgpu/thermal.rst and
    driver-misc.rst): mem_info_vram_* and gpu_busy_percent in bytes and percent; hwmon temp*_input in millidegrees
    Celsius (temp1 is the edge sensor), power1_average / power1_input in microwatts (newer kernels expose
    power1_input on some GPUs instead of, or beside, the average).
    """
    sensors = {
        'vram_total_bytes': read_int(os.path.join(device_dir, 'mem_info_vram_total')),
        'vram_used_bytes': read_int(os.path.join(device_dir, 'mem_info_vram_used')),
        'busy_percent': read_int(os.path.join(device_dir, 'gpu_busy_percent')),
        'temperature_celsius': None,
        'power_watts': None,
    }
    hwmon = _hwmon_dir(device_dir)
    if hwmon:
        millidegrees = read_int(os.path.join(hwmon, 'temp1_input'))
        if millidegrees is not None:
            sensors['temperature_celsius'] = millidegrees / 1000.0
        for name in ('power1_average', 'power1_input'):
            microwatts = read_int(os.path.join(hwmon, name))
            if microwatts is not None:
                sensors['power_watts'] = microwatts / 1000000.0
                break
    return sensors
