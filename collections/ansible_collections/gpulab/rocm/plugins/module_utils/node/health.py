# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GPU health checks: each a pure function over what was already read, returning result entries.

An entry is {check, code, status, reason, gpu} as docs/health.md and the interface with the metrics textfile
(/var/lib/gpulab/health/last.json) fix it: a stable snake_case check name, a stable UPPER_SNAKE code, a status of
pass/warn/fail/error, a one-line reason, and the GPU's index (its place among the KFD GPU nodes, the order amd-smi
and rocm-smi number them) when the entry is about one GPU, else None. The expected values come from the data file
(expected(): the role writes it from inventory variables); nothing here knows a GPU model. health_run.py reads the
node and runs the tools; this file only decides. Standard library only: it runs on the node without Ansible.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
import time

from ansible_collections.gpulab.rocm.plugins.module_utils.node import kernel_log_rules

SCHEMA = 1
STATUSES = ('pass', 'warn', 'fail', 'error')
# check name -> code; docs/health.md lists them, the metrics export them: never rename one.
CODES = {
    'gpu_count': 'GPU_COUNT',
    'amdgpu_loaded': 'AMDGPU_LOADED',
    'amdgpu_module': 'AMDGPU_MODULE',
    'amdgpu_bound': 'AMDGPU_BOUND',
    'kfd_node': 'KFD_NODE',
    'render_node': 'RENDER_NODE',
    'rocminfo': 'ROCMINFO',
    'pcie_link': 'PCIE_LINK',
    'aer_errors': 'AER_ERRORS',
    'pcie_replay': 'PCIE_REPLAY',
    'ecc_uncorrectable': 'ECC_UNCORRECTABLE',
    'bad_pages_pending': 'BAD_PAGES_PENDING',
    'xgmi_errors': 'XGMI_ERRORS',
    # The kernel log's entry when it found nothing (or could not be read); a finding carries its rule's KLOG_* code
    # (kernel_log_rules.py, docs/health.md's table).
    'kernel_log': 'KERNEL_LOG',
    'health_data': 'HEALTH_DATA',
}
POLICIES = ('fail', 'warn')
# The data file's keys and their defaults (the role's rocm_health_* variables fill them; docs/health.md).
DEFAULTS = {
    'schema': SCHEMA,
    'node_class': '',
    'gpu_count': -1,            # -1: as many as are on the PCI bus (no count expected)
    'kfd_group': 'render',
    'render_group': 'render',
    'link_policy': 'fail',      # a link below its maximum (or below the model's floor): fail or warn
    'gpu_models': {},           # device id '0x74a1' -> {'link_width': 16, 'link_speed_gts': 32.0} floors
    'aer_correctable': 'warn',  # rising correctable AER counts: warn or fail (fatal/non-fatal always fail)
    'max_uncorrectable_ecc': 0,
    'max_pending_bad_pages': 0,
    # Slurm kills its HealthCheckProgram after 60 s: rocminfo plus two amd-smi calls must fit in that.
    'rocminfo_timeout': 20,
    'amd_smi_timeout': 15,
    # gpulab-slurm-health resumes a node at most resume_limit times in resume_window_hours (then an admin does).
    'resume_limit': 3,
    'resume_window_hours': 24,
    'sysfs_root': '/sys',
    'dev_root': '/dev',
    # The kernel log (kernel_log.py): 'auto' (the journal, else /dev/kmsg), 'journal', 'kmsg', 'none' or an absolute
    # path of a log file; the most bytes read a run; hours a fatal line keeps failing (0: until acknowledged); N
    # resets in M minutes is a reset loop; the site's own rules (kernel_log_rules.validate_extra).
    'kernel_log_source': 'auto',
    'kernel_log_max_bytes': 4 << 20,
    'kernel_log_hold_hours': 72,
    'kernel_log_reset_loop_count': 3,
    'kernel_log_reset_loop_minutes': 60,
    'kernel_log_extra_rules': [],
}
KERNEL_LOG_SOURCES = ('auto', 'journal', 'kmsg', 'none')
# Bounds of the kernel log's values (plan_health and the role's input constraints say the same).
KERNEL_LOG_LIMITS = {'kernel_log_max_bytes': (64 << 10, 64 << 20), 'kernel_log_hold_hours': (0, 8760),
                     'kernel_log_reset_loop_count': (2, 1000), 'kernel_log_reset_loop_minutes': (1, 10080)}
