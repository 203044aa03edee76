# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet report (schema: docs/fleet-report.md): one record per host built from its probe
(gpulab.rocm.node_probe: the rocminfo, rocm-smi and amd-smi facts, the PCI bus and links, the version files), and
the report of every host. rocm_verify checks the same record that rocm_report shows. Pure.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
from collections.abc import Mapping, Sequence

from ansible_collections.gpulab.rocm.plugins.module_utils.parsers import firmware
from ansible_collections.gpulab.rocm.plugins.module_utils.parsers._facts_common import normalize_bdf
from ansible_collections.gpulab.rocm.plugins.module_utils.parsers.slurm_conf import gres_of
from ansible_collections.gpulab.rocm.plugins.module_utils.planning import gpu_count
from ansible_collections.gpulab.rocm.plugins.module_utils.planning.rocm_release import version_tuple


class ReportError(ValueError):
    """An input that is not what the report is built from."""


SCHEMA_VERSION = 1
UNREACHABLE = 'no facts: the host was unreachable, or failed before the report tasks ran (see the play recap)'
# The ROCm tools, in the order they are trusted for GPU rows: rocminfo lists what the HSA runtime can use; amd-smi
# before rocm-smi, which is deprecated in its favour (rocm-reference.md 10), optional from ROCm 7 and being dropped
# by the ROCm Core SDK (rocm-reference.md 13): a node without it loses nothing here.
TOOLS = (('rocminfo', 'rocminfo'), ('amd_smi', 'amd-smi'), ('rocm_smi', 'rocm-smi'))


def _bus(address):
    """PCI address in sysfs form (0000:03:00.0); rocm-smi prints upper case, old tools omit the domain."""
    return normalize_bdf(str(address)) if address else None


def _link_from_pci(device):
    """The link that limits the GPU (gpu_pci_facts' narrowest link on the path from the root port)."""
    link = device.get('link') or {}
    narrowest = link.get('narrowest_bdf')
    if narrowest and narrowest == link.get('upstream_bdf'):
        max_speed, max_width = link.get('upstream_max_speed_gts'), link.get('upstream_max_width')
    elif narrowest == device.get('bdf'):
        max_speed, max_width = link.get('max_speed_gts'), link.get('max_width')
    else:  # a link in the middle of the path: its maximum is not in the facts
        max_speed = max_width = None
    return {
        'speed_gts': link.get('effective_speed_gts'),
        'width': link.get('effective_width'),
        'max_speed_gts': max_speed,
        'max_width': max_width,
        'degraded': link.get('degraded'),
        'degraded_links': list(link.get('degraded_links') or []),
        'at': narrowest,
        'source': 'sysfs' if link.get('effective_width') is not None else None,
    }


def _link_from_tools(records):
    """Current (and, from amd-smi, maximum) link as the ROCm tools print it: shown, never judged.

    Navi and MI300 GPUs report their on-package switch link there (the RX 6600 capture: x8 card, max x16),
    so only the sysfs path (gpu_pci_facts) decides whether a link is degraded.
    """
    for label, gpu in records:
        if gpu.get('link_width') is not None or gpu.get('link_speed_gts') is not None:
            return {
                'speed_gts': gpu.get('link_speed_gts'), 'width': gpu.get('link_width'),
                'max_speed_gts': gpu.get('max_link_speed_gts'), 'max_width': gpu.get('max_link_width'),
                'degraded': None, 'degraded_links': [], 'at': None, 'source': label,
            }
    return {'speed_gts': None, 'width': None, 'max_speed_gts': None, 'max_width': None, 'degraded': None,
            'degraded_links': [], 'at': None, 'source': None}


def _first(records, *keys):
    for key in keys:
        for _label, gpu in records:
            if gpu.get(key) not in (None, ''):
                return gpu[key]
    return None


def _match(rows, gpus):
    """Pair each row with one of gpus: by PCI address, then unique id, then by order when gpus give neither.

    Returns the unmatched gpus.
    """
    by_bus = {}
    by_uid = {}
    for gpu in gpus:
        bus = _bus(gpu.get('pci_bus') or gpu.get('pcie_bus') or gpu.get('bdf'))
        if bus:
            by_bus.setdefault(bus, gpu)
        if gpu.get('unique_id'):
            by_uid.setdefault(gpu['unique_id'], gpu)
    matched = []
    pairs = []
    for row in rows:
        gpu = by_bus.get(row['pci_bus']) if row['pci_bus'] else None
        if gpu is None and row['unique_id']:
            gpu = by_uid.get(row['unique_id'])
        pairs.append(gpu)
        if gpu is not None:
            matched.append(id(gpu))
    # rocm-smi's concise table prints no address: same count, same order is all there is to go on.
    if not by_bus and not by_uid and len(gpus) == len(rows):
        return list(zip(rows, gpus)), []
    return list(zip(rows, pairs)), [gpu for gpu in gpus if id(gpu) not in matched]


