# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Slurm files rocm_slurm writes: slurm.conf rendered whole for a lab without Slurm or edited in place (the lines
the role owns), gres.conf's block of this node's GPUs, cgroup.conf and slurmd's defaults. Every value was checked by
the phases (plan_slurm_node.py, plan_slurm.py) before it reaches these renderers. Pure."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpulab.rocm.plugins.module_utils.parsers import slurm_conf as sc
from ansible_collections.gpulab.rocm.plugins.module_utils.planning.plan_common import PlanError

HEADER = '# Managed by gpulab.rocm (role rocm_slurm). Local changes are overwritten.\n'
BLOCK_BEGIN = '# BEGIN gpulab.rocm GPUs (role rocm_slurm)'
BLOCK_END = '# END gpulab.rocm GPUs (role rocm_slurm)'
# The health check (role rocm_health installs it on the compute nodes; docs/health.md).
HEALTH_PROGRAM = '/usr/sbin/gpulab-slurm-health'
OWNED_LINE = '  # gpulab.rocm (role rocm_slurm)'


def flag(value):
    """A boolean of the wanted state (templated values can arrive as text on older Ansible)."""
    if isinstance(value, str):
        return value.strip().lower() in ('1', 'true', 'yes', 'on')
    return bool(value)


def is_port(value, zero=False):
    if isinstance(value, bool):
        return False
    try:
        number = int(value)
    except (TypeError, ValueError):
        return False
    return (zero and number == 0) or 1 <= number <= 65535


def health_lines(wanted):
    """[(key, value)] of the health check's slurm.conf lines; [] where rocm_slurm_health_check is false."""
    if not flag(wanted.get('health_check')):
        return []
    return [('HealthCheckProgram', HEALTH_PROGRAM), ('HealthCheckInterval', str(int(wanted['health_interval']))),
            ('HealthCheckNodeState', str(wanted['health_node_state']).upper())]


def owned_lines(wanted):
    """[(key, value)] of the slurm.conf lines the role owns beyond the cluster's: the health check's, and
    RebootProgram where rocm_slurm_reboot_program is set (scontrol reboot runs it; the maintenance's driver reboot
    needs it)."""
    program = str(wanted.get('reboot_program') or '')
    return health_lines(wanted) + ([('RebootProgram', program)] if program else [])


def text_value(value):
    if isinstance(value, bool):
        return 'YES' if value else 'NO'
    return str(value)


# --- slurm.conf ---------------------------------------------------------------------------------------------------

# Keys the role writes itself in a whole slurm.conf (rocm_slurm_conf_extra may not set them).
OWN_KEYS = ('clustername', 'slurmctldhost', 'slurmctldport', 'slurmdport', 'slurmuser', 'authtype', 'gres',
            'grestypes', 'nodename', 'partitionname', 'proctracktype', 'taskplugin', 'statesavelocation',
            'slurmdspooldir', 'slurmctldpidfile', 'slurmdpidfile', 'slurmctldlogfile', 'slurmdlogfile',
            'selecttype', 'selecttypeparameters', 'returntoservice', 'healthcheckprogram', 'healthcheckinterval',
            'healthchecknodestate', 'rebootprogram')


def node_line(record, slurmd_port):
    """One NodeName line from a node's record (every value checked in phase slurm_node)."""
    words = ['NodeName=%s' % record['name']]
    if record.get('addr'):
        words.append('NodeAddr=%s' % record['addr'])
    if record.get('port') and int(record['port']) != int(slurmd_port):
        words.append('Port=%d' % int(record['port']))
    shape = record.get('shape') or {}
    if shape.get('cpus'):
        words.append('CPUs=%d' % shape['cpus'])
        if shape.get('sockets'):
            words += ['Sockets=%d' % shape['sockets'], 'CoresPerSocket=%d' % shape['cores_per_socket'],
                      'ThreadsPerCore=%d' % shape['threads_per_core']]
    if record.get('gres'):
        words.append('Gres=%s' % record['gres'])
    words.append('State=UNKNOWN')
    return ' '.join(words)


