# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Phase report (role rocm_report): this host's record of the fleet report (planning/fleet_report.py builds it from
the probe), against the expected GPU count and ROCm release. Changes nothing. Pure."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpulab.rocm.plugins.module_utils.planning import fleet_report
from ansible_collections.gpulab.rocm.plugins.module_utils.planning.plan_common import Plan, PlanError

# The phase's contract (docs/plan-contract.md): the probe sections it reads, the keys of its result that its
# role reads, and how the plan pass treats it; planner.REGISTRY collects it.
PHASE = {
    'name': 'report',
    'role': 'rocm_report',
    'changes_host': False,
    'sections': ('os', 'gpus', 'tools', 'versions', 'slurm', 'health'),
    'keys': {'record': "This host's record of the fleet report."},
}


def probe_needs(node, wanted, stack, fresh=()):
    """Slurm's view of a host that has Slurm, read anew (it is live: a Slurm play of the same run may have changed
    it), unless this planning call read it."""
    has_scontrol = ((node.get('slurm') or {}).get('binaries') or {}).get('scontrol')
    if 'slurm' not in (node.get('sections') or []) or has_scontrol:
        sections = [section for section in ('slurm', 'slurm_state') if section not in fresh]
        return {'sections': sections} if sections else None
    return None


_CLASS = re.compile(r'^[A-Za-z0-9_.-]{0,64}\Z')


def plan(node, wanted, stack, host=None, previous=None):
    """wanted: expected_rocm_version ('' for the stack's release), node_class (the class the host's firmware and
    versions are compared within on the page: rocm_report_node_class). Returns the Plan with the host's record."""
    node_class = wanted.get('node_class') or ''
    if not isinstance(node_class, str) or not _CLASS.match(node_class):
        raise PlanError('rocm_report_node_class must be letters, digits and ._- (up to 64), not %r. Nothing was '
                        'changed.' % (node_class,))
    result = Plan('report')
    version = wanted.get('expected_rocm_version') or stack['version']
    result['record'] = fleet_report.host_record(node, (host or {}).get('name'), stack['expected_gpu_count'], version,
                                                node_class)
    return result