def _new_row(label, gpu, vendor='AMD'):
    return {
        'vendor': vendor,
        'pci_bus': _bus(gpu.get('pci_bus') or gpu.get('pcie_bus') or gpu.get('bdf')),
        'unique_id': gpu.get('unique_id'),
        '_records': [(label, gpu)],
    }


def _finish_row(row, pci):
    records = row.pop('_records')
    tools = [(label, gpu) for label, gpu in records if label != 'pci']
    row['model'] = (_first(tools, 'marketing_name', 'product_name') or (pci or {}).get('name')
                    or ('unknown device %s' % (_first(tools, 'device_id') or (pci or {}).get('device_id') or '?')))
    row['gfx_target'] = _first(tools, 'gfx_target') or (pci or {}).get('gfx_target')
    row['target_id'] = _first(tools, 'target_id')
    row['vram_bytes'] = _first(tools, 'vram_bytes', 'vram_total_bytes')
    row['driver'] = (pci or {}).get('driver')
    row['sriov_vf'] = _first(tools, 'sriov_vf') if pci is None else pci.get('sriov_vf')
    row['link'] = _link_from_pci(pci) if pci and (pci.get('link') or {}).get('effective_width') is not None \
        else _link_from_tools(tools)
    row['seen_by'] = sorted(set(label for label, _gpu in records) | ({'pci'} if pci else set()))
    row['firmware'] = _row_firmware(tools, pci, row['pci_bus'])
    row['drift'] = []  # filled by fleet_drift, against the other hosts of the class
    row['problems'] = []
    if row['link']['degraded']:
        link = row['link']
        row['problems'].append('PCIe link degraded: %s x%s, capable of %s x%s (at %s)' % (
            _gts(link['speed_gts']), link['width'], _gts(link['max_speed_gts']), link['max_width'],
            ', '.join(link['degraded_links']) or link['at']))
    if pci is not None and pci.get('vendor') == 'AMD' and not pci.get('driver'):
        row['problems'].append('no kernel driver bound (amdgpu not loaded, or it failed on this GPU: see dmesg)')
    return row


def _row_firmware(tools, pci, bus):
    """The GPU's firmware record (parsers/firmware.py's shape, by its order of sources), without the index (the
    tools number GPUs differently); None where no source shows any firmware."""
    amd = next((gpu for label, gpu in tools if label == 'amd-smi'), None)
    rocm = next((gpu for label, gpu in tools if label == 'rocm-smi'), None)
    found = firmware.merged(amd, rocm, pci if (pci or {}).get('vendor') == 'AMD' else None, pci_bdf=bus)
    found.pop('index')
    if not (found['firmware'] or found['vbios'] or found['ifwi'] or found['boot_firmware']):
        return None
    return found


def _gts(speed):
    """'16 GT/s'; '? GT/s' for what is no speed (None, or a probe reply's text or huge number: the record's schema
    check then names it)."""
    if isinstance(speed, bool) or not isinstance(speed, (int, float)) or not -1e18 < speed < 1e18:
        return '? GT/s'
    return ('%g GT/s' % speed)