def render_slurm_conf(wanted, ctl, records, current):
    """The whole slurm.conf of a cluster the role installed. NodeName lines of nodes this run did not read stay as
    they are in the current file (a run limited to some hosts drops nobody)."""
    enforce = flag(wanted.get('cgroup_enforce', True))
    host = ctl.get('hostname') or ctl.get('name')
    if not sc.NODE_NAME_RE.match(str(host or '')):
        raise PlanError('rocm_slurm: the controller\'s host name %r is not one Slurm accepts. Nothing was changed.'
                        % (host,))
    lines = [HEADER.rstrip('\n'),
             '# The GPUs are Slurm GRES from each node\'s facts (docs/slurm.md).',
             'ClusterName=%s' % wanted['cluster_name'],
             'SlurmctldHost=%s%s' % (host, '(%s)' % ctl['addr'] if ctl.get('addr') else ''),
             'SlurmctldPort=%d' % int(wanted['slurmctld_port']),
             'SlurmdPort=%d' % int(wanted['slurmd_port']),
             'SlurmUser=slurm',
             'AuthType=auth/munge',
             'StateSaveLocation=/var/lib/slurm/slurmctld',
             'SlurmdSpoolDir=/var/lib/slurm/slurmd',
             'SlurmctldPidFile=/run/slurmctld.pid',
             'SlurmdPidFile=/run/slurmd.pid',
             'SlurmctldLogFile=/var/log/slurm/slurmctld.log',
             'SlurmdLogFile=/var/log/slurm/slurmd.log',
             'ProctrackType=%s' % ('proctrack/cgroup' if enforce else 'proctrack/linuxproc'),
             'TaskPlugin=%s' % ('task/cgroup,task/affinity' if enforce else 'task/affinity'),
             'SelectType=select/cons_tres',
             'SelectTypeParameters=CR_Core',
             'ReturnToService=2',
             'GresTypes=gpu']
    lines += ['%s=%s' % pair for pair in owned_lines(wanted)]
    lines += ['%s=%s' % (key, text_value(value)) for key, value in sorted((wanted.get('conf_extra') or {}).items())]
    named = set(record['name'] for record in records)
    kept = []
    for line in current.splitlines():
        words, _comment = sc.split_line(line)
        pairs = sc.words_to_dict(words)
        if pairs and pairs[0][0].lower() == 'nodename' and pairs[0][1]:
            try:
                covered = sc.expand_hostlist(pairs[0][1])
            except ValueError:
                covered = [pairs[0][1]]
            if not set(covered) & named:
                kept.append(line.strip())
    lines += sorted(kept + [node_line(record, wanted['slurmd_port']) for record in records])
    lines.append('PartitionName=%s Nodes=ALL Default=YES MaxTime=INFINITE State=UP' % wanted['partition'])
    return '\n'.join(lines) + '\n'


def edit_slurm_conf(text, records, health=None):
    """An existing slurm.conf with the lines the role owns in step with the facts: GresTypes holds gpu (other
    types stay), and each read node's NodeName line has its GPUs in Gres= (other GRES stay). Every other line and
    word is kept as it is. PlanError when a node has no line of its own."""
    lines = text.splitlines()
    by_name = dict((record['name'], record) for record in records)
    seen = set()
    grestypes_at = None
    first_node_at = None
    for index, line in enumerate(lines):
        words, comment = sc.split_line(line)
        pairs = sc.words_to_dict(words)
        if not pairs:
            continue
        key = pairs[0][0].lower()
        if key == 'grestypes':
            grestypes_at = index
        elif key == 'nodename' and pairs[0][1]:
            if first_node_at is None:
                first_node_at = index
            try:
                covered = sc.expand_hostlist(pairs[0][1])
            except ValueError:
                continue
            mine = [name for name in covered if name in by_name]
            if not mine:
                continue
            values = set(by_name[name]['gres'] for name in mine)
            if len(covered) > 1 and (len(mine) != len(covered) or len(values) > 1):
                raise PlanError('rocm_slurm: slurm.conf line %d (NodeName=%s) covers nodes whose GPUs differ (or '
                                'nodes this run did not read): give %s a NodeName line of its own. Nothing was '
                                'changed.' % (index + 1, pairs[0][1], ', '.join(sorted(mine))))
            seen.update(mine)
            lines[index] = _with_gres(words, comment, values.pop())
    missing = sorted(set(by_name) - seen)
    if missing:
        raise PlanError('rocm_slurm: slurm.conf has no NodeName line for %s; with rocm_slurm_install false the role '
                        'only keeps Gres= in step on the lab\'s own node lines. Add them, or set rocm_slurm_node_name '
                        'to the names slurm.conf uses. Nothing was changed.' % ', '.join(missing))
    if grestypes_at is not None:
        words, comment = sc.split_line(lines[grestypes_at])
        types = [item for item in (sc.words_to_dict(words)[0][1] or '').split(',') if item]
        if 'gpu' not in [item.lower() for item in types]:
            lines[grestypes_at] = ' '.join(['GresTypes=%s' % ','.join(types + ['gpu'])] + words[1:]) + (
                ' ' + comment if comment else '')
    else:
        at = first_node_at if first_node_at is not None else len(lines)
        lines.insert(at, 'GresTypes=gpu' + OWNED_LINE)
    return '\n'.join(_with_health(lines, health or [])) + '\n'


