# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parse `rocminfo` output (every layout from ROCm 1.x to 7.x) into facts. Pure functions, no AnsibleModule.

parse_rocminfo(text) returns the facts dict documented in the rocminfo_facts module (without `present`);
it raises ParseError when the text is neither a rocminfo listing nor one of its known failure messages.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpulab.rocm.plugins.module_utils.parsers._facts_common import (
    PERMISSION_HINT, ParseError, bdf_from_location, hex_id, strip_ansi, to_int,
)
from ansible_collections.gpulab.rocm.plugins.module_utils.parsers.gfx import parse_isa_name

_NUMBER_RE = re.compile(r'^(\d+)(?:\(0x[0-9a-fA-F]+\))?\s*(KB|MB|GB)?$', re.I)
_UNIT = {'KB': 1024, 'MB': 1024 ** 2, 'GB': 1024 ** 3}
_UUID_RE = re.compile(r'^GPU-([0-9a-fA-F]{16})$')
_ROCK_VERSION_RE = re.compile(r'ROCk module version (\S+) is loaded')

# Failure messages rocminfo prints instead of a listing (fixtures rocminfo/fail-*), most specific first.
# Each maps to (error_kind, what is wrong and what to do).
DIAGNOSES = (
    (re.compile(r'Unable to open /dev/kfd read-write: Permission denied'), 'permission_denied',
     'rocminfo cannot open /dev/kfd: permission denied. The user running it is not in the group that owns '
     '/dev/kfd and /dev/dri/renderD* (render, or video on older systems), or was added to it but has not '
     'logged in again since; ' + PERMISSION_HINT + '.'),
    (re.compile(r'ROCk module is NOT loaded'), 'driver_not_loaded',
     'rocminfo: the amdgpu kernel driver (KFD, "ROCk module") is not loaded, so there is no usable GPU. '
     'On bare metal install the amdgpu driver (amdgpu-dkms, or the distribution kernel\'s amdgpu) and reboot, '
     'then check `dmesg | grep -i amdgpu`; in a container start it with --device=/dev/kfd --device=/dev/dri '
     'on a host whose driver is loaded.'),
    (re.compile(r'Unable to open /dev/kfd read-write: No such file or directory'), 'no_kfd_device',
     'rocminfo: /dev/kfd does not exist: the amdgpu driver did not create it (driver not loaded, or the GPU '
     'was rejected; see `dmesg | grep -i kfd`), or the container was started without --device=/dev/kfd.'),
    (re.compile(r'Unable to open /dev/kfd read-write: Invalid argument'), 'kfd_invalid_argument',
     'rocminfo: opening /dev/kfd failed with "Invalid argument". In a container this usually means /dev/kfd '
     'was passed without the /dev/dri render nodes (pass --device=/dev/dri too), or the host driver does not '
     'support this GPU or ROCm version; check `dmesg | grep -i kfd` on the host.'),
    (re.compile(r'Unable to open /dev/kfd read-write: (.*)'), 'kfd_open_failed',
     'rocminfo cannot open /dev/kfd; check that the amdgpu driver is loaded and that the user is in the render '
     'and video groups (a new login is needed after adding them).'),
    (re.compile(r'HSA_STATUS_ERROR_OUT_OF_RESOURCES'), 'hsa_out_of_resources',
     'rocminfo: the HSA runtime could not initialise (HSA_STATUS_ERROR_OUT_OF_RESOURCES). Typical causes: no '
     'access to /dev/dri/renderD* (' + PERMISSION_HINT + '), a GPU the runtime does not support, or a kernel '
     'driver too old for this ROCm. Run it as root once to tell permissions from support problems.'),
    (re.compile(r'hsa api call failure'), 'hsa_error',
     'rocminfo: an HSA runtime call failed (see `detail`). Check that the amdgpu driver is loaded, that the '
     'user is in the render and video groups (a new login is needed after adding them), and the ROCm version '
     'supports this GPU.'),
)
NO_GPU_AGENT = (
    'rocminfo lists no GPU agent although the runtime started: the amdgpu driver did not initialise any GPU '
    '(check `dmesg | grep -i amdgpu`), or ROCR_VISIBLE_DEVICES/HIP_VISIBLE_DEVICES hide them.'
)


def _number(value):
    """Bytes (or a plain number) from '29877(0x74b5)', '32768(0x8000) KB', '32768KB', '2100'; None when out of
    range."""
    match = _NUMBER_RE.match(value.strip())
    number = to_int(match.group(1)) if match else None
    if number is None:
        return None
    return to_int(number * _UNIT.get((match.group(2) or '').upper(), 1))