def host_record(node, name, expected_gpu_count=-1, expected_rocm_version='', node_class=''):
    """One host's fleet record from its probe (sections gpus, tools, versions, os); node_class: the inventory's
    class of the host (rocm_report_node_class), the group its firmware and versions are compared within."""
    if not isinstance(node, Mapping):
        raise ReportError('the fleet record is built from the probe (gpulab_node), got %s' % type(node).__name__)
    problems = []
    tools = node.get('tools') or {}
    facts = dict((key, tools.get(key) if isinstance(tools.get(key), Mapping) else None) for key, _label in TOOLS)
    facts['gpu_pci'] = node.get('gpu_pci') if isinstance(node.get('gpu_pci'), Mapping) else None

    # GPU rows: the first ROCm tool that lists GPUs; the others and sysfs are matched onto them.
    rows = []
    reported_kinds = set()
    for key, label in TOOLS:
        tool = facts[key]
        if tool is None:
            continue
        error, kind = tool.get('error'), tool.get('error_kind')
        # A missing rocm-smi/amd-smi is normal (amd-smi came with ROCm 6.0); one root cause is reported once.
        if error and kind not in reported_kinds and not (key != 'rocminfo' and kind == 'tool_missing'):
            problems.append(error)
            reported_kinds.add(kind)
        gpus = [gpu for gpu in tool.get('gpus') or [] if isinstance(gpu, Mapping)]
        if not gpus:
            continue
        if not rows:
            rows = [_new_row(label, gpu) for gpu in gpus]
            continue
        pairs, unmatched = _match(rows, gpus)
        for row, gpu in pairs:
            if gpu is not None:
                row['_records'].append((label, gpu))
        if unmatched:
            problems.append('%s lists %d GPU(s) that %s does not: %s' % (
                label, len(unmatched), rows[0]['_records'][0][0],
                ', '.join(_bus(gpu.get('pcie_bus') or gpu.get('pci_bus')) or gpu.get('unique_id') or '?'
                          for gpu in unmatched)))
    tool_gpu_count = len(rows)

    pci = facts['gpu_pci'] or {}
    pci_by_bus = dict((_bus(device.get('bdf')), device) for device in pci.get('devices') or [])
    finished = []
    for row in rows:
        finished.append(_finish_row(row, pci_by_bus.pop(row['pci_bus'], None) if row['pci_bus'] else None))
    # GPUs on the bus that no ROCm tool lists (no driver, or NVIDIA): rows of their own, from sysfs alone.
    for bus in sorted(pci_by_bus):
        device = pci_by_bus[bus]
        row = _new_row('pci', device, vendor=device.get('vendor') or '?')
        row['_records'] = []
        finished.append(_finish_row(row, device))
    finished.sort(key=lambda row: (row['vendor'] != 'AMD', row['pci_bus'] or '~'))

    # The probe's version file: '6.2.4-139' (legacy), '10.1.0-2' (the ROCm Core SDK's core/.info/version).
    versions = node.get('versions') or {}
    rocm_full = versions.get('rocm')
    rocm_version = rocm_full.split('-')[0] if rocm_full else (facts['amd_smi'] or {}).get('rocm_version')
    driver_version = (versions.get('amdgpu') or (facts['amd_smi'] or {}).get('driver_version')
                      or (facts['rocm_smi'] or {}).get('driver_version') or (facts['rocminfo'] or {}).get('rock_version'))

    # The one count rule (gpu_count.expected), as rocm_verify applies it.
    rule = gpu_count.expected(node, {'expected_gpu_count': _int(expected_gpu_count, 'expected_gpu_count')})
    if rule['configured'] and rule['count'] != tool_gpu_count:
        problems.append('%d AMD GPU(s) found, the inventory expects %d (rocm_expected_gpu_count)'
                        % (tool_gpu_count, rule['count']))
    elif rule['source'] == gpu_count.RECORDED:
        problems.append(gpu_count.lost_problem(rule))
    if expected_rocm_version and rocm_version and _release(expected_rocm_version) != _release(rocm_version):
        problems.append('ROCm %s is installed, the inventory asks for %s (rocm_version)'
                        % (rocm_version, expected_rocm_version))

    slurm = slurm_record(node)
    if slurm and slurm.get('problem'):
        problems.append(slurm.pop('problem'))
    elif slurm:
        slurm.pop('problem', None)

    health = health_record(node)
    if health and health['verdict'] != 'healthy':
        problems.append('health check: %s' % ('; '.join(health['failing']) or health['error'] or health['verdict']))

    # The GPUs the ROCm tools see, as gpu_count counts them (rocm_verify's figures); sysfs-only rows are not usable.
    amd_rows = [row for row in finished if row['vendor'] == 'AMD' and set(row['seen_by']) - {'pci'}]
    gpu_problems = ['%s: %s' % (row['pci_bus'] or row['model'], problem) for row in finished for problem in row['problems']]
    return {
        'name': name,
        'reachable': True,
        'node_class': node_class or '',
        'os': _os_text(node.get('os')),
        'kernel': (node.get('os') or {}).get('kernel'),
        'in_container': pci.get('in_container'),
        'rocm_version': rocm_version,
        'rocm_build': rocm_full,
        'driver_version': driver_version,
        'gpu_count': tool_gpu_count,
        'gfx_targets': sorted(set(row['gfx_target'] for row in amd_rows if row['gfx_target'])),
        'degraded_links': sum(1 for row in finished if row['link']['degraded']),
        'problems': problems + gpu_problems,
        'host_problems': problems,
        'gpus': finished,
        'slurm': slurm,
        'health': health,
        'tuning': tuning_record(node),
        'drift': [],
    }


