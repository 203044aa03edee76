# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Slurm's configuration and output formats, for the probe and the rocm_slurm planner: the GPU type table, the
lines of slurm.conf, gres.conf and cgroup.conf, hostlists, and `scontrol show node -o`. Pure; no Ansible here."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

# The Slurm GRES type of an AMD GPU, from its PCI device id (and revision where one id is several products):
# short, lower case, stable across driver and ROCm releases (the tools' marketing names are not). Where a device id
# and revision are shared by several products, the type names the id's family; docs/slurm.md has this table.
GPU_TYPES = {
    '0x6860': 'mi25', '0x6861': 'wx9100', '0x6863': 'vegafe', '0x687f': 'rxvega',
    '0x66a1': 'mi50', '0x66af': 'radeonvii',
    '0x738c': 'mi100', '0x7388': 'mi100', '0x738e': 'mi100', '0x7390': 'mi100',
    '0x740f': 'mi210', '0x7410': 'mi210', '0x7408': 'mi250x',
    # MI250X and MI250 share device id 0x740c and its revision: both are mi250x (rocm_slurm_gpu_types renames it).
    '0x740c': 'mi250x',
    '0x74a0': 'mi300a', '0x74a1': 'mi300x', '0x74a9': 'mi300xhf', '0x74bd': 'mi300xhf', '0x74b5': 'mi300x',
    '0x74a2': 'mi308x', '0x74b6': 'mi308x', '0x74a8': 'mi308xhf', '0x74a5': 'mi325x', '0x74b9': 'mi325x',
    '0x75a0': 'mi350x', '0x75b0': 'mi350x', '0x75a3': 'mi355x', '0x75b3': 'mi355x',
    '0x67df': 'polaris10', '0x6981': 'wx3200',
    '0x73bf': 'navi21', '0x73af': 'rx6900xt', '0x73a5': 'rx6950xt', '0x73a3': 'w6800', '0x73a1': 'v620',
    '0x73ae': 'v620',
    '0x73df': 'navi22', '0x73ff': 'navi23', '0x73ef': 'rx6650xt', '0x73e3': 'w6600',
    '0x744c': 'navi31', '0x7448': 'w7900', '0x744a': 'w7900ds', '0x745e': 'w7800',
    '0x747e': 'navi32', '0x7470': 'w7700', '0x7480': 'navi33', '0x7489': 'w7500',
    '0x7590': 'navi44', '0x7550': 'navi48', '0x7551': 'r9700',
}
# (device id, revision): the product, where amdgpu.ids tells one id's products apart by revision.
GPU_TYPES_BY_REVISION = {
    ('0x73bf', '0xc0'): 'rx6900xt', ('0x73bf', '0xc1'): 'rx6800xt', ('0x73bf', '0xc3'): 'rx6800',
    ('0x73ff', '0xc1'): 'rx6600xt', ('0x73ff', '0xc7'): 'rx6600',
    ('0x744c', '0xc8'): 'rx7900xtx', ('0x744c', '0xcc'): 'rx7900xt', ('0x744c', '0xce'): 'rx7900gre',
}

TYPE_RE = re.compile(r'^[a-z][a-z0-9_]{0,31}\Z')
NODE_NAME_RE = re.compile(r'^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}\Z')
HOST_RE = re.compile(r'^[A-Za-z0-9][A-Za-z0-9.:-]{0,252}\Z')
RENDER_RE = re.compile(r'^/dev/dri/renderD\d{1,4}\Z')
KEY_RE = re.compile(r'^[A-Za-z][A-Za-z0-9]{0,63}\Z')
# A value in slurm.conf: no whitespace, no comment sign, no quote (the role writes no quoted values).
VALUE_RE = re.compile(r'^[^\s#"\']{1,1024}\Z')
DEVICE_ID_RE = re.compile(r'^0x[0-9a-f]{4}\Z')


def gpu_type(device_id, revision=None, gfx_target=None, overrides=None):
    """The GRES type of one GPU: rocm_slurm_gpu_types first (keyed by device id), then the tables, then the gfx
    target, then 'amdgpu'."""
    device_id = (device_id or '').lower()
    for table, key in ((overrides or {}, device_id), (GPU_TYPES_BY_REVISION, (device_id, (revision or '').lower())),
                       (GPU_TYPES, device_id)):
        if key in table:
            return table[key]
    return gfx_target or 'amdgpu'


def cpu_ranges(numbers):
    """[0, 1, 2, 5] -> '0-2,5' (the form of gres.conf's Cores=)."""
    parts = []
    for number in sorted(set(numbers)):
        if parts and parts[-1][1] == number - 1:
            parts[-1][1] = number
        else:
            parts.append([number, number])
    return ','.join(str(a) if a == b else '%d-%d' % (a, b) for a, b in parts)


def expand_hostlist(text):
    """Slurm's hostlist form ('gpu[01-03,07],login1') -> ['gpu01', 'gpu02', 'gpu03', 'gpu07', 'login1'].

    One bracket group per name, as Slurm's NodeName lines write them; ValueError for anything else.
    """
    names = []
    for item in re.findall(r'[^,\[]+(?:\[[^\]]*\][^,\[]*)?', text or ''):
        match = re.match(r'^([^\[\]]*)(?:\[([^\]]*)\])?([^\[\]]*)$', item)
        if not match:
            raise ValueError('not a Slurm hostlist: %r' % text)
        prefix, ranges, suffix = match.groups()
        if ranges is None:
            names.append(item)
            continue
        for part in ranges.split(','):
            first, _sep, last = part.partition('-')
            if not first.isdigit() or (last and not last.isdigit()):
                raise ValueError('not a Slurm hostlist: %r' % text)
            width = len(first)
            for number in range(int(first), int(last or first) + 1):
                names.append('%s%0*d%s' % (prefix, width, number, suffix))
    return names