def _split(line):
    """'  Key:   value' -> ('Key', 'value'); keys end at the first colon ('Packet Processor uCode:: 177')."""
    key, sep, value = line.partition(':')
    if not sep:
        return line.strip(), None
    return key.strip(), value.lstrip(':').strip()


def diagnose(text):
    """(error_kind, message, detail) for a known rocminfo failure message in text, else None."""
    for pattern, kind, message in DIAGNOSES:
        match = pattern.search(text)
        if match:
            detail = [line.strip() for line in text.splitlines()
                      if line.strip() and not line.startswith(('=', ' '))][:6]
            return kind, message, detail
    return None


def _new_agent(number):
    return {
        'agent': number, 'name': None, 'marketing_name': None, 'vendor': None, 'device_type': None,
        'uuid': None, 'unique_id': None, 'node': None, 'chip_id': None, 'pci_device_id': None, 'asic_revision': None,
        'bdfid': None, 'pci_bus': None, 'compute_units': None, 'simds_per_cu': None, 'shader_engines': None,
        'wavefront_size': None, 'max_clock_mhz': None, 'max_waves_per_cu': None, 'workgroup_max_size': None,
        'cacheline_size': None, 'internal_node_id': None, 'features': None, 'profile': None,
        'memory_properties': None, 'cache_bytes': {}, 'pools': [], 'isas': [], 'gfx_target': None,
        'target_id': None, 'vram_bytes': None,
    }


# rocminfo key (any era) -> (agent field, converter)
_AGENT_FIELDS = {
    'Name': ('name', str),
    'Marketing Name': ('marketing_name', str),
    'Vendor Name': ('vendor', str),
    'Device Type': ('device_type', str),
    'Uuid': ('uuid', str),
    'Node': ('node', to_int),
    'Chip ID': ('chip_id', to_int),
    'ASIC Revision': ('asic_revision', to_int),
    'BDFID': ('bdfid', to_int),
    'Compute Unit': ('compute_units', to_int),
    'SIMDs per CU': ('simds_per_cu', to_int),
    'Shader Engines': ('shader_engines', to_int),
    'Wavefront Size': ('wavefront_size', to_int),
    'Max Clock Freq. (MHz)': ('max_clock_mhz', to_int),
    'Max Clock Frequency (MHz)': ('max_clock_mhz', to_int),  # ROCm 1.x
    'Max Waves Per CU': ('max_waves_per_cu', to_int),
    'Waves Per CU': ('max_waves_per_cu', to_int),  # ROCm 1.x
    'Workgroup Max Size': ('workgroup_max_size', to_int),
    'Cacheline Size': ('cacheline_size', to_int),
    'Internal Node ID': ('internal_node_id', to_int),
    'Features': ('features', str),
    'Profile': ('profile', str),
    'Memory Properties': ('memory_properties', str),
}
_POOL_FIELDS = {'Allocatable': 'allocatable', 'Accessible by all': 'accessible_by_all',
                'Acessible by all': 'accessible_by_all'}  # sic: ROCm 1.x typo
_POOL_SIZES = {'Size': 'size_bytes', 'Alloc Granule': 'alloc_granule_bytes',
               'Alloc Recommended Granule': 'alloc_recommended_granule_bytes',
               'Alloc Alignment': 'alloc_alignment_bytes'}