def tuning_record(node):
    """The host tuning as this run planned it (rocm_tuning's plan, kept in the probe's plans): {'line', 'findings'}
    - one line of the settings and their states (in effect, set by the lab, pending a reboot, not settable here)
    and what is not in effect; None where no profile is set or the tuning was not planned in this run (a report
    run alone plans no tuning). Its findings are notices, not problems of the host (docs/hardware.md)."""
    plans = node.get('plans') if isinstance(node.get('plans'), Mapping) else {}
    plan = (plans.get('tuning') or {}).get('plan') if isinstance(plans.get('tuning'), Mapping) else None
    if not isinstance(plan, Mapping) or plan.get('skip') or not plan.get('settings'):
        return None
    words = {'in_effect': 'in effect', 'lab': 'set by the lab', 'write': 'written now', 'apply': 'applied now',
             'reboot_pending': 'reboot pending', 'not_settable': 'not settable here', 'overridden': 'overridden'}
    line = '; '.join('%s: %s' % (entry.get('name'), words.get(entry.get('state'), entry.get('state')))
                     for entry in plan['settings'] if isinstance(entry, Mapping))
    return {'line': line, 'findings': [str(text) for text in plan.get('findings') or []][:MAX_PROBLEMS]}


def health_record(node):
    """The last verdict of gpulab-gpu-health on the host (probe section health): {'verdict', 'failing', 'error'};
    None where the check never ran (no rocm_health). Not when it ran: the check runs on every converge, and a
    report that changed with each run would never be changed=0 (the metrics carry the time)."""
    health = node.get('health')
    if not isinstance(health, Mapping):
        return None
    return {'verdict': health.get('verdict') or 'unknown',
            'failing': [str(item) for item in health.get('failing') or []], 'error': health.get('error')}


def slurm_name(node):
    """The host's Slurm node name: slurmd's -N option (/etc/default/slurmd), else the short host name."""
    slurm = node.get('slurm') if isinstance(node.get('slurm'), Mapping) else {}
    defaults = ((slurm.get('files') or {}).get('defaults') or {}).get('content') or ''
    match = re.search(r'^\s*SLURMD_OPTIONS=["\']?[^"\'\n]*?-N\s*([A-Za-z0-9_.-]+)', defaults, re.M)
    return match.group(1) if match else slurm.get('hostname')


def slurm_record(node):
    """This host as Slurm sees it (`scontrol show node -o`, probe section slurm_state): {'node', 'listed', 'gres',
    'gres_used', 'state', 'reason', 'problem'}; None where the host has no Slurm."""
    state = node.get('slurm_state')
    if not isinstance(state, Mapping) or (state.get('error') or '').startswith('no Slurm here'):
        return None
    name = slurm_name(node)
    entries = [entry for entry in state.get('nodes') or [] if isinstance(entry, Mapping)]
    entry = next((item for item in entries if item.get('NodeName') == name), None)
    record = {'node': name, 'listed': entry is not None, 'gres': None, 'gres_used': None, 'state': None,
              'reason': None, 'problem': None}
    if state.get('error'):
        record['problem'] = 'Slurm: %s' % state['error']
    if entry is None:
        return record
    record.update(gres=gres_of(entry), gres_used=entry.get('GresUsed') or None, state=entry.get('State') or None,
                  reason=entry.get('Reason') or None)
    flags = set((record['state'] or '').upper().replace('+', ' ').split())
    if not record['problem'] and flags & set(['DOWN', 'DRAIN', 'DRAINED', 'DRAINING', 'FAIL', 'NOT_RESPONDING']):
        reason = ': %s' % record['reason'] if record['reason'] else ''
        record['problem'] = 'Slurm shows node %s %s%s' % (name, record['state'], reason)
    return record


def _os_text(os_info):
    if not isinstance(os_info, Mapping) or not os_info.get('distribution'):
        return None
    return ('%s %s' % (os_info['distribution'], os_info.get('full_version') or os_info.get('version') or '')).strip()


def _release(version):
    """6.2 and 6.2.0 are the same release (rocm_release.version_tuple); text that is no release number as it is."""
    text = str(version).split('-', 1)[0]
    return version_tuple(text) or text