def split_line(line):
    """One slurm.conf/gres.conf/cgroup.conf line -> (the words before any comment, the comment or '').

    A word is KEY=VALUE; values are not quoted by this role, and a quoted value elsewhere stays one word.
    """
    body, comment = line, ''
    quoted = None
    for index, char in enumerate(line):
        if quoted:
            if char == quoted:
                quoted = None
        elif char in '"\'':
            quoted = char
        elif char == '#':
            body, comment = line[:index], line[index:]
            break
    return re.findall(r'(?:[^\s"\']|"[^"]*"|\'[^\']*\')+', body), comment


def words_to_dict(words):
    """['NodeName=n1', 'Gres=gpu:x:2'] -> ordered [(key, value)]; keys as written (Slurm ignores their case)."""
    pairs = []
    for word in words:
        key, sep, value = word.partition('=')
        pairs.append((key, value if sep else None))
    return pairs


def get(pairs, key):
    for name, value in pairs:
        if name.lower() == key.lower():
            return value
    return None


# The fields of `scontrol show node -o` whose values are free text set by an admin, in the order Slurm prints them,
# after every other field (Slurm 22.05 node_info.c): Reason (with the " [user@time]" Slurm appends), then Comment and
# Extra where set. From the first of them on, a line is never split into fields: a reason such as
# "fan swap State=IDLE" is the reason, never the node's state.
_FREE_TEXT = re.compile(r' (?:Reason|Comment|Extra)=')
_REASON_STAMP = re.compile(r' \[[^\[\]@ ]*@[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\]')


def parse_scontrol_nodes(text):
    """`scontrol show node -o`: one node per line, KEY=VALUE words (a value may hold spaces, as OS= does) ->
    [{key: value}]. Lines that do not start with NodeName= are skipped (errors go to stderr).

    The free text at the end (Reason, Comment, Extra) is read as Slurm prints it and never split: Reason is the text
    after the first " Reason=" up to its " [user@time]" stamp (kept in the value), Comment the rest."""
    nodes = []
    for line in (text or '').splitlines():
        line = line.strip()
        if not line.startswith('NodeName='):
            continue
        free = _FREE_TEXT.search(line)
        head, tail = (line[:free.start()], line[free.start() + 1:]) if free else (line, '')
        fields = {}
        for part in re.split(r' (?=[A-Za-z][A-Za-z0-9_/:]*=)', head):
            key, _sep, value = part.partition('=')
            fields[key] = value
        if tail.startswith('Reason='):
            stamp = _REASON_STAMP.search(tail)
            end = stamp.end() if stamp else len(tail)
            fields['Reason'] = tail[len('Reason='):end]
            tail = tail[end:].lstrip()
        if tail:
            key, _sep, value = tail.partition('=')
            fields[key] = value
        nodes.append(fields)
    return nodes


def parse_node_json(text, name):
    """`sinfo --json` (Slurm 21.08 to 23.02: {"nodes": [...]}) or `scontrol --json show node` (23.02 on) -> the entry
    of node name as parse_scontrol_nodes gives it ({'NodeName', 'State', 'Reason'}, State as 'IDLE+DRAIN'), or None
    where the text is not that JSON or does not list the node. The reason is its own JSON string: no text of it can
    be taken for the state."""
    start = (text or '').find('{')
    try:
        data = json.loads(text[start:]) if start >= 0 else None
    except ValueError:
        return None
    nodes = data.get('nodes') if isinstance(data, dict) else None
    if not isinstance(nodes, list):
        return None
    for entry in nodes:
        if not isinstance(entry, dict) or entry.get('name') != name:
            continue
        state = entry.get('state')
        words = list(state) if isinstance(state, list) else [state] if isinstance(state, str) else []
        flags = entry.get('state_flags')
        words += [flag for flag in flags if isinstance(flag, str)] if isinstance(flags, list) else []
        reason = entry.get('reason')
        return {'NodeName': name, 'State': '+'.join(word.upper() for word in words if word),
                'Reason': reason if isinstance(reason, str) else ''}
    return None


def read_node(call, name, scontrol, sinfo=None):
    """Slurm's view of one node, read now: (entry, how, error). call(argv) -> (rc, stdout, stderr).

    The JSON of `sinfo --json` first (Slurm 22.05 has it: scontrol's --json came in 23.02), where the node's reason
    is a string of its own; else `scontrol show node -o NAME` (parse_scontrol_nodes, reason as the last field)."""
    if sinfo:
        rc, out, _err = call([sinfo, '--json', '-n', name])
        entry = parse_node_json(out, name) if rc == 0 else None
        if entry is not None:
            return entry, 'sinfo --json', None
    rc, out, err = call([scontrol, 'show', 'node', '-o', name])
    found = [entry for entry in parse_scontrol_nodes(out) if entry.get('NodeName') == name]
    if rc != 0 or not found:
        return None, 'scontrol show node -o', 'scontrol show node %s failed (rc %s): %s' % (
            name, rc, ((err or out) or '').strip()[-300:])
    return found[0], 'scontrol show node -o', None


def gres_of(fields):
    """The GRES a node record of scontrol shows, without its socket suffix: 'gpu:mi250x:2(S:0)' -> 'gpu:mi250x:2';
    '(null)' and '' -> ''."""
    gres = fields.get('Gres') or ''
    if gres in ('(null)', 'N/A'):
        return ''
    return ','.join(item for item in re.sub(r'\([^)]*\)', '', gres).split(',') if item)
