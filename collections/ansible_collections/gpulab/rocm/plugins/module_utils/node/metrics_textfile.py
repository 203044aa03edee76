# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node's gpulab_* metrics in Prometheus' text exposition format, for node_exporter's textfile collector.

collect() reads the node with the collection's own readers (pci.py for the PCI functions and their links and the
KFD topology, gpu_sysfs.py for AER, RAS, PCIe replays and the sensors, firmware.py for the firmware versions in
sysfs) and the health check's last result, with its kernel log counts where it has them (the interface of
docs/health.md: /var/lib/gpulab/health/last.json); render() turns that snapshot into text and is pure; main() is
the CLI the systemd timer runs (gpulab-metrics-textfile), which writes the file atomically (a temporary file in the
same folder, renamed over it), so node_exporter never reads half a file. docs/metrics.md lists every metric.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import math
import os
import re
import stat
import sys
import tempfile
import time

from ansible_collections.gpulab.rocm.plugins.module_utils.parsers import firmware, gpu_sysfs, pci
from ansible_collections.gpulab.rocm.plugins.module_utils.parsers._facts_common import rocm_version_files

HEALTH_FILE = '/var/lib/gpulab/health/last.json'
HEALTH_MAX_BYTES = 1024 * 1024
HEALTH_OK = {'pass': 1, 'warn': 1, 'fail': 0, 'error': 0}
GPU_LABELS = ('gpu', 'pci_bdf', 'model', 'gfx', 'render_node', 'partition')
# The compute partition modes amdgpu prints in current_compute_partition (MI300: SPX, DPX, TPX, QPX, CPX).
_PARTITION = re.compile(r'^[A-Z]{3}$')
_TEXTFILE_NAME = re.compile(r'^[A-Za-z0-9_.-]+\.prom$')
_BDF = re.compile(r'\b[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]\b')
# The health result's "kernel_log" (docs/health.md): where the check read the kernel log, and per event code its
# count since the check's state file was made and its severity. Older node code writes no such key.
KERNEL_LOG_SOURCES = ('journal', 'kmsg', 'file', 'none')
KERNEL_LOG_SEVERITIES = ('fatal', 'warn')
_EVENT_CODE = re.compile(r'^[A-Z][A-Z0-9_]{0,63}\Z')
MAX_EVENT_CODES = 256