def _int(value, what):
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ReportError('the fleet report: %s must be an integer, got %r' % (what, value))


def unreachable_host(name):
    return {
        'name': name, 'reachable': False, 'node_class': '', 'os': None, 'kernel': None, 'in_container': None,
        'rocm_version': None, 'rocm_build': None, 'driver_version': None, 'gpu_count': 0, 'gfx_targets': [],
        'degraded_links': 0,
        'problems': [UNREACHABLE],
        'host_problems': [UNREACHABLE],
        'gpus': [],
        'slurm': None,
        'health': None,
        'drift': [],
    }


def report_fleet(host_vars, hosts, record_var):
    """The report: every host of `hosts` in name order, from the records the hosts built.

    host_vars is `hostvars` (or any dict of host name -> its variables); a host without the variable record_var
    never got as far as building its record (unreachable, or failed before) and is listed with a problem. Each
    record is checked against the schema (valid_record) before anything reads it: a record that is not one (a forged
    or garbled probe reply) is that host's problem, listed as such, and the other hosts are reported as usual.
    """
    if not isinstance(host_vars, Mapping):
        raise ReportError('the fleet report is built from hostvars (host name -> variables), got %s'
                          % type(host_vars).__name__)
    entries = []
    for name in sorted(set(str(host) for host in hosts)):
        try:
            variables = host_vars[name]
        except KeyError:
            variables = {}
        record = variables.get(record_var) if isinstance(variables, Mapping) else None
        # The registered result of gpulab.rocm.plan (phase report) holds the record; a failed or unreachable
        # host registered a result without one.
        if isinstance(record, Mapping) and 'record' in record:
            record = record['record']
        elif not (isinstance(record, Mapping) and 'gpus' in record and 'problems' in record):
            record = None
        if record is None:
            entries.append(unreachable_host(name))
            continue
        try:
            entries.append(valid_record(record, name))
        except InvalidRecord as exc:
            entries.append(invalid_host(name, exc))
    fleet_drift(entries)
    models = {}
    for entry in entries:
        for gpu in entry['gpus']:
            models[gpu['model']] = models.get(gpu['model'], 0) + 1
    return {
        'schema_version': SCHEMA_VERSION,
        'summary': {
            'hosts': len(entries),
            'unreachable': sum(1 for entry in entries if not entry['reachable']),
            'hosts_with_problems': sum(1 for entry in entries if entry['problems']),
            'gpus': sum(len(entry['gpus']) for entry in entries),
            'amd_gpus': sum(entry['gpu_count'] for entry in entries),
            'degraded_links': sum(entry['degraded_links'] for entry in entries),
            'hosts_with_drift': sum(1 for entry in entries
                                    if entry['drift'] or any(gpu['drift'] for gpu in entry['gpus'])),
            'models': models,
        },
        'hosts': entries,
    }


# --- drift within a node class (CVS-style preflight across the nodes of a class) ---------------------------------

def _most_common(values):
    """(value, count, total) of the value more items have than any other; value None where two or more tie."""
    counts = {}
    for value in values:
        counts[value] = counts.get(value, 0) + 1
    ranked = sorted(counts.items(), key=lambda item: (-item[1], str(item[0])))
    tied = len(ranked) > 1 and ranked[0][1] == ranked[1][1]
    return (None if tied else ranked[0][0]), ranked[0][1], len(values)


def _split(counts_of):
    return ', '.join('%s on %d' % (value, count) for value, count in counts_of)


def _differs(what, value, values, unit):
    """The sentence for one value unlike the class's, or None where it is the class's."""
    common, count, total = _most_common(values)
    if value == common:
        return None
    if common is None:
        counts = {}
        for item in values:
            counts[item] = counts.get(item, 0) + 1
        return '%s %s: the class is split (%s %s)' % (what, value, _split(sorted(counts.items())), unit)
    return '%s %s, unlike the class (%s on %d of %d %s)' % (what, value, common, count, total, unit)