def _parse_agent_lines(number, lines):
    """One agent block (the lines between 'Agent N' and the next separator) -> (agent dict, whether it is whole).

    rocminfo prints "ISA Info:" last in every agent, and ends each ISA with "FBarrier Max Size"; an agent is whole
    when it got that far (a GPU agent with at least one ISA).
    """
    agent = _new_agent(number)
    section = None     # the indent-2 key with an empty value that opened a sub-block
    item = None        # the pool or ISA dict being filled
    isa_info = False   # "ISA Info:" was reached
    isa_open = False   # an "ISA n" block has not reached its last line yet
    for line in lines:
        stripped = line.strip()
        if not stripped:
            continue
        indent = len(line) - len(line.lstrip(' '))
        if indent <= 2:
            item = None
            key, value = _split(line)
            if value is None:
                section = None
                continue
            if value == '':
                section = key
                isa_info = isa_info or key == 'ISA Info'
                if key in ('Memory Properties', 'Features'):
                    agent[_AGENT_FIELDS[key][0]] = None
                continue
            section = None
            field = _AGENT_FIELDS.get(key)
            if field:
                converted = field[1](value)
                agent[field[0]] = converted if converted != '' else None
        elif indent <= 4:
            key, value = _split(line)
            if section == 'Cache Info' and value is not None:
                size = _number(value)
                if size is not None:
                    agent['cache_bytes'][key] = size
            elif section == 'Pool Info' and key.startswith('Pool'):
                item = {'pool': to_int(key[4:]), 'segment': None, 'flags': [], 'size_bytes': None,
                        'allocatable': None, 'accessible_by_all': None}
                agent['pools'].append(item)
            elif section == 'ISA Info' and key.startswith('ISA'):
                item = {'isa': to_int(key[3:])}
                agent['isas'].append(item)
                isa_open = True
            else:
                item = None
        elif item is not None and indent <= 6:
            key, value = _split(line)
            if 'isa' in item and key == 'FBarrier Max Size' and value:
                isa_open = False
            if value is None:
                continue
            if 'pool' in item:
                _pool_field(item, key, value)
            elif key == 'Name':
                item.update(parse_isa_name(value) or {})
    whole = isa_info and not isa_open and (agent['device_type'] != 'GPU' or bool(agent['isas']))
    return agent, whole


def _pool_field(pool, key, value):
    if key == 'Segment':
        segment, _sep, flags = value.partition(';')
        pool['segment'] = segment.strip()
        flags = flags.strip()
        if flags.startswith('FLAGS:'):
            flags = flags[len('FLAGS:'):]
        pool['flags'] = [flag.strip() for flag in flags.split(',') if flag.strip()]
    elif key in _POOL_SIZES:
        pool[_POOL_SIZES[key]] = _number(value)
    elif key in _POOL_FIELDS:
        pool[_POOL_FIELDS[key]] = value.upper() == 'TRUE'


def _finish_agent(agent):
    if agent['device_type'] is None or agent['name'] is None:
        missing = 'Name' if agent['name'] is None else 'Device Type'
        raise ParseError('rocminfo output is cut short: agent {0} has no {1} line. Save the whole output of '
                         '`rocminfo` and try again.'.format(agent['agent'], missing))
    for key in ('uuid', 'marketing_name', 'features', 'memory_properties'):
        if agent[key] in ('', 'None', None):  # CPU agents print "Features: None"
            agent[key] = None
    # 'GPU-8d1457e2c20f59d2' carries the unique id rocm-smi prints as 0x8d1457e2c20f59d2; 'GPU-XX' has none.
    uuid = _UUID_RE.match(agent['uuid'] or '')
    agent['unique_id'] = '0x' + uuid.group(1).lower() if uuid else None
    if agent['device_type'] == 'GPU':
        agent['pci_device_id'] = hex_id(agent['chip_id']) if agent['chip_id'] else None
        agent['pci_bus'] = bdf_from_location(agent['bdfid'])
        isas = [isa for isa in agent['isas'] if isa.get('processor')]
        first = next((isa for isa in isas if not isa['generic']), None)
        # The agent Name holds the target; ISA 1 adds the features. Newer runtimes add generic ISAs after it.
        if agent['name'].startswith('gfx'):
            agent['gfx_target'] = agent['name']
        elif first:
            agent['gfx_target'] = first['processor']
        agent['target_id'] = first['target_id'] if first else agent['gfx_target']
        coarse = [pool['size_bytes'] for pool in agent['pools']
                  if pool['segment'] == 'GLOBAL' and 'COARSE GRAINED' in pool['flags'] and pool['size_bytes']]
        agent['vram_bytes'] = coarse[0] if coarse else None
    return agent


def _system_attributes(lines):
    attrs = {}
    for line in lines:
        key, value = _split(line)
        if value:
            attrs[key] = value
    return attrs


