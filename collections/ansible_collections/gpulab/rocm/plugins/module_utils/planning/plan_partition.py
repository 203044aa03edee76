# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GPU partition profile as declared state (issue 41): rocm_partition_compute (SPX, DPX, TPX, QPX, CPX) and
rocm_partition_memory (NPS1, NPS2, NPS4, NPS8), empty for leave as is. Pure: plan() checks the wanted pair against
the GPU's documented pairs (gpu_partitions.MODELS) and refuses an unsupported one before any change, and shows the
change: current -> wanted, the GPU count before and after, what must stop first, and the commands in order (the
memory partition first, with the driver reload it needs, then the compute partition, unless the pair between them
is one the GPU does not support: SPX+NPS1 -> CPX+NPS4 sets CPX first, as AMD's guide does). A change goes through the
maintenance path: rocm_maintenance drains a Slurm node for any phase that changes the host (docs/health.md)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpulab.rocm.plugins.module_utils.planning import gpu_partitions as gp
from ansible_collections.gpulab.rocm.plugins.module_utils.planning.plan_common import Plan, PlanError
from ansible_collections.gpulab.rocm.plugins.module_utils.planning.plan_maintenance import slurm_node_name

PHASE = {
    'name': 'partition',
    'role': 'rocm_partition',
    'changes_host': True,
    # slurm: whether slurmd runs here (a change there goes through upgrade.yml's drain).
    'sections': ('os', 'gpus', 'tools', 'slurm'),
    # Plus 'gpu_holders' and 'paths' (the holders' unit files and init scripts) where a profile is set
    # (plan_partition.probe_needs).
    'keys': {
        'wanted': 'The profile asked for: C(compute) and C(memory), each null where left as it is.',
        'current': 'Per physical GPU: C(bdf), C(model), C(compute), C(memory) as amd-smi reports them now.',
        'gpus_before': 'The logical GPUs ROCm shows now (KFD GPU nodes).',
        'gpus_after': 'The logical GPUs ROCm shows once the profile is applied.',
        'stop': ('The services that hold the GPUs and are stopped before the change, started again after it (those '
                 'of the node: a unit file or an init script).'),
        'memory': 'The memory partition to set (C(amd-smi set --memory-partition)), or null for none.',
        'reload': 'The driver reload the memory partition change needs, one command line per step, in order.',
        'compute': 'The compute partition to set (C(amd-smi set --compute-partition)), or null for none.',
        'order': 'The steps in order, V(memory) and V(compute): memory first where the pair between is supported.',
        'after_failure': 'What a failed step leaves and what the next run does, in words (the role\'s failure message).',
        'amd_smi': 'The amd-smi that sets the partitions: where the probe found it, else V(amd-smi) on the PATH.',
        'slurm_node': ('The Slurm node a maintenance run drained for the change (its drain reason then names a step '
                       'that failed), or null.'),
        'holders': ('The processes that hold a GPU device open (C(pid), C(comm), C(uid), C(devices)), read for a '
                    'change; once the role stopped its units (C(stopped) in its wanted state) any of them refuses '
                    'the change.'),
    },
}

# What holds the GPUs and must stop before a partition change (amd-smi refuses a busy GPU: ROCm/gpu-operator#421):
# AMD's device-metrics-exporter (plan_metrics.AMD_EXPORTER_SERVICE) and our metrics writer's timer and service.
HOLDERS = ('amd-metrics-exporter.service', 'gpulab-metrics.timer', 'gpulab-metrics.service')
# Where a node has them: a systemd unit file, or an init script (a node without systemd); only those are stopped.
UNIT_DIRS = ('/etc/systemd/system', '/run/systemd/system', '/usr/lib/systemd/system', '/lib/systemd/system')
INIT_DIR = '/etc/init.d'


def holder_paths():
    """{service name: [paths that show the node has it]} (the name as ansible.builtin.service takes it under systemd
    and sysvinit alike: a .service unit without its suffix)."""
    paths = {}
    for unit in HOLDERS:
        name = unit[:-len('.service')] if unit.endswith('.service') else unit
        paths[name] = ['%s/%s' % (folder, unit) for folder in UNIT_DIRS] + (
            ['%s/%s' % (INIT_DIR, name)] if unit.endswith('.service') else [])
    return paths


def holders_present(node):
    """The holders' service names the node has (a unit file or an init script, a link included: a masked unit)."""
    described = node.get('paths') or {}
    return [name for name, paths in holder_paths().items()
            if any((described.get(path) or {}).get('exists') for path in paths)]


# AMD's reload after a memory partition change (amd-smi's own message since the CLI stopped reloading the driver
# itself, ROCm/rocm-systems#3751; amd-smi 6.3/6.4 reloaded it itself, ROCm/ROCm#4439): harmless to repeat.
RELOAD = (['modprobe', '-r', 'amdgpu'], ['modprobe', 'amdgpu'])


def check(wanted):
    """The variables' problems (their types are role_spec's)."""
    problems = []
    compute = wanted.get('compute') or ''
    memory = wanted.get('memory') or ''
    if compute and compute not in gp.COMPUTE_MODES:
        problems.append('rocm_partition_compute must be one of %s (or empty: leave as is), got %r'
                        % (', '.join(gp.COMPUTE_MODES), compute))
    if memory and memory not in gp.MEMORY_MODES:
        problems.append('rocm_partition_memory must be one of %s (or empty: leave as is), got %r'
                        % (', '.join(gp.MEMORY_MODES), memory))
    return problems


def slurmd_runs(node):
    """Whether the probe found slurmd running (its section slurm: daemons, a list or {name: running})."""
    daemons = (node.get('slurm') or {}).get('daemons') or []
    return bool(daemons.get('slurmd')) if isinstance(daemons, dict) else 'slurmd' in daemons


def plan(node, wanted, stack, host=None, previous=None):
    """wanted: compute, memory (each '' for leave as is), drained (the run drains a Slurm node first: upgrade.yml
    sets it). Returns the Plan with the keys of PHASE."""
    result = Plan('partition')
    problems = check(wanted)
    if problems:
        raise PlanError('; '.join(problems), problems)
    compute = wanted.get('compute') or None
    memory = wanted.get('memory') or None
    gpus = gp.physical_gpus(node)
    now = len([item for item in (node.get('gpu_pci') or {}).get('kfd_nodes') or [] if item.get('type') == 'gpu'])
    result.update(wanted={'compute': compute, 'memory': memory},
                  current=[dict((key, gpu[key]) for key in ('bdf', 'model', 'compute', 'memory')) for gpu in gpus],
                  gpus_before=now, gpus_after=now, stop=[], memory=None, reload=[], compute=None, order=[], skip=None,
                  slurm_node=None, after_failure='The next run plans the change again from the GPUs as they are and '
                  'finishes it.', amd_smi=((node.get('tools') or {}).get('amd_smi') or {}).get('source') or 'amd-smi',
                  holders=list(((node.get('gpu_holders') or {}).get('processes')) or []))
    if not compute and not memory:
        result['skip'] = 'rocm_partition_compute and rocm_partition_memory are empty'
        return result
    problems = []
    for gpu in gpus:
        row = gp.model_of(gpu['device_id'])
        want = (compute or gpu['compute'], memory or gpu['memory'])
        label = '%s (%s)' % (gpu['bdf'], gpu['name'] or gpu['device_id'])
        if not row:
            problems.append('GPU %s: no source documents its partition modes (the table knows %s); set '
                            'rocm_partition_compute and rocm_partition_memory to "" for this node class'
                            % (label, ', '.join(sorted(set(r['model'] for r in gp.MODELS.values())))))
        elif None in want:
            problems.append('GPU %s (%s): amd-smi reports no current %s partition, so the pair cannot be checked; '
                            'set both rocm_partition_compute and rocm_partition_memory, or check that amd-smi '
                            'works (amd-smi static --partition)'
                            % (label, row['model'], 'compute' if want[0] is None else 'memory'))
        elif not gp.supported(gpu['device_id'], *want):
            problems.append('GPU %s: %s does not support %s; its documented pairs are %s (sources: %s). Set '
                            'rocm_partition_compute and rocm_partition_memory to one of them'
                            % (label, row['model'], gp.pair_text(want),
                               ', '.join(gp.pair_text(pair) for pair in row['pairs']), ', '.join(gp.sources(row))))
    if not gpus:
        problems.append('rocm_partition_compute/rocm_partition_memory are set, but the node has no AMD GPU on the '
                        'PCI bus; set them to "" for this node class')
    if problems:
        raise PlanError('rocm_partition: ' + '; '.join(problems), problems)
    change_memory = bool(memory) and any(gpu['memory'] != memory for gpu in gpus)
    change_compute = bool(compute) and any(gpu['compute'] != compute for gpu in gpus)
    if not (change_memory or change_compute):
        return result
    if slurmd_runs(node) and wanted.get('drained') not in (True, 'True', 'true'):
        raise PlanError('rocm_partition: slurmd runs on this node, and a partition change stops every job on its GPUs '
                        'and changes the GPU count Slurm knows (a node whose GRES count changes is marked INVALID). '
                        'Change it through playbooks/upgrade.yml, which drains the node, waits for its jobs, applies '
                        'and gives Slurm the new GRES before it resumes the node (rocm_partition_drained is set '
                        'there; docs/hardware.md)')
    if slurmd_runs(node):
        result['slurm_node'] = slurm_node_name(node.get('slurm') or {})
        result['after_failure'] = ('Slurm node %s stays drained with a reason that names the step; the next run of '
                                   'playbooks/upgrade.yml plans the change again from the GPUs as they are and finishes '
                                   'it.' % result['slurm_node'])
    if result['holders'] and wanted.get('stopped') in (True, 'True', 'true'):
        stopped = holders_present(node)
        held = '; '.join('%s (pid %s, uid %s) holds %s'
                         % (item.get('comm'), item.get('pid'), item.get('uid'), ', '.join(item.get('devices') or []))
                         for item in result['holders'])
        raise PlanError('rocm_partition: processes still hold the GPUs after %s: %s. amd-smi cannot change a '
                        'partition while a GPU is open (Device busy). Stop them (a job: drain the node through '
                        'playbooks/upgrade.yml; a service: stop and disable it for the change), then run again'
                        % ('%s stopped' % ', '.join(stopped) if stopped else
                           'the check for %s (none runs here)' % ', '.join(HOLDERS), held))
    elif result['holders']:
        result.warn('%d process(es) hold the GPUs now (%s): what the role does not stop must end before the change'
                    % (len(result['holders']), ', '.join(sorted(set(item.get('comm') or '?'
                                                                    for item in result['holders'])))))
    after = gp.profile_view(node, compute, memory)
    result.update(gpus_after=after['count'], stop=holders_present(node), order=order(gpus, compute, memory))
    before_text = ', '.join(sorted(set(gp.pair_text((gpu['compute'], gpu['memory'])) for gpu in gpus)))
    want_text = gp.pair_text((compute or gpus[0]['compute'], memory or gpus[0]['memory']))
    if result['stop']:
        result.change('stop %s' % ', '.join(result['stop']),
                      'amd-smi refuses a GPU a process holds (Device busy); started again after the change')
    for step in result['order']:
        if step == 'memory':
            result.update(memory=memory, reload=[' '.join(argv) for argv in RELOAD])
            result.change('amd-smi set --memory-partition %s, then %s' % (memory, ' && '.join(result['reload'])),
                          'memory partition %s -> %s; it takes effect when amdgpu is reloaded'
                          % ('/'.join(sorted(set(str(gpu['memory']) for gpu in gpus))), memory))
        else:
            result['compute'] = compute
            result.change('amd-smi set --gpu all --compute-partition %s' % compute,
                          'compute partition %s -> %s' % ('/'.join(sorted(set(str(gpu['compute']) for gpu in gpus))),
                                                          compute))
    result.warn('partition profile %s -> %s: ROCm shows %d GPU(s) now, %d after; Slurm GRES, the CDI spec, the '
                'health check and the metrics are planned again from the new reading'
                % (before_text, want_text, now, after['count']))
    return result


def order(gpus, compute, memory):
    """The steps in the order that passes only through supported pairs: the memory partition first (with its driver
    reload) where (current compute, new memory) is a pair of every GPU, else the compute partition first (SPX+NPS1
    -> CPX+NPS4 goes through CPX+NPS1: AMD's guide sets CPX, then NPS4; SPX+NPS4 is invalid). Only the steps that
    change something."""
    change_memory = bool(memory) and any(gpu['memory'] != memory for gpu in gpus)
    change_compute = bool(compute) and any(gpu['compute'] != compute for gpu in gpus)
    if not change_compute:
        return ['memory'] if change_memory else []
    if not change_memory:
        return ['compute']
    memory_first = all(gp.supported(gpu['device_id'], gpu['compute'], memory) for gpu in gpus)
    return ['memory', 'compute'] if memory_first else ['compute', 'memory']


def probe_needs(node, wanted, stack, fresh=()):
    """The processes holding the GPUs (section gpu_holders: every /proc/<pid>/fd, bounded) and the holders' unit
    files, read only where a profile is set (a change may follow)."""
    del stack, fresh
    if not (wanted.get('compute') or wanted.get('memory')):
        return None
    sections = [] if 'gpu_holders' in (node.get('sections') or []) else ['gpu_holders']
    paths = [path for paths in holder_paths().values() for path in paths if path not in (node.get('paths') or {})]
    if paths:
        sections.append('paths')
    return {'sections': sections, 'paths': paths} if sections else None
