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

SCHEMA = 1
STATUSES = ('pass', 'warn', 'fail', 'error')
# check name -> code; docs/health.md lists them, the metrics export them: never rename one.
CODES = {
    'gpu_count': 'GPU_COUNT',
    'amdgpu_loaded': 'AMDGPU_LOADED',
    'amdgpu_bound': 'AMDGPU_BOUND',
    'kfd_node': 'KFD_NODE',
    'render_node': 'RENDER_NODE',
    'rocminfo': 'ROCMINFO',
    'pcie_link': 'PCIE_LINK',
    'aer_errors': 'AER_ERRORS',
    'ecc_uncorrectable': 'ECC_UNCORRECTABLE',
    'bad_pages_pending': 'BAD_PAGES_PENDING',
    'xgmi_errors': 'XGMI_ERRORS',
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
}
_DEVICE_ID = re.compile(r'^0x[0-9a-f]{4}$')
_GROUP = re.compile(r'^[a-z_][a-z0-9_-]{0,31}$')
_NA = re.compile(r'^(n/?a|not supported|unsupported|not_supported)\.?$', re.I)
_NO_PAGES = re.compile(r'^no bad pages found\.?$', re.I)
_XGMI_OK = ('no_error', 'no error', 'ok', '0')


class DataError(ValueError):
    """The data file is not one the check can use: exit 2 with this message."""


def entry(check, status, reason, gpu=None):
    if status not in STATUSES:
        raise ValueError('status %r' % status)
    return {'check': check, 'code': CODES[check], 'status': status, 'reason': ' '.join(str(reason).split()),
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
    floor (gpu_models) gives link_policy's status."""
    results = []
    for gpu in gpus:
        link = gpu['link'] or {}
        width, speed = link.get('effective_width'), link.get('effective_speed_gts')
        if width is None and speed is None:
            results.append(entry('pcie_link', 'pass', '%s reports no link (a VF or a VM without link files): not '
                                                      'checked' % gpu['bdf'], gpu.get('gpu')))
            continue
        now = 'x%s at %s GT/s' % (width, speed)
        floor = want['gpu_models'].get(gpu.get('device_id') or '')
        if floor:
            low = [text for text, have, need in (
                ('width x%s' % floor.get('link_width'), width, floor.get('link_width')),
                ('speed %s GT/s' % floor.get('link_speed_gts'), speed, floor.get('link_speed_gts')))
                if need is not None and (have is None or have < need)]
            problem = ('%s link %s is below the %s floor (%s)' % (gpu['bdf'], now, gpu['device_id'], ', '.join(low))
                       if low else None)
        else:
            problem = ('%s link %s is below its maximum (%s)' % (
                gpu['bdf'], now, ', '.join(link.get('degraded_links') or [link.get('narrowest_bdf') or gpu['bdf']]))
                if link.get('degraded') else None)
        results.append(entry('pcie_link', want['link_policy'] if problem else 'pass',
                             problem or '%s link %s' % (gpu['bdf'], now), gpu.get('gpu')))
    return results


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