_DEVICE_ID = re.compile(r'^0x[0-9a-f]{4}$')
_GROUP = re.compile(r'^[a-z_][a-z0-9_-]{0,31}$')
_NA = re.compile(r'^(n/?a|not supported|unsupported|not_supported)\.?$', re.I)
_NO_PAGES = re.compile(r'^no bad pages found\.?$', re.I)
_XGMI_OK = ('no_error', 'no error', 'ok', '0')


class DataError(ValueError):
    """The data file is not one the check can use: exit 2 with this message."""


def entry(check, status, reason, gpu=None, code=None):
    """One result entry; code: a kernel-log finding's own KLOG_* code (every other check has one code)."""
    if status not in STATUSES:
        raise ValueError('status %r' % status)
    return {'check': check, 'code': code or CODES[check], 'status': status, 'reason': ' '.join(str(reason).split()),
            'gpu': gpu}


def expected(data):
    """The data file's object with defaults applied and every value checked; DataError names the key and the fix."""
    if not isinstance(data, dict):
        raise DataError('the health data file must hold a JSON object')
    unknown = sorted(set(data) - set(DEFAULTS))
    if unknown:
        raise DataError('unknown keys in the health data file: %s (known: %s)' % (', '.join(unknown),
                                                                                  ', '.join(sorted(DEFAULTS))))
    values = dict(DEFAULTS, **data)
    if values['schema'] != SCHEMA:
        raise DataError('health data schema %r; this check reads schema %d' % (values['schema'], SCHEMA))
    for key in ('gpu_count', 'max_uncorrectable_ecc', 'max_pending_bad_pages', 'resume_limit', 'resume_window_hours'):
        if not isinstance(values[key], int) or isinstance(values[key], bool) or values[key] < -1:
            raise DataError('%s must be a whole number (gpu_count -1: not checked), got %r' % (key, values[key]))
    for key in ('rocminfo_timeout', 'amd_smi_timeout'):
        if not isinstance(values[key], (int, float)) or isinstance(values[key], bool) or not 0 < values[key] <= 600:
            raise DataError('%s must be seconds between 1 and 600, got %r' % (key, values[key]))
    for key in ('link_policy', 'aer_correctable'):
        if values[key] not in POLICIES:
            raise DataError('%s must be one of %s, got %r' % (key, ', '.join(POLICIES), values[key]))
    for key in ('kfd_group', 'render_group'):
        if not isinstance(values[key], str) or not _GROUP.match(values[key]):
            raise DataError('%s must be a group name such as render, got %r' % (key, values[key]))
    for key in ('sysfs_root', 'dev_root'):
        if not isinstance(values[key], str) or not values[key].startswith('/'):
            raise DataError('%s must be an absolute path, got %r' % (key, values[key]))
    _expected_kernel_log(values)
    models = values['gpu_models']
    if not isinstance(models, dict):
        raise DataError('gpu_models must map PCI device ids (0x74a1) to link floors')
    for device_id, floor in models.items():
        if not _DEVICE_ID.match(str(device_id)) or not isinstance(floor, dict) or \
                set(floor) - set(('link_width', 'link_speed_gts')):
            raise DataError('gpu_models: %r: a key must be a PCI device id such as 0x74a1 with '
                            '{link_width, link_speed_gts}' % (device_id,))
        if any(isinstance(value, bool) or not isinstance(value, (int, float)) for value in floor.values()):
            raise DataError('gpu_models: %r: link_width and link_speed_gts must be numbers' % (device_id,))
    return values