def fleet_drift(entries):
    """Each reachable host's 'drift' and each of its GPUs' 'drift': what differs from the most common value in
    its node class (hosts without a class form one class, ''): the ROCm release (the version file's line) and the
    driver version among the class's hosts; per GPU model, the VBIOS part number, the IFWI version, the boot
    firmware and each microcode block among the class's GPUs of that model. A value no host or GPU reports is not
    compared; where two values tie, every host or GPU with one of them is listed, as the class is split."""
    classes = {}
    for entry in entries:
        entry.setdefault('drift', [])
        for gpu in entry['gpus']:
            gpu['drift'] = []
        if entry['reachable'] and entry['gpus'] is not None:
            classes.setdefault(entry.get('node_class') or '', []).append(entry)
    for hosts in classes.values():
        for key, what in (('rocm_build', 'ROCm'), ('driver_version', 'amdgpu driver')):
            values = [host.get(key) or host.get('rocm_version') if key == 'rocm_build' else host.get(key)
                      for host in hosts]
            known = [value for value in values if value]
            for host, value in zip(hosts, values):
                found = _differs(what, value, known, 'hosts') if value and len(known) > 1 else None
                if found:
                    host['drift'].append(found)
        models = {}
        for host in hosts:
            for gpu in host['gpus']:
                if gpu.get('vendor') == 'AMD' and gpu.get('firmware'):
                    models.setdefault(gpu['model'], []).append((host, gpu))
        for gpus in models.values():
            fields = set(['vbios', 'ifwi', 'boot_firmware'])
            for _host, gpu in gpus:
                fields.update(gpu['firmware']['firmware'])
            for field in sorted(fields):
                named = field if field in ('vbios', 'ifwi', 'boot_firmware') else None
                values = [(gpu['firmware'].get(field) if named else gpu['firmware']['firmware'].get(field))
                          for _host, gpu in gpus]
                known = [value for value in values if value]
                for (host, gpu), value in zip(gpus, values):
                    label = {'vbios': 'VBIOS', 'ifwi': 'IFWI', 'boot_firmware': 'boot firmware'}.get(field, field)
                    found = _differs(label, value, known, 'GPUs') if value and len(known) > 1 else None
                    if found:
                        gpu['drift'].append(found)


# --- the record's schema: what the report, its page and its JSON read from each host's record --------------------
# Bounds no real host comes near, so that no value can make the controller allocate without bound: the page
# multiplies a link's speed by its width and formats VRAM, the JSON writes every string, the summary adds the counts.
MAX_GPUS = 1024              # GPU rows (an MI300X node in CPX mode lists 64 agents), gpu_count, gfx_targets
MAX_PROBLEMS = 1024          # problems, host_problems, health.failing of one host
MAX_GPU_PROBLEMS = 32        # problems of one GPU row
MAX_PATH_LINKS = 64          # link.degraded_links: PCI functions between the root port and the GPU
MAX_TEXT = 512               # a name, a version, a model, a PCI address
MAX_SENTENCE = 4096          # a problem, a Slurm reason, a health check's line
MAX_RECORD_CHARS = 1 << 20   # every string of one record together
MAX_VRAM_BYTES = 1 << 60     # an exbibyte
MAX_LINK_WIDTH = 64          # lanes (PCIe stops at x32)
MAX_LINK_SPEED_GTS = 1024.0  # GT/s (PCIe 7.0: 128)
MAX_UNIQUE_ID = (1 << 128) - 1
MAX_FIRMWARE_BLOCKS = firmware.MAX_BLOCKS
INVALID = 'the host record is invalid at %s: %s. Nothing of it is shown: the reply of the probe (gpulab.rocm.node_probe) ' \
          'on this host is garbled or forged; run the report again, and check the host if it stays'


class InvalidRecord(ValueError):
    """One field of a host record that is not what the schema says: where (a path such as gpus[2].link.width) and
    why."""

    def __init__(self, where, why):
        super(InvalidRecord, self).__init__('%s: %s' % (where, why))
        self.where, self.why = where, why


def _shown(value):
    """What a bad value was, in a few characters (its type, and the start of its text)."""
    text = repr(value) if isinstance(value, (str, int, float)) and not isinstance(value, bool) else None
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        text = 'an integer of %d bits' % value.bit_length()
    elif text is not None and len(text) > 40:
        text = text[:37] + '...'
    return '%s %s' % (type(value).__name__, text) if text else type(value).__name__