def _with_health(lines, health):
    """The health check's keys set (owned lines, before the first NodeName line where new); with health [] the
    owned ones removed, the lab's own kept."""
    wanted = dict((key.lower(), (key, value)) for key, value in health)
    out, seen = [], set()
    for line in lines:
        words, comment = sc.split_line(line)
        pairs = sc.words_to_dict(words)
        key = pairs[0][0].lower() if pairs else ''
        if key in ('healthcheckprogram', 'healthcheckinterval', 'healthchecknodestate', 'rebootprogram'):
            if key in wanted:
                seen.add(key)
                name, value = wanted[key]
                line = line if pairs[0][1] == value else '%s=%s%s' % (name, value, OWNED_LINE)
            elif comment.strip() == OWNED_LINE.strip():
                continue
        out.append(line)
    new = ['%s=%s%s' % (name, value, OWNED_LINE) for key, (name, value) in sorted(wanted.items()) if key not in seen]
    if new:
        at = next((index for index, line in enumerate(out)
                   if (sc.words_to_dict(sc.split_line(line)[0]) or [('', '')])[0][0].lower() == 'nodename'), len(out))
        out[at:at] = new
    return out


def _with_gres(words, comment, gpu_gres):
    """A NodeName line's words with the gpu items of Gres= replaced by gpu_gres (other items kept)."""
    out, done = [], False
    for word in words:
        key, sep, value = word.partition('=')
        if sep and key.lower() == 'gres':
            others = [item for item in value.split(',') if item and item.split(':')[0].lower() != 'gpu']
            items = others + ([gpu_gres] if gpu_gres else [])
            if items:
                out.append('%s=%s' % (key, ','.join(items)))
            done = True
        else:
            out.append(word)
    if not done and gpu_gres:
        out.append('Gres=%s' % gpu_gres)
    return ' '.join(out) + (' ' + comment if comment else '')


def gres_changes(old, new):
    """The names of the nodes whose gpu GRES differ between two slurm.conf texts, sorted, when nothing else
    differs; None when anything else does (GresTypes, another key, a node definition, a comment), or there was no
    old text."""
    if not old:
        return None
    old_lines, old_gpus = _split_gpu_gres(old)
    new_lines, new_gpus = _split_gpu_gres(new)
    if old_lines != new_lines:
        return None
    changed = sorted(name for name in set(old_gpus) | set(new_gpus) if old_gpus.get(name) != new_gpus.get(name))
    return changed or None


def gpu_count(text, name):
    """How many gpu GRES a slurm.conf text gives node name (the counts of its gpu items: gpu:mi300x:64, gpu:2)."""
    total = 0
    for item in _split_gpu_gres(text or '')[1].get(name) or []:
        count = item.split(':')[-1]
        total += int(count) if count.isdigit() else 1
    return total


def _split_gpu_gres(text):
    """(the lines of a slurm.conf without the gpu items of their Gres=, {node name: [its gpu items]})."""
    lines, gpus = [], {}
    for line in text.splitlines():
        words, _comment = sc.split_line(line)
        pairs = sc.words_to_dict(words)
        if not pairs:
            continue
        if pairs[0][0].lower() == 'nodename':
            items = sorted(item for item in (sc.get(pairs, 'Gres') or '').split(',')
                           if item.split(':')[0].lower() == 'gpu')
            try:
                names = sc.expand_hostlist(pairs[0][1])
            except ValueError:
                names = [pairs[0][1]]
            gpus.update((name, items) for name in names)
            words = _with_gres(words, '', '').split()
        lines.append(' '.join(words))
    return lines, gpus