def _expected_kernel_log(values):
    source = values['kernel_log_source']
    if not isinstance(source, str) or not (source in KERNEL_LOG_SOURCES or (
            source.startswith('/') and len(source) <= 4096 and '\n' not in source and '\x00' not in source)):
        raise DataError('kernel_log_source must be auto, journal, kmsg, none or an absolute path of a log file, got %r'
                        % (source,))
    for key, (low, high) in sorted(KERNEL_LOG_LIMITS.items()):
        value = values[key]
        if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
            raise DataError('%s must be a whole number from %d to %d, got %r' % (key, low, high, value))
    try:
        kernel_log_rules.validate_extra(values['kernel_log_extra_rules'])
    except ValueError as exc:
        raise DataError(str(exc))


def verdict(entries):
    """'unhealthy' when a check failed, else 'error' when one could not run, else 'healthy'."""
    statuses = set(item['status'] for item in entries)
    if 'fail' in statuses:
        return 'unhealthy'
    if 'error' in statuses:
        return 'error'
    return 'healthy'


def failing(entries):
    return [item for item in entries if item['status'] in ('fail', 'error')]


# --- the checks ----------------------------------------------------------------------------------------------

def check_gpu_count(kfd_gpus, pci_gpus, want):
    """kfd_gpus: the physical GPUs KFD lists (pci.gather_pci's kfd_physical_gpus, None without KFD); pci_gpus: the
    AMD GPU functions on the bus; want: the expected count, -1 for none."""
    kfd = kfd_gpus or 0
    if want < 0:
        reason = '%d GPU(s) in KFD and %d on the PCI bus (gpu_count -1: every GPU on the bus must be in KFD)' % (
            kfd, pci_gpus)
        ok = kfd == pci_gpus
    else:
        reason = '%d GPU(s) in KFD and %d on the PCI bus, %d expected' % (kfd, pci_gpus, want)
        ok = kfd == want and pci_gpus == want
    return [entry('gpu_count', 'pass' if ok else 'fail', reason)]


def check_amdgpu(module_loaded, gpus):
    """module_loaded: /sys/module/amdgpu exists; gpus: [{'bdf', 'driver', 'gpu'}] of the AMD GPU functions."""
    results = [entry('amdgpu_loaded', 'pass' if module_loaded else 'fail',
                     'the amdgpu module is loaded' if module_loaded else
                     'the amdgpu module is not loaded (modprobe amdgpu; dmesg | grep -i amdgpu)')]
    for gpu in gpus:
        bound = gpu.get('driver') == 'amdgpu'
        results.append(entry('amdgpu_bound', 'pass' if bound else 'fail',
                             '%s is bound to amdgpu' % gpu['bdf'] if bound else
                             '%s is bound to %s, not amdgpu (dmesg | grep %s)' % (
                                 gpu['bdf'], gpu.get('driver') or 'no driver', gpu['bdf']), gpu.get('gpu')))
    return results


def _node_problem(node, group):
    """node: {'path', 'exists', 'char', 'group'} as health_run.stat_node reads it."""
    if not node.get('exists'):
        return '%s is missing' % node['path']
    if not node.get('char'):
        return '%s is not a character device' % node['path']
    if node.get('group') != group:
        return '%s belongs to group %s, not %s' % (node['path'], node.get('group'), group)
    return None


def check_device_nodes(kfd, renders, want):
    """kfd: /dev/kfd's stat; renders: [{'bdf', 'gpu', 'node': stat or None}] one per AMD GPU (node None when the
    GPU has no render node in sysfs)."""
    problem = _node_problem(kfd, want['kfd_group'])
    results = [entry('kfd_node', 'fail' if problem else 'pass',
                     problem or '%s is there, group %s' % (kfd['path'], want['kfd_group']))]
    for render in renders:
        node = render.get('node')
        problem = ('%s has no render node (no drm/renderD* in sysfs: amdgpu did not initialise it)' % render['bdf']
                   if node is None else _node_problem(node, want['render_group']))
        results.append(entry('render_node', 'fail' if problem else 'pass',
                             problem or '%s of %s is there, group %s' % (node['path'], render['bdf'],
                                                                         want['render_group']),
                             render.get('gpu')))
    return results


