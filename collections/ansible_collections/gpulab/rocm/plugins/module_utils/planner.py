# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The planner: the wanted state of one phase plus the node's probe gives the phase's plan. Pure; every decision of
the roles lives in the phase modules named here, and gpulab.rocm.plan is its only caller in the roles."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpulab.rocm.plugins.module_utils import (
    fleet_report, plan_access, plan_containers, plan_driver, plan_env, plan_metrics, plan_repo, plan_sdk, plan_slurm,
    plan_verify, preflight,
)
from ansible_collections.gpulab.rocm.plugins.module_utils.plan_common import PlanError

CHANGING = ('repo', 'driver', 'sdk', 'access', 'env', 'containers', 'slurm_node', 'slurm', 'metrics')
PHASES = ('preflight', 'repo', 'driver', 'sdk', 'access', 'env', 'containers', 'verify', 'report', 'slurm_node',
          'slurm', 'metrics')
# The probe sections each phase reads; a phase whose sections the node lacks gets them probed first.
SECTIONS = {
    'preflight': ('os', 'packages', 'apt', 'users', 'disk', 'firmware', 'gpus'),
    'repo': ('os', 'packages', 'apt', 'files', 'gpus'),
    'driver': ('os', 'packages', 'apt', 'gpus'),
    'sdk': ('os', 'packages', 'apt', 'alternatives', 'gpus'),
    'access': ('files', 'users'),
    'env': ('files', 'users', 'ldconfig', 'gpus'),
    # Plus 'containers' (plan_containers.probe_needs), read only where the role is enabled and an AMD GPU is there.
    'containers': ('os', 'packages', 'users', 'gpus'),
    'verify': ('os', 'gpus', 'tools', 'versions'),
    'report': ('os', 'gpus', 'tools', 'versions', 'slurm'),
    'slurm_node': ('os', 'packages', 'gpus', 'slurm'),
    'slurm': ('os', 'slurm'),
    'metrics': ('os', 'packages', 'gpus'),
}


def probe_needs(phase, node, wanted, stack, fresh=()):
    """Extra node_probe arguments a phase needs beyond what the node holds, or None.

    fresh: the sections read during this planning call (they are current). The report reads Slurm's view of a host
    that has Slurm anew (it is live: a Slurm play of the same run may have changed it), and nowhere else.
    """
    missing = [section for section in SECTIONS[phase] if section not in (node.get('sections') or [])]
    if phase == 'report' and ('slurm' in missing or ((node.get('slurm') or {}).get('binaries') or {}).get('scontrol')):
        missing += [section for section in ('slurm', 'slurm_state') if section not in fresh and section not in missing]
    extra = None
    if phase == 'env' and wanted.get('state') != 'absent':
        extra = plan_env.probe_needs(node, wanted, stack)
    elif phase == 'containers':
        extra = plan_containers.probe_needs(node, wanted, stack)
    if not missing and not extra:
        return None
    args = {'sections': missing}
    if extra:
        args['sections'] = sorted(set(missing + extra['sections']))
        args.update((key, value) for key, value in extra.items() if key != 'sections')
    return args


def plan(phase, node, wanted, stack, host=None):
    """The plan of one phase. host: {'name', 'connection', 'controller_machine_id'} from the action.

    Raises PlanError when the wanted state is invalid (the message names the variable and the fix).
    """
    host = host or {}
    euid = (node.get('os') or {}).get('euid')
    if phase in CHANGING and euid not in (0, None):
        raise PlanError('%s: this run is not root on the host (uid %s): the roles change system files, packages '
                        'and groups. Run with become: true (the playbooks set it; check that the remote user may '
                        'sudo) or as root. Nothing was changed.' % (phase, euid))
    if phase == 'preflight':
        return preflight.plan(node, wanted, stack)
    if phase == 'repo':
        return plan_repo.plan(node, wanted, stack)
    if phase == 'driver':
        return plan_driver.plan(node, dict(wanted, connection=host.get('connection')), stack,
                                {'machine_id': host.get('controller_machine_id')})
    if phase == 'sdk':
        return plan_sdk.plan(node, wanted, stack)
    if phase == 'access':
        return plan_access.plan(node, wanted, stack)
    if phase == 'env':
        return plan_env.plan(node, wanted, stack)
    if phase == 'containers':
        return plan_containers.plan(node, wanted, stack)
    if phase == 'verify':
        return plan_verify.plan(node, wanted, stack, host.get('name'))
    if phase == 'slurm_node':
        return plan_slurm.node_record(node, wanted, stack)
    if phase == 'slurm':
        return plan_slurm.plan(node, wanted, stack)
    if phase == 'metrics':
        return plan_metrics.plan(node, wanted, stack)
    if phase == 'report':
        expected = stack['expected_gpu_count']
        version = wanted.get('expected_rocm_version') or stack['version']
        return {'phase': 'report', 'changes': [], 'notices': [],
                'record': fleet_report.host_record(node, host.get('name'), expected, version)}
    raise PlanError('unknown phase %r; one of %s' % (phase, ', '.join(PHASES)))