# name: (type, help). Every family render() can write; docs/metrics.md and the dashboard test read this table.
METRICS = {
    'gpulab_textfile_timestamp_seconds': ('gauge', 'When the gpulab textfile was written (unix seconds).'),
    'gpulab_gpus_expected': ('gauge', 'AMD GPUs this node should show, per source (pci: functions on the bus, kfd: '
                                      'GPU agents in the KFD topology).'),
    'gpulab_gpus_found': ('gauge', 'AMD GPUs this node shows now, per source (pci: functions on the bus, kfd: GPU '
                                   'agents in the KFD topology, one per compute partition).'),
    'gpulab_gpu_info': ('gauge', 'One series per AMD GPU (per KFD agent; a GPU the KFD does not list has gpu=""), '
                                 'with its driver and compute and memory partition modes.'),
    'gpulab_gpu_vbios_info': ('gauge', 'The VBIOS version of each AMD GPU, with the node class.'),
    'gpulab_gpu_firmware_info': ('gauge', "One series per firmware block of each AMD GPU (amdgpu's fw_version/ in "
                                          "sysfs): its id and version (0x%08x), with the node class."),
    'gpulab_gpu_pcie_link_speed_transfers_per_second': (
        'gauge', 'Current speed of the narrowest PCIe link between the GPU and the root port (the slot link behind '
                 'an on-package switch).'),
    'gpulab_gpu_pcie_link_max_speed_transfers_per_second': ('gauge', 'Maximum speed of that link.'),
    'gpulab_gpu_pcie_link_width': ('gauge', 'Current width (lanes) of the narrowest PCIe link of the GPU.'),
    'gpulab_gpu_pcie_link_max_width': ('gauge', 'Maximum width (lanes) of that link.'),
    'gpulab_gpu_pcie_link_degraded': ('gauge', '1 when the narrowest link of the GPU runs below its maximum speed or '
                                               'width.'),
    'gpulab_gpu_pcie_aer_errors_total': ('counter', 'PCIe AER errors the kernel counted on the GPU, per kind '
                                                    '(aer_dev_correctable, aer_dev_nonfatal, aer_dev_fatal).'),
    'gpulab_gpu_ecc_errors_total': ('counter', "amdgpu's RAS error counts per IP block (ras/<block>_err_count) and "
                                               'kind (uncorrectable, correctable, deferred).'),
    'gpulab_gpu_pcie_replays_total': ('counter', 'PCIe link-level replays the GPU counted since the driver loaded '
                                                 '(pcie_replay_count).'),
    'gpulab_gpu_vram_total_bytes': ('gauge', 'VRAM of the GPU (mem_info_vram_total).'),
    'gpulab_gpu_vram_used_bytes': ('gauge', 'VRAM in use (mem_info_vram_used).'),
    'gpulab_gpu_temperature_celsius': ('gauge', 'Edge temperature of the GPU (hwmon temp1_input).'),
    'gpulab_gpu_power_watts': ('gauge', 'Power the GPU draws (hwmon power1_average, else power1_input).'),
    'gpulab_gpu_busy_ratio': ('gauge', 'Share of time the GPU was busy (gpu_busy_percent / 100).'),
    'gpulab_rocm_info': ('gauge', 'The ROCm release behind the ROCm path (.info/version) and its install source.'),
    'gpulab_amdgpu_driver_info': ('gauge', 'The amdgpu driver: the DKMS module version, or the kernel release when '
                                           "the kernel's own driver is loaded, with the node class."),
    'gpulab_reboot_required': ('gauge', '1 when the node waits for a reboot (/run/reboot-required).'),
    'gpulab_health_result_valid': ('gauge', "1 when the health check's result file was read; 0 when it was refused "
                                            '(a link, not root-owned, writable by others, too big, not its format).'),
    'gpulab_health_healthy': ('gauge', "1 when the health check's last verdict was healthy."),
    'gpulab_health_last_run_timestamp_seconds': ('gauge', 'When the health check last ran (unix seconds).'),
    'gpulab_health_check_ok': ('gauge', 'Per health check and GPU (gpu: its KFD index; pci_bdf: the address of a GPU '
                                        'the KFD does not list): 1 for pass or warn, 0 for fail or error.'),
    'gpulab_kernel_log_events_total': ('counter', "Kernel log events the health check counted per code since its "
                                                  "state file was made, with the code's severity (fatal, warn)."),
    'gpulab_kernel_log_events_last_run': ('gauge', "Kernel log events the health check's last run counted per code "
                                                   "(its log since the run before), with the code's severity."),
    'gpulab_kernel_log_source_info': ('gauge', 'Where the health check read the kernel log (journal, kmsg, file, '
                                               'none).'),
    'gpulab_kernel_log_truncated': ('gauge', "1 when the health check's last read of the kernel log was cut at its "
                                             "bound (events past it were not counted)."),
}


class MetricsError(ValueError):
    """A configuration the writer cannot use; the message names the value and the fix."""


# --- reading the node ---------------------------------------------------------------------------------------------

def _first_line(path):
    text = gpu_sysfs.read_attr(path)
    return text.splitlines()[0].strip() if text else None


def _partition_mode(device_dir, name):
    value = gpu_sysfs.read_attr(os.path.join(device_dir, name))
    return value if value and (_PARTITION.match(value) or re.match(r'^NPS\d$', value)) else None