def check_rocminfo(run, kfd_gpus):
    """run: {'status': 'ok'|'absent'|'timeout'|'error', 'seconds', 'facts': gpu_tools.read_rocminfo's facts,
    'message'}; kfd_gpus: the KFD GPU nodes (partitions count: rocminfo lists one agent per node)."""
    status = run['status']
    if status == 'absent':
        return [entry('rocminfo', 'fail', 'rocminfo is not installed (role rocm_sdk)')]
    if status == 'timeout':
        return [entry('rocminfo', 'fail', 'rocminfo did not finish within %s s (a hung GPU or driver)'
                      % run.get('seconds'))]
    if status == 'error':
        return [entry('rocminfo', 'fail', 'rocminfo could not be read: %s' % run.get('message'))]
    facts = run['facts']
    agents = int(facts.get('gpu_count') or 0)
    if facts.get('rc') not in (0, None) or facts.get('error'):
        why = facts.get('error') or 'no listing'
        return [entry('rocminfo', 'fail', 'rocminfo exit status %s: %s' % (facts.get('rc'), why))]
    if agents != kfd_gpus:
        return [entry('rocminfo', 'fail', 'rocminfo lists %d GPU agent(s), KFD has %d GPU node(s)'
                      % (agents, kfd_gpus))]
    return [entry('rocminfo', 'pass', 'rocminfo lists %d GPU agent(s), as KFD has' % agents)]


def check_links(gpus, want):
    """gpus: [{'bdf', 'gpu', 'device_id', 'link': pci.link_facts}]; a link below its maximum or below the model's
    floor (gpu_models) gives link_policy's status. Where the function has no link files (a VF, some VMs) amdgpu's
    current PCIe DPM level (pp_dpm_pcie, the level marked '*') is the link: held to the model's floor where the data
    gives one, never to a maximum (DPM lowers the link when the GPU idles); with neither there is nothing to check."""
    results = []
    for gpu in gpus:
        link = gpu['link'] or {}
        width, speed = link.get('effective_width'), link.get('effective_speed_gts')
        floor = want['gpu_models'].get(gpu.get('device_id') or '')
        dpm = False
        if width is None and speed is None:
            width, speed = link.get('dpm_width'), link.get('dpm_speed_gts')
            dpm = True
            if width is None and speed is None:
                results.append(entry('pcie_link', 'pass', '%s reports no link information (no link files and no '
                                                          'pp_dpm_pcie): not checked' % gpu['bdf'], gpu.get('gpu')))
                continue
        now = 'x%s at %s GT/s' % (width, speed)
        if dpm:
            now += " (amdgpu's current PCIe DPM level, pp_dpm_pcie: the function has no link files)"
        if floor:
            low = [text for text, have, need in (
                ('width x%s' % floor.get('link_width'), width, floor.get('link_width')),
                ('speed %s GT/s' % floor.get('link_speed_gts'), speed, floor.get('link_speed_gts')))
                if need is not None and (have is None or have < need)]
            problem = ('%s link %s is below the %s floor (%s)' % (gpu['bdf'], now, gpu['device_id'], ', '.join(low))
                       if low else None)
        elif dpm:
            problem = None
            now += '; no floor for %s in gpu_models: not compared' % (gpu.get('device_id') or 'this model')
        else:
            problem = ('%s link %s is below its maximum (%s)' % (
                gpu['bdf'], now, ', '.join(link.get('degraded_links') or [link.get('narrowest_bdf') or gpu['bdf']]))
                if link.get('degraded') else None)
        results.append(entry('pcie_link', want['link_policy'] if problem else 'pass',
                             problem or '%s link %s' % (gpu['bdf'], now), gpu.get('gpu')))
    return results