# --- gres.conf, cgroup.conf, /etc/default/slurmd ------------------------------------------------------------------

def gres_block(record):
    """The lines of the role's block in gres.conf, [] for a node without GPUs."""
    gpus = record.get('gpus') or []
    if not gpus:
        return []
    if record.get('autodetect'):
        return ['# slurmd has gpu_rsmi.so: Slurm finds the GPUs, their device files and cores itself.',
                'AutoDetect=rsmi']
    # Flags=amd_gpu_env: ROCR_VISIBLE_DEVICES alone (gres.conf(5): ROCm reads ROCR_ then CUDA_VISIBLE_DEVICES, so
    # both would mask twice).
    lines = ['AutoDetect=off']
    for gpu in gpus:
        words = ['Name=gpu', 'Type=%s' % gpu['type'], 'File=%s' % gpu['file'], 'Flags=amd_gpu_env']
        if gpu.get('cores'):
            words.append('Cores=%s' % gpu['cores'])
        lines.append(' '.join(words) + '  # %s' % gpu['bdf'])
    return lines


def edit_gres_conf(text, record, path):
    """(new gres.conf text or None for no file, True when the file is to be removed). The role owns its marked
    block; other lines stay. A Name=gpu line outside the block is refused (two sources for one GPU)."""
    outside, inside, state = [], [], 'out'
    for number, line in enumerate((text or '').splitlines(), 1):
        if line.strip() == BLOCK_BEGIN and state == 'out':
            state = 'in'
        elif line.strip() == BLOCK_END and state == 'in':
            state = 'done'
        elif state == 'in':
            inside.append(line)
        else:
            words, _comment = sc.split_line(line)
            pairs = sc.words_to_dict(words)
            if (sc.get(pairs, 'Name') or '').lower() == 'gpu' or (sc.get(pairs, 'AutoDetect') is not None):
                raise PlanError('rocm_slurm: %s line %d configures GPUs outside the block the role owns (%s): remove '
                                'it, the role writes every GPU of the node. Nothing was changed.'
                                % (path, number, line.strip()))
            outside.append(line)
    if state == 'in':
        raise PlanError('rocm_slurm: %s has "%s" without its end line: fix it by hand. Nothing was changed.'
                        % (path, BLOCK_BEGIN))
    block = gres_block(record)
    while outside and not outside[-1].strip():
        outside.pop()
    if not block:
        if text is None:
            return None, False
        if not [line for line in outside if line.strip()] and state == 'done':
            return None, True
        return '\n'.join(outside) + '\n' if outside else '', False
    lines = outside + ([''] if outside else []) + [BLOCK_BEGIN] + block + [BLOCK_END]
    return '\n'.join(lines) + '\n', False


def render_cgroup_conf():
    return (HEADER + '# Jobs see only the GPUs (device files) Slurm gave them, where task/cgroup runs.\n'
            'CgroupPlugin=autodetect\nConstrainDevices=yes\n')


def edit_cgroup_conf(text):
    """cgroup.conf with ConstrainDevices=yes (the one line the role owns there); other lines stay."""
    lines = (text or '').splitlines()
    for index, line in enumerate(lines):
        words, comment = sc.split_line(line)
        pairs = sc.words_to_dict(words)
        if pairs and pairs[0][0].lower() == 'constraindevices':
            if (pairs[0][1] or '').lower() == 'yes':
                return text
            lines[index] = 'ConstrainDevices=yes' + OWNED_LINE
            return '\n'.join(lines) + '\n'
    return '\n'.join(lines + ['ConstrainDevices=yes' + OWNED_LINE]) + '\n'


def edit_slurmd_defaults(text, name, hostname):
    """/etc/default/slurmd with SLURMD_OPTIONS naming the node (-N) where its Slurm name is not its host name;
    None when nothing is to be written."""
    options = '-N %s' % name if name and name != hostname else ''
    line = 'SLURMD_OPTIONS="%s"' % options
    if text is None:
        return (line + '\n') if options else None
    lines = text.splitlines()
    for index, current in enumerate(lines):
        if re.match(r'^\s*SLURMD_OPTIONS=', current):
            if current.strip() == line:
                return text
            lines[index] = line
            return '\n'.join(lines) + '\n'
    if not options:
        return text
    return '\n'.join(lines + [line]) + '\n'