class _Schema(object):
    """Checks one record field by field and returns a copy of plain values; spends a budget of characters."""

    def __init__(self):
        self.chars = 0

    def text(self, value, where, limit=MAX_TEXT, null=True):
        if value is None and null:
            return None
        if not isinstance(value, str):
            raise InvalidRecord(where, 'a string was expected, not %s' % _shown(value))
        if len(value) > limit:
            raise InvalidRecord(where, '%d characters, at most %d' % (len(value), limit))
        self.chars += len(value)
        if self.chars > MAX_RECORD_CHARS:
            raise InvalidRecord(where, 'the record holds more than %d characters' % MAX_RECORD_CHARS)
        return str(value)

    def sentence(self, value, where, null=False):
        return self.text(value, where, MAX_SENTENCE, null)

    @staticmethod
    def integer(value, where, top, null=True):
        if value is None and null:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise InvalidRecord(where, 'a whole number was expected, not %s' % _shown(value))
        if not 0 <= value <= top:
            raise InvalidRecord(where, '%s is out of range (0 to %d)' % (_shown(value), top))
        return int(value)

    @staticmethod
    def number(value, where, top, null=True):
        if value is None and null:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise InvalidRecord(where, 'a number was expected, not %s' % _shown(value))
        if isinstance(value, int) and value.bit_length() > 64 or not 0 <= value <= top:
            raise InvalidRecord(where, '%s is out of range (0 to %g)' % (_shown(value), top))
        return float(value) if isinstance(value, float) else int(value)

    @staticmethod
    def flag(value, where, null=True):
        if value is None and null:
            return None
        if not isinstance(value, bool):
            raise InvalidRecord(where, 'true or false was expected, not %s' % _shown(value))
        return value

    @staticmethod
    def mapping(value, where, null=False):
        if value is None and null:
            return None
        if not isinstance(value, Mapping):
            raise InvalidRecord(where, 'an object was expected, not %s' % _shown(value))
        return value

    @staticmethod
    def items(value, where, limit, each):
        if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Sequence):
            raise InvalidRecord(where, 'a list was expected, not %s' % _shown(value))
        if len(value) > limit:
            raise InvalidRecord(where, '%d entries, at most %d' % (len(value), limit))
        return [each(item, '%s[%d]' % (where, index)) for index, item in enumerate(value)]


def valid_record(record, name):
    """The host record (host_record's shape, docs/fleet-report.md) checked field by field: a plain copy of the fields
    the report reads, under the inventory name `name`; InvalidRecord names the first field that is not valid."""
    check = _Schema()
    record = check.mapping(record, 'record')
    entry = {'name': name}
    entry['reachable'] = check.flag(record.get('reachable'), 'reachable', null=False)
    entry['node_class'] = check.text(record.get('node_class'), 'node_class') or ''
    for key in ('os', 'kernel', 'rocm_version', 'rocm_build', 'driver_version'):
        entry[key] = check.text(record.get(key), key)
    entry['in_container'] = check.flag(record.get('in_container'), 'in_container')
    entry['gpu_count'] = check.integer(record.get('gpu_count'), 'gpu_count', MAX_GPUS, null=False)
    entry['gfx_targets'] = check.items(record.get('gfx_targets'), 'gfx_targets', MAX_GPUS,
                                       lambda item, where: check.text(item, where, null=False))
    entry['degraded_links'] = check.integer(record.get('degraded_links'), 'degraded_links', MAX_GPUS, null=False)
    for key in ('problems', 'host_problems'):
        entry[key] = check.items(record.get(key), key, MAX_PROBLEMS, check.sentence)
    entry['gpus'] = check.items(record.get('gpus'), 'gpus', MAX_GPUS, lambda gpu, where: _valid_gpu(check, gpu, where))
    slurm = check.mapping(record.get('slurm'), 'slurm', null=True)
    entry['slurm'] = None if slurm is None else {
        'node': check.text(slurm.get('node'), 'slurm.node'),
        'listed': check.flag(slurm.get('listed'), 'slurm.listed', null=False),
        'gres': check.text(slurm.get('gres'), 'slurm.gres', MAX_SENTENCE),
        'gres_used': check.text(slurm.get('gres_used'), 'slurm.gres_used', MAX_SENTENCE),
        'state': check.text(slurm.get('state'), 'slurm.state'),
        'reason': check.text(slurm.get('reason'), 'slurm.reason', MAX_SENTENCE)}
    health = check.mapping(record.get('health'), 'health', null=True)
    entry['health'] = None if health is None else {
        'verdict': check.text(health.get('verdict'), 'health.verdict', null=False),
        'failing': check.items(health.get('failing'), 'health.failing', MAX_PROBLEMS, check.sentence),
        'error': check.text(health.get('error'), 'health.error', MAX_SENTENCE)}
    tuning = check.mapping(record.get('tuning'), 'tuning', null=True)
    entry['tuning'] = None if tuning is None else {
        'line': check.text(tuning.get('line'), 'tuning.line', MAX_SENTENCE, null=False),
        'findings': check.items(tuning.get('findings'), 'tuning.findings', MAX_PROBLEMS, check.sentence)}
    entry['drift'] = []
    return entry