def parse_rocminfo(text):
    """Facts from rocminfo output: runtime_version, agents, gpus, gpu_count, gfx_targets, error, ...

    Known failure messages give gpu_count 0 with error/error_kind set; unknown text raises ParseError.
    """
    if not isinstance(text, str):
        raise ParseError('rocminfo output must be text, got {0}'.format(type(text).__name__))
    text = strip_ansi(text).replace('\r\n', '\n')
    facts = {
        'runtime_version': None, 'runtime_ext_version': None, 'rock_loaded': None, 'rock_version': None,
        'wsl': 'WSL environment detected' in text, 'complete': False, 'system': {},
        'agents': [], 'gpus': [], 'gpu_count': 0, 'cpu_count': 0, 'gfx_targets': [], 'target_ids': [],
        'error': None, 'error_kind': None, 'detail': [],
    }
    rock = _ROCK_VERSION_RE.search(text)
    if rock:
        facts['rock_loaded'], facts['rock_version'] = True, rock.group(1)
    elif 'ROCk module is NOT loaded' in text:
        facts['rock_loaded'] = False
    elif re.search(r'^ROCk module is loaded', text, re.M):
        facts['rock_loaded'] = True

    start = text.find('HSA System Attributes')
    agents_at = text.find('HSA Agents')
    outputs = max(len(re.findall(r'^HSA System Attributes[ \t]*$', text, re.M)),
                  len(re.findall(r'^HSA Agents[ \t]*$', text, re.M)))
    if outputs > 1:
        raise ParseError('this holds {0} rocminfo outputs, one after the other (the "HSA System Attributes" and '
                         '"HSA Agents" headers repeat): their GPUs would be counted twice. Give the output of one '
                         '`rocminfo` run.'.format(outputs))
    if start < 0 or agents_at < 0:
        found = diagnose(text)
        if found:
            facts['error_kind'], facts['error'], facts['detail'] = found
            return facts
        if start >= 0:
            raise ParseError('rocminfo output is cut short: it has the "HSA System Attributes" header but no '
                             '"HSA Agents" section. Save the whole output of `rocminfo` and try again.')
        raise ParseError('this is not rocminfo output: no "HSA System Attributes" header and no known error '
                         'message. Give the output of `rocminfo` (or `rocminfo --support`).')

    system = _system_attributes(
        line for line in text[start:agents_at].splitlines()[1:] if line and not line.startswith('='))
    facts['system'] = system
    facts['runtime_version'] = system.get('Runtime Version')
    facts['runtime_ext_version'] = system.get('Runtime Ext Version')

    body = text[agents_at:]
    facts['complete'] = '*** Done ***' in body
    blocks = re.split(r'^\*{5,}\s*\n(Agent \d+)\s*\n\*{5,}[ \t]*$', body, flags=re.M)
    # blocks: [preamble, 'Agent 1', lines, 'Agent 2', lines, ...]
    whole = True
    titles, texts = blocks[1::2], blocks[2::2]
    for title, block, last in zip(titles, texts, [False] * (len(titles) - 1) + [True]):
        number = to_int(title[6:])
        if number != len(facts['agents']) + 1:
            raise ParseError('rocminfo output has "{0}" where "Agent {1}" should come: rocminfo numbers its agents '
                             '1, 2, 3, ..., so this is several outputs joined, or a damaged one. Give the output of '
                             'one `rocminfo` run.'.format(title[:40], len(facts['agents']) + 1))
        if '*** Done ***' in block and not last:
            raise ParseError('rocminfo output goes on with agent {0} after "*** Done ***": several outputs joined, '
                             'or a damaged one. Give the output of one `rocminfo` run.'.format(number + 1))
        agent, whole = _parse_agent_lines(number, block.split('*** Done ***', 1)[0].splitlines())
        facts['agents'].append(_finish_agent(agent))
    if facts['agents'] and not facts['complete'] and not whole:
        raise ParseError('rocminfo output is cut short inside agent {0} (it ends before that agent\'s "ISA Info" '
                         'is complete, and there is no "*** Done ***"). Save the whole output of `rocminfo` and '
                         'try again.'.format(len(facts['agents'])))

    if not facts['agents']:
        raise ParseError('rocminfo output is cut short: the "HSA Agents" section lists no agent. Save the whole '
                         'output of `rocminfo` and try again.')
    facts['gpus'] = [agent for agent in facts['agents'] if agent['device_type'] == 'GPU']
    facts['gpu_count'] = len(facts['gpus'])
    facts['cpu_count'] = sum(1 for agent in facts['agents'] if agent['device_type'] == 'CPU')
    facts['gfx_targets'] = sorted(set(gpu['gfx_target'] for gpu in facts['gpus'] if gpu['gfx_target']))
    facts['target_ids'] = sorted(set(gpu['target_id'] for gpu in facts['gpus'] if gpu['target_id']))
    if not facts['gpus']:
        facts['error_kind'], facts['error'] = 'no_gpu_agent', NO_GPU_AGENT
    return facts