def check_pcie_replay(gpus, previous):
    """gpus: [{'bdf', 'gpu', 'replay': amdgpu's pcie_replay_count or None}]; previous: {bdf: count} of the last run.
    A count that rose is a warning (the link retransmits: a marginal riser, slot or cable); the first run records; a
    count lower than last time (a reboot, a driver reload) is a new baseline; no file: not supported."""
    results = []
    for gpu in gpus:
        now = gpu.get('replay')
        before = previous.get(gpu['bdf'])
        if now is None:
            results.append(entry('pcie_replay', 'pass', '%s: no pcie_replay_count (not amdgpu, or not supported): not '
                                                        'checked' % gpu['bdf'], gpu.get('gpu')))
        elif not isinstance(before, int) or isinstance(before, bool):
            results.append(entry('pcie_replay', 'pass', '%s: PCIe replay count %d recorded; the next run compares'
                                 % (gpu['bdf'], now), gpu.get('gpu')))
        elif now > before:
            results.append(entry('pcie_replay', 'warn', '%s: PCIe replays since the last run: +%d (%d now): the link '
                                 'retransmits (check the slot, riser or cable)' % (gpu['bdf'], now - before, now),
                                 gpu.get('gpu')))
        else:
            results.append(entry('pcie_replay', 'pass', '%s: no new PCIe replays (%d%s)' % (
                gpu['bdf'], now, ', a new baseline' if now < before else ''), gpu.get('gpu')))
    return results


def check_amdgpu_module(loaded, module):
    """loaded: /sys/module/amdgpu exists; module: {'release', 'path', 'status': 'listed'|'missing'|'absent'|'error',
    'entry': the modules.dep line's module, 'message'} (health_run.amdgpu_module). A kernel whose modules.dep lists no
    amdgpu.ko (the node booted a kernel the driver was not built for) fails with the fix."""
    release = module.get('release') or 'this kernel'
    if loaded:
        return [entry('amdgpu_module', 'pass', 'amdgpu is loaded (kernel %s)' % release)]
    status = module.get('status')
    if status == 'listed':
        return [entry('amdgpu_module', 'pass', 'kernel %s has an amdgpu module (%s); it is not loaded: see '
                      'AMDGPU_LOADED' % (release, module.get('entry')))]
    if status == 'missing':
        return [entry('amdgpu_module', 'fail', 'kernel %s has no amdgpu module (%s lists no amdgpu.ko): install '
                      'linux-headers-%s and amdgpu-dkms for it (role rocm_driver), or linux-modules-extra-%s for the '
                      "kernel's own driver, or boot the previous kernel" % (release, module.get('path'), release,
                                                                            release))]
    return [entry('amdgpu_module', 'warn', 'amdgpu is not loaded and kernel %s\'s module list cannot be read (%s): '
                  'cannot tell whether it has an amdgpu module' % (release, module.get('message')))]


def _when(moment):
    return time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(moment)) if isinstance(moment, (int, float)) else '?'


def _shown(text, limit=120):
    text = ' '.join(str(text).split())
    return text if len(text) <= limit else text[:limit - 3] + '...'