def _valid_gpu(check, gpu, where):
    gpu = check.mapping(gpu, where)
    row = {}
    for key in ('vendor', 'model'):
        row[key] = check.text(gpu.get(key), '%s.%s' % (where, key), null=False)
    for key in ('gfx_target', 'target_id', 'pci_bus', 'driver'):
        row[key] = check.text(gpu.get(key), '%s.%s' % (where, key))
    unique_id = gpu.get('unique_id')
    row['unique_id'] = (check.integer(unique_id, where + '.unique_id', MAX_UNIQUE_ID)
                        if isinstance(unique_id, int) and not isinstance(unique_id, bool)
                        else check.text(unique_id, where + '.unique_id'))
    row['vram_bytes'] = check.integer(gpu.get('vram_bytes'), where + '.vram_bytes', MAX_VRAM_BYTES)
    row['sriov_vf'] = check.flag(gpu.get('sriov_vf'), where + '.sriov_vf')
    row['seen_by'] = check.items(gpu.get('seen_by'), where + '.seen_by', 8,
                                 lambda item, at: check.text(item, at, null=False))
    row['problems'] = check.items(gpu.get('problems'), where + '.problems', MAX_GPU_PROBLEMS, check.sentence)
    link = check.mapping(gpu.get('link'), where + '.link')
    at = where + '.link.'
    row['link'] = {
        'speed_gts': check.number(link.get('speed_gts'), at + 'speed_gts', MAX_LINK_SPEED_GTS),
        'width': check.integer(link.get('width'), at + 'width', MAX_LINK_WIDTH),
        'max_speed_gts': check.number(link.get('max_speed_gts'), at + 'max_speed_gts', MAX_LINK_SPEED_GTS),
        'max_width': check.integer(link.get('max_width'), at + 'max_width', MAX_LINK_WIDTH),
        'degraded': check.flag(link.get('degraded'), at + 'degraded'),
        'degraded_links': check.items(link.get('degraded_links'), at + 'degraded_links', MAX_PATH_LINKS,
                                      lambda item, place: check.text(item, place, null=False)),
        'at': check.text(link.get('at'), at + 'at'),
        'source': check.text(link.get('source'), at + 'source'),
    }
    row['firmware'] = _valid_firmware(check, gpu.get('firmware'), where + '.firmware')
    row['drift'] = []
    return row


def _valid_firmware(check, found, where):
    """A GPU's firmware record (parsers/firmware.py's shape, without the index), or None."""
    found = check.mapping(found, where, null=True)
    if found is None:
        return None
    blocks = check.mapping(found.get('firmware'), where + '.firmware')
    if len(blocks) > MAX_FIRMWARE_BLOCKS:
        raise InvalidRecord(where + '.firmware', '%d blocks, at most %d' % (len(blocks), MAX_FIRMWARE_BLOCKS))
    versions = {}
    for block in sorted(blocks, key=str):
        name = check.text(block, where + '.firmware', null=False)
        versions[name] = check.text(blocks[block], '%s.firmware.%s' % (where, name), null=False)
    return {
        'pci_bdf': check.text(found.get('pci_bdf'), where + '.pci_bdf'),
        'vbios': check.text(found.get('vbios'), where + '.vbios'),
        'ifwi': check.text(found.get('ifwi'), where + '.ifwi'),
        'boot_firmware': check.text(found.get('boot_firmware'), where + '.boot_firmware'),
        'source': check.text(found.get('source'), where + '.source'),
        'firmware': versions,
    }


def invalid_host(name, error):
    """A host whose record failed the schema: listed, with the field and why, and nothing else of it."""
    problem = INVALID % (error.where, error.why)
    entry = unreachable_host(name)
    entry.update(reachable=True, problems=[problem], host_problems=[problem])
    return entry


def report_stats(report):
    """The set_stats artifact: {host: {gpu_count, gfx_targets, rocm_version, problems}} (docs/fleet-report.md)."""
    return dict((entry['name'], {'gpu_count': entry['gpu_count'], 'gfx_targets': entry['gfx_targets'],
                                 'rocm_version': entry['rocm_version'], 'problems': entry['problems']})
                for entry in report['hosts'])