def read_health(path=HEALTH_FILE, trusted_uid=0):
    """(result, problem): the health check's last result, or None and why it was refused; (None, None) when absent.

    Bounded (HEALTH_MAX_BYTES), never follows a link, refuses a file not owned by trusted_uid (root) or writable by
    group or others, as the interface between the two says (docs/health.md).
    """
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, 'O_NOFOLLOW', 0) | getattr(os, 'O_NONBLOCK', 0))
    except OSError as exc:
        if not os.path.lexists(path):
            return None, None
        return None, '%s: cannot be opened (%s; a link is refused)' % (path, exc.strerror)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None, '%s: not a regular file' % path
        if info.st_uid != trusted_uid:
            return None, '%s: owned by uid %d, not %d' % (path, info.st_uid, trusted_uid)
        if info.st_mode & 0o022:
            return None, '%s: writable by group or others (mode %o)' % (path, stat.S_IMODE(info.st_mode))
        data = os.read(fd, HEALTH_MAX_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > HEALTH_MAX_BYTES:
        return None, '%s: larger than %d bytes' % (path, HEALTH_MAX_BYTES)
    try:
        result = json.loads(data.decode('utf-8'))
    except ValueError:
        return None, '%s: not JSON' % path
    if not isinstance(result, dict) or result.get('schema') != 1 or not isinstance(result.get('checks'), list):
        return None, '%s: not a schema 1 health result' % path
    return result, None


def collect(sysfs_root='/sys', root='/', config=None, now=None, trusted_uid=0):
    """A snapshot of the node for render(): GPUs, links, counters, sensors, versions, health.

    config: {'expected_pci': N or None, 'expected_kfd': N or None, 'rocm_path', 'rocm_source', 'node_class',
    'health_file'} (the role writes it, from the plan). Paths inside the node are read under root (tests point it
    at a tree).
    """
    config = config or {}
    devices_dir = os.path.join(sysfs_root, 'bus', 'pci', 'devices')
    amd = []
    for bdf in sorted(_listdir(devices_dir)):
        device = pci.read_pci_device(devices_dir, bdf)
        if device and device['vendor'] == 'AMD':
            device_dir = os.path.join(devices_dir, bdf)
            device.update(
                aer=gpu_sysfs.aer_totals(gpu_sysfs.read_aer(device_dir)), ras=gpu_sysfs.read_ras(device_dir),
                sensors=gpu_sysfs.read_sensors(device_dir), firmware=firmware.read_sysfs(device_dir),
                pcie_replays=gpu_sysfs.read_pcie_replay_count(device_dir),
                vbios=_first_line(os.path.join(device_dir, 'vbios_version')),
                compute_partition=_partition_mode(device_dir, 'current_compute_partition'),
                memory_partition=_partition_mode(device_dir, 'current_memory_partition'))
            amd.append(device)
    kfd = [node for node in pci.read_kfd_nodes(sysfs_root) or [] if node['type'] == 'gpu']
    rocm_path = config.get('rocm_path') or '/opt/rocm'
    rocm = None
    for path in rocm_version_files(_under(root, rocm_path)):  # the legacy release's, else the ROCm Core SDK's
        rocm = _first_line(path)
        if rocm:
            break
    module_dir = os.path.join(sysfs_root, 'module', 'amdgpu')
    driver = _first_line(os.path.join(module_dir, 'version'))
    driver_source = 'dkms' if driver else None
    if not driver and os.path.isdir(module_dir):
        driver, driver_source = os.uname()[2], 'kernel'
    health, problem = read_health(_under(root, config.get('health_file') or HEALTH_FILE), trusted_uid)
    return {
        'time': time.time() if now is None else now,
        'expected_pci': config.get('expected_pci'),
        'expected_kfd': config.get('expected_kfd'),
        'node_class': config.get('node_class') or '',
        'devices': amd,
        'kfd_gpus': kfd,
        'rocm': {'version': rocm, 'source': config.get('rocm_source') or ''},
        'driver': {'version': driver, 'source': driver_source},
        'reboot_required': os.path.exists(_under(root, '/run/reboot-required')),
        'health': health,
        'health_problem': problem,
    }


def _under(root, path):
    return os.path.join(root, path.lstrip('/'))


def _listdir(path):
    try:
        return os.listdir(path)
    except OSError:
        return []


# --- the GPUs as series -------------------------------------------------------------------------------------------

def gpu_series(snapshot):
    """[(labels, device, first)]: one entry per KFD GPU agent (gpu = its index among the KFD GPU agents, as ROCm
    numbers them), then one per AMD function the KFD does not list (gpu=""). device: the PCI function's facts
    (None for an agent whose GPU is not on the bus); first: whether this is the GPU's first agent.

    A GPU in a compute partition mode (MI300 CPX) is several agents with the GPU's unique_id, each at its own
    location (0a:00.0, 0a:00.1, ...: fixtures kfd-topology/mi308x-cpx-*) while the bus has the first function
    only: their pci_bdf is the GPU's function, partition their index within the GPU ("" for a GPU in one piece).
    """
    by_bdf = dict((device['bdf'], device) for device in snapshot['devices'])
    groups = {}
    for node in snapshot['kfd_gpus']:
        groups.setdefault(node.get('unique_id') or node['bdf'], []).append(node)
    series = []
    listed = set()
    for index, node in enumerate(snapshot['kfd_gpus']):
        siblings = groups[node.get('unique_id') or node['bdf']]
        device = next((by_bdf[sibling['bdf']] for sibling in siblings if sibling['bdf'] in by_bdf), None)
        if device:
            listed.add(device['bdf'])
        partitioned = len(siblings) > 1 or bool(device and device.get('compute_partition'))
        minor = node.get('drm_render_minor')
        series.append(({
            'gpu': str(index),
            'pci_bdf': (device or {}).get('bdf') or node['bdf'] or '',
            'model': (device or {}).get('name') or node.get('name') or '',
            'gfx': node.get('gfx_target') or (device or {}).get('gfx_target') or '',
            'render_node': '/dev/dri/renderD%d' % minor if minor else (device or {}).get('render_node') or '',
            'partition': str(siblings.index(node)) if partitioned else '',
        }, device, siblings.index(node) == 0))
    for device in snapshot['devices']:
        if device['bdf'] not in listed:
            series.append(({'gpu': '', 'pci_bdf': device['bdf'], 'model': device.get('name') or '',
                            'gfx': device.get('gfx_target') or '', 'render_node': device.get('render_node') or '',
                            'partition': ''}, device, True))
    return series


# --- the text format ----------------------------------------------------------------------------------------------

def escape_label(value):
    """A label value as the exposition format wants it: backslash, double quote and line feed escaped."""
    return str(value).replace('\\', '\\\\').replace('"', '\\"').replace('\n', '\\n')


def format_value(value):
    if isinstance(value, bool):
        return '1' if value else '0'
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return 'NaN'
    if math.isinf(value):
        return '+Inf' if value > 0 else '-Inf'
    return repr(float(value))


class _Families(object):
    """Samples grouped by family, written in METRICS order with their HELP and TYPE lines."""

    def __init__(self):
        self.samples = {}

    def add(self, name, labels, value):
        if value is None:
            return
        if name not in METRICS:
            raise KeyError('%s is not in METRICS' % name)
        self.samples.setdefault(name, []).append((labels, value))

    def text(self):
        lines = []
        for name, (kind, help_text) in METRICS.items():
            if name not in self.samples:
                continue
            lines.append('# HELP %s %s' % (name, help_text.replace('\\', '\\\\').replace('\n', '\\n')))
            lines.append('# TYPE %s %s' % (name, kind))
            for labels, value in self.samples[name]:
                pairs = ','.join('%s="%s"' % (key, escape_label(val)) for key, val in labels)
                lines.append('%s%s %s' % (name, '{%s}' % pairs if pairs else '', format_value(value)))
        return '\n'.join(lines) + '\n'


def render(snapshot):
    """The textfile for a snapshot from collect(). Pure."""
    out = _Families()
    out.add('gpulab_textfile_timestamp_seconds', (), float(snapshot['time']))
    for source, key in (('pci', 'expected_pci'), ('kfd', 'expected_kfd')):
        if snapshot.get(key) is not None:
            out.add('gpulab_gpus_expected', (('source', source),), int(snapshot[key]))
    out.add('gpulab_gpus_found', (('source', 'pci'),), len(snapshot['devices']))
    out.add('gpulab_gpus_found', (('source', 'kfd'),), len(snapshot['kfd_gpus']))
    node_class = snapshot.get('node_class') or ''
    for labels, device, first in gpu_series(snapshot):
        base = tuple((key, labels[key]) for key in GPU_LABELS)
        device = device or {}
        out.add('gpulab_gpu_info', base + (('driver', device.get('driver') or ''),
                                           ('compute_partition', device.get('compute_partition') or ''),
                                           ('memory_partition', device.get('memory_partition') or '')), 1)
        if not device or not first:
            continue  # the function's own values are on its first agent's series only: one link, one VRAM
        if device.get('vbios'):
            out.add('gpulab_gpu_vbios_info', base + (('vbios_version', device['vbios']),
                                                     ('node_class', node_class)), 1)
        for block, version in sorted((device.get('firmware') or {}).items()):
            out.add('gpulab_gpu_firmware_info', base + (('node_class', node_class), ('firmware', block),
                                                        ('version', version)), 1)
        _link(out, base, device['link'])
        for kind in gpu_sysfs.AER_KINDS:
            if kind in device['aer']:
                out.add('gpulab_gpu_pcie_aer_errors_total', base + (('kind', kind),), device['aer'][kind])
        for block in sorted(device['ras']):
            for kind, count in sorted(device['ras'][block].items()):
                out.add('gpulab_gpu_ecc_errors_total', base + (('block', block), ('kind', kind)), count)
        out.add('gpulab_gpu_pcie_replays_total', base, device.get('pcie_replays'))
        sensors = device['sensors']
        out.add('gpulab_gpu_vram_total_bytes', base, sensors['vram_total_bytes'])
        out.add('gpulab_gpu_vram_used_bytes', base, sensors['vram_used_bytes'])
        out.add('gpulab_gpu_temperature_celsius', base, sensors['temperature_celsius'])
        out.add('gpulab_gpu_power_watts', base, sensors['power_watts'])
        if sensors['busy_percent'] is not None:
            out.add('gpulab_gpu_busy_ratio', base, sensors['busy_percent'] / 100.0)
    rocm = snapshot['rocm']
    if rocm.get('version'):
        out.add('gpulab_rocm_info', (('version', rocm['version']), ('source', rocm['source']),
                                     ('node_class', node_class)), 1)
    driver = snapshot['driver']
    if driver.get('version'):
        out.add('gpulab_amdgpu_driver_info', (('version', driver['version']), ('source', driver['source']),
                                              ('node_class', node_class)), 1)
    out.add('gpulab_reboot_required', (), bool(snapshot['reboot_required']))
    _health(out, snapshot)
    return out.text()


def _link(out, base, link):
    """The narrowest link of the path (pci.link_facts): its current values, and the maximum of the same link."""
    if link.get('effective_width') is None:
        return
    upstream = link.get('narrowest_bdf') and link.get('narrowest_bdf') == link.get('upstream_bdf')
    max_speed = link['upstream_max_speed_gts'] if upstream else link['max_speed_gts']
    max_width = link['upstream_max_width'] if upstream else link['max_width']
    out.add('gpulab_gpu_pcie_link_speed_transfers_per_second', base, link['effective_speed_gts'] * 1e9)
    if max_speed is not None:
        out.add('gpulab_gpu_pcie_link_max_speed_transfers_per_second', base, max_speed * 1e9)
    out.add('gpulab_gpu_pcie_link_width', base, link['effective_width'])
    out.add('gpulab_gpu_pcie_link_max_width', base, max_width)
    out.add('gpulab_gpu_pcie_link_degraded', base, bool(link.get('degraded')))


def _health(out, snapshot):
    health = snapshot.get('health')
    if snapshot.get('health_problem'):
        out.add('gpulab_health_result_valid', (), 0)
    if not health:
        return
    out.add('gpulab_health_result_valid', (), 1)
    out.add('gpulab_health_healthy', (), health.get('verdict') == 'healthy')
    if isinstance(health.get('time'), (int, float)) and not isinstance(health.get('time'), bool):
        out.add('gpulab_health_last_run_timestamp_seconds', (), float(health['time']))
    # One series per check and GPU: a GPU the KFD does not list has no index (gpu=""), so its PCI address tells two
    # such GPUs apart (node_exporter drops a repeated label set silently: a failing check would hide behind a
    # passing one). Entries that still share every label are one series with the worst status.
    worst = {}
    for check in health['checks']:
        if not isinstance(check, dict) or check.get('status') not in HEALTH_OK:
            continue
        gpu = check.get('gpu')
        labels = (('check', check.get('check') or ''), ('code', check.get('code') or ''),
                  ('gpu', '' if gpu is None else gpu), ('pci_bdf', _entry_bdf(check) if gpu is None else ''))
        worst[labels] = min(worst.get(labels, 1), HEALTH_OK[check['status']])
    for labels, value in worst.items():
        out.add('gpulab_health_check_ok', labels, value)
    _kernel_log(out, health.get('kernel_log'))


def _kernel_log(out, kernel_log):
    """The health result's kernel_log: its source, whether the read was cut, and per event code its total since
    the check's state file was made and its last run's count. Every code the result names (in totals, run or
    severity) is a series of both, 0 where nothing was counted. A result without the key (node code older than the
    kernel log check) or with values out of form gives no series for them."""
    if not isinstance(kernel_log, dict):
        return
    source = kernel_log.get('source')
    if source in KERNEL_LOG_SOURCES:
        out.add('gpulab_kernel_log_source_info', (('source', source),), 1)
    if isinstance(kernel_log.get('truncated'), bool):
        out.add('gpulab_kernel_log_truncated', (), kernel_log['truncated'])
    totals, run, severity = [kernel_log.get(key) if isinstance(kernel_log.get(key), dict) else {}
                             for key in ('totals', 'run', 'severity')]
    codes = sorted(code for code in set(totals) | set(run) | set(severity)
                   if isinstance(code, str) and _EVENT_CODE.match(code))
    for code in codes[:MAX_EVENT_CODES]:
        level = severity.get(code) if severity.get(code) in KERNEL_LOG_SEVERITIES else 'unknown'
        for name, counts in (('gpulab_kernel_log_events_total', totals), ('gpulab_kernel_log_events_last_run', run)):
            count = counts.get(code, 0)
            if not isinstance(count, bool) and isinstance(count, int) and 0 <= count < 2 ** 63:
                out.add(name, (('code', code), ('severity', level)), count)


def _entry_bdf(check):
    """The PCI address of the GPU a health entry is about: its bdf, else the first address its reason names (the
    per-GPU checks name their GPU's function: health.py); '' for an entry about the node."""
    for text in (check.get('bdf'), check.get('reason')):
        match = _BDF.search(text) if isinstance(text, str) else None
        if match:
            return match.group(0)
    return ''


# --- the CLI the timer runs ---------------------------------------------------------------------------------------

def load_config(path):
    """The writer's configuration (JSON, written by the rocm_metrics role); MetricsError names what is wrong."""
    try:
        with open(path) as handle:
            config = json.load(handle)
    except (IOError, OSError, ValueError) as exc:
        raise MetricsError('%s: cannot be read as JSON (%s); the rocm_metrics role writes it' % (path, exc))
    directory = config.get('textfile_dir')
    name = config.get('textfile_name', 'gpulab.prom')
    if not isinstance(directory, str) or not directory.startswith('/'):
        raise MetricsError('%s: textfile_dir must be an absolute path, not %r' % (path, directory))
    if not isinstance(name, str) or not _TEXTFILE_NAME.match(name):
        raise MetricsError('%s: textfile_name must be a file name ending in .prom, not %r' % (path, name))
    for key in ('expected_pci', 'expected_kfd'):
        value = config.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise MetricsError('%s: %s must be a count (0 or more) or null, not %r' % (path, key, value))
    return config


def textfile_folder(directory, login_uid_min=1000):
    """Make the textfile folder where it is missing (root's, 0755, with any missing parents); a folder that is
    there is the lab's (Debian's node_exporter package makes /var/lib/prometheus/node-exporter): its owner and mode
    stay as they are. MetricsError where the path is there but is no folder, or where a folder would be made in one
    that others, or a login user, can write to."""
    missing = []
    path = os.path.normpath(directory)
    while not os.path.lexists(path):
        missing.append(path)
        path = os.path.dirname(path)
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode):
        raise MetricsError('%s is there but is not a folder (a link or a file): textfile_dir must be a folder'
                           % path)
    if missing and (info.st_mode & 0o002 or info.st_uid >= login_uid_min):
        raise MetricsError('%s cannot be made: %s is writable by others or owned by a login user; make the folder, '
                           'or set rocm_metrics_textfile_dir to another' % (directory, path))
    for folder in reversed(missing):
        os.mkdir(folder, 0o755)
        os.chmod(folder, 0o755)