def check_kernel_log(result):
    """result: kernel_log.collect's. One entry per code and GPU found this run (a fatal one fails, a warning one
    warns), one failing entry per fatal finding still held from an earlier run, else one KERNEL_LOG entry that says
    what was read (or why nothing was: pass where no source exists and none was asked for, warn where the source the
    data names cannot be read)."""
    want = result['want']
    hold_hours = want['kernel_log_hold_hours']
    until = ('until acknowledged (gpulab-gpu-health --ack-kernel-log %s)' +
             (' or %d h after its last line' % hold_hours if hold_hours else ''))
    results = []
    for finding in result['findings']:
        where = finding['bdf'] or 'a GPU (the line names none)'
        via = ' (via %s above it)' % finding['via'] if finding.get('via') else ''
        if finding['code'] == 'KLOG_RESET_LOOP':
            what = '%s%s: %s (%d reset(s) within the window)' % (where, via, finding['description'],
                                                                 finding.get('resets') or 0)
        else:
            what = '%s%s: %s: %d line(s) this run, last %s: %s' % (
                where, via, finding['description'], finding['count'], _when(finding['time']), _shown(finding['last']))
        if finding['severity'] == 'fatal' and finding.get('held'):
            status, what = 'fail', what + '; held ' + until % finding['code']
        elif finding['severity'] == 'fatal':
            status, what = 'warn', what + '; older than kernel_log_hold_hours (%d h): not held' % hold_hours
        else:
            status = 'warn'
        results.append(entry('kernel_log', status, what, finding['gpu'], finding['code']))
    for hold in result['held']:
        results.append(entry('kernel_log', 'fail', '%s: %s, last seen %s: %s; held %s' % (
            hold.get('bdf') or 'a GPU (the line names none)', hold.get('description'), _when(hold.get('last')),
            _shown(hold.get('line') or ''), until % hold.get('code')), hold.get('gpu'), hold.get('code')))
    if results:
        if result.get('problem') and result.get('explicit'):
            results.append(entry('kernel_log', 'warn', 'the kernel log (%s) could not be read: %s' % (
                want['kernel_log_source'], result['problem'])))
        return results
    source = result['source']
    if not result.get('read', True):
        why = result.get('problem') or 'nothing to read'
        return [entry('kernel_log', 'pass', 'the kernel log was not read this run: %s' % why)]
    if source == 'none':
        if result.get('problem') and result.get('explicit'):
            return [entry('kernel_log', 'warn', 'kernel log not checked: %s' % result['problem'])]
        if result.get('problem'):
            return [entry('kernel_log', 'pass', 'kernel log not checked: %s' % result['problem'])]
        return [entry('kernel_log', 'pass', 'kernel log not checked (kernel_log_source: none)')]
    if result.get('problem'):
        return [entry('kernel_log', 'warn', 'the kernel log (%s) could not be read: %s' % (
            want['kernel_log_source'], result['problem']))]
    notes = []
    if result.get('truncated'):
        notes.append('more is left for the next run (at most kernel_log_max_bytes a run)')
    if result.get('lost'):
        notes.append('some messages were lost before they were read (the kernel ring buffer wrapped)')
    if result.get('note'):
        notes.append(result['note'])
    return [entry('kernel_log', 'pass', '%d line(s), %d bytes read from the %s: no finding%s' % (
        result['lines'], result['bytes'], {'journal': 'journal', 'kmsg': 'kernel ring buffer (/dev/kmsg)'}.get(
            source, 'file ' + want['kernel_log_source']), ('; ' + '; '.join(notes)) if notes else ''))]


def check_aer(gpus, previous, want):
    """gpus: [{'bdf', 'gpu', 'aer': gpu_sysfs.aer_totals}]; previous: {bdf: totals} of the last run ({} the first
    time). Counts that rose: fatal and non-fatal fail, correctable gives aer_correctable's status. A count lower than
    last time is a reset (a reboot): a new baseline."""
    results = []
    for gpu in gpus:
        now = gpu.get('aer') or {}
        if not now:
            results.append(entry('aer_errors', 'pass', '%s: the kernel exposes no AER counters: not checked'
                                 % gpu['bdf'], gpu.get('gpu')))
            continue
        before = previous.get(gpu['bdf'])
        if not isinstance(before, dict):
            results.append(entry('aer_errors', 'pass', '%s: AER counters recorded (%s); the next run compares'
                                 % (gpu['bdf'], _totals(now)), gpu.get('gpu')))
            continue
        rose = dict((kind, now[kind] - before[kind]) for kind in now
                    if isinstance(before.get(kind), int) and now[kind] > before[kind])
        if not rose:
            results.append(entry('aer_errors', 'pass', '%s: no new AER errors (%s)' % (gpu['bdf'], _totals(now)),
                                 gpu.get('gpu')))
            continue
        status = 'fail' if set(rose) - set(['correctable']) else want['aer_correctable']
        results.append(entry('aer_errors', status, '%s: AER errors since the last run: %s' % (
            gpu['bdf'], ', '.join('%s +%d' % (kind, rose[kind]) for kind in sorted(rose))), gpu.get('gpu')))
    return results