def write_atomically(directory, name, text):
    """Write directory/name through a temporary file in the same folder, renamed over it (0644)."""
    handle, temporary = tempfile.mkstemp(prefix='.' + name + '.', dir=directory)
    try:
        with os.fdopen(handle, 'w') as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, 0o644)
        os.rename(temporary, os.path.join(directory, name))
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


def main(argv=None):
    """gpulab-metrics-textfile [--config FILE] [--stdout]: collect, render, write (or print)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    config_path = '/etc/gpulab/metrics.json'
    to_stdout = '--stdout' in argv
    if '--config' in argv:
        config_path = argv[argv.index('--config') + 1]
    try:
        config = load_config(config_path)
        snapshot = collect(config.get('sysfs_root') or '/sys', config.get('root') or '/', config)
        text = render(snapshot)
        if snapshot['health_problem']:
            sys.stderr.write('gpulab-metrics-textfile: health result refused: %s\n' % snapshot['health_problem'])
        if to_stdout:
            sys.stdout.write(text)
        else:
            textfile_folder(config['textfile_dir'])
            write_atomically(config['textfile_dir'], config.get('textfile_name', 'gpulab.prom'), text)
    except (MetricsError, IOError, OSError) as exc:
        sys.stderr.write('gpulab-metrics-textfile: %s\n' % exc)
        return 2
    return 0