def _totals(totals):
    return ', '.join('%s %d' % (kind, totals[kind]) for kind in sorted(totals))


def _number(value):
    """A count from amd-smi: an int, a {'value': N} object, 'N/A' (None), or the text itself when it is neither."""
    if isinstance(value, dict) and 'value' in value:
        value = value['value']
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.match(r'^\d+$', value.strip()):
        return int(value.strip())
    if value is None or (isinstance(value, str) and _NA.match(value.strip())):
        return None
    return value


def _tool_failed(check, tool):
    """amd-smi did not give an answer: every check it feeds fails closed."""
    return [entry(check, 'fail', '%s: %s' % (' '.join(tool.get('argv') or ['amd-smi']), tool.get('message')))]


def check_ecc(tool, want):
    """tool: health_run's amd-smi result for `metric --json`: {'status', 'entries': [(index, data)], 'message'}."""
    if tool['status'] != 'ok':
        return _tool_failed('ecc_uncorrectable', tool)
    results = []
    for index, data in tool['entries']:
        count = _number((data.get('ecc') or {}).get('total_uncorrectable_count')
                        if isinstance(data.get('ecc'), dict) else data.get('ecc'))
        if count is not None and not isinstance(count, int):
            results.append(entry('ecc_uncorrectable', 'fail', 'GPU %d: amd-smi printed %r for the uncorrectable '
                                                              'ECC count' % (index, count), index))
        else:
            results.append(_counted('ecc_uncorrectable', index, count, want['max_uncorrectable_ecc'],
                                    'uncorrectable ECC error(s)', 'ECC counts'))
    return results


def _counted(check, index, count, limit, what, unsupported):
    """One GPU's count against its limit; None: the GPU does not support it (a pass that says so)."""
    if count is None:
        return entry(check, 'pass', 'GPU %d: %s not supported' % (index, unsupported), index)
    return entry(check, 'fail' if count > limit else 'pass', 'GPU %d: %d %s, at most %d allowed'
                 % (index, count, what, limit), index)


def check_xgmi(tool):
    if tool['status'] != 'ok':
        return _tool_failed('xgmi_errors', tool)
    results = []
    for index, data in tool['entries']:
        value = data.get('xgmi_err')
        number = _number(value)
        text = str(value.get('value') if isinstance(value, dict) else value).strip()
        if number is None:
            results.append(entry('xgmi_errors', 'pass', 'GPU %d: XGMI error status not supported' % index, index))
        elif number == 0 or text.lower() in _XGMI_OK:
            results.append(entry('xgmi_errors', 'pass', 'GPU %d: no XGMI errors' % index, index))
        else:
            results.append(entry('xgmi_errors', 'fail', 'GPU %d: XGMI error status %s' % (index, text), index))
    return results


def _pages(value):
    """Pending bad pages from amd-smi bad-pages: 0 for 'No bad pages found.', None for not supported, else the
    number of pages listed (at least 1)."""
    if isinstance(value, str) and _NO_PAGES.match(value.strip()):
        return 0
    if value is None or (isinstance(value, str) and _NA.match(value.strip())):
        return None
    if isinstance(value, list):
        return len(value)
    return 1


def check_bad_pages(tool, want):
    """tool: health_run's amd-smi result for `bad-pages`."""
    if tool['status'] != 'ok':
        return _tool_failed('bad_pages_pending', tool)
    results = []
    for index, data in tool['entries']:
        results.append(_counted('bad_pages_pending', index, _pages(data.get('pending')),
                                want['max_pending_bad_pages'], 'page(s) pending retirement', 'bad pages'))
    return results
