# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""How many AMD GPUs a node must have: the one rule that rocm_verify, rocm_health (its data file), rocm_metrics
(gpulab_gpus_expected) and the fleet report use. Pure.

The count comes from the first of these that applies:

1. the role's own override, where it is 0 or more: rocm_health's node class gpu_count, then rocm_health_gpu_count;
   rocm_metrics_expected_gpus (rocm_verify and the report have none);
2. the stack-wide rocm_expected_gpu_count, where it is 0 or more;
3. the count recorded in the health check's data file (/etc/gpulab/health.json, which rocm_health writes and the
   probe's section health reads), where it is above the GPUs on the bus now;
4. the AMD GPUs on the PCI bus now.

An expectation is never lowered silently. Where the bus shows fewer GPUs than the expectation, the expectation
stays and a notice says that lowering it is the admin's decision, and which variable sets it; where an override or
rocm_expected_gpu_count is below what the bus shows or the data file recorded, that is the admin's decision, and a
notice says the expectation was lowered by it. A GPU added raises the recorded count (4 is above 3).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

STACK = 'rocm_expected_gpu_count'
RECORDED = 'the count recorded at the first provisioning'
FOUND = 'the GPUs on the bus now'


def _count(value):
    """value as a count (0 or more), else None (-1, unset, or not a whole number)."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None


def found_now(node):
    """The AMD GPU functions on the PCI bus now (the probe's gpu_pci)."""
    pci = node.get('gpu_pci') or {}
    if isinstance(pci.get('amd'), list):
        return len(pci['amd'])
    return int(pci.get('amd_count') or 0)


def expected(node, stack, override=-1, recorded=None, override_source=None, variable=None):
    """The count a node must have, by the precedence of this module's docstring.

    node: the probe (gpu_pci; health_recorded_gpu_count where its section health was read); stack: the stack-wide
    inputs (expected_gpu_count); override: the role's own count, -1 for none, named override_source; recorded: the
    data file's count (default: the probe's); variable: the role's own variable that notices name beside
    rocm_expected_gpu_count.

    Returns {'count', 'source' (override_source, STACK, RECORDED or FOUND), 'configured' (the count is an
    override's or the stack's), 'found' (the GPUs on the bus now), 'recorded', 'notices'}."""
    found = found_now(node)
    if recorded is None:
        recorded = node.get('health_recorded_gpu_count')
    recorded = _count(recorded)
    override = _count(override)
    stack_count = _count((stack or {}).get('expected_gpu_count'))
    if override is not None:
        count, source = override, override_source or 'the role\'s own count'
    elif stack_count is not None:
        count, source = stack_count, STACK
    elif recorded is not None and recorded > found:
        count, source = recorded, RECORDED
    else:
        count, source = found, FOUND
    configured = source not in (RECORDED, FOUND)
    setting = '%s (every role)%s' % (STACK, ' or %s (this role)' % variable if variable else '')
    notices = []
    if count > found:
        notices.append('%d AMD GPU(s) expected (%s), the PCI bus shows %d now: the expectation stays (a GPU that '
                       'fell off the bus does not lower it); lowering it is the admin\'s decision: set %s'
                       % (count, source, found, setting))
    highest = max(found, recorded if recorded is not None else 0)
    if configured and count < highest:
        notices.append('%s lowers the expected GPU count to %d (the PCI bus shows %d%s): the admin\'s decision'
                       % (source, count, found, ', the health data file recorded %d' % recorded
                          if recorded is not None else ''))
    return {'count': count, 'source': source, 'configured': configured, 'found': found, 'recorded': recorded,
            'notices': notices}


def lost_problem(rule):
    """The problem rocm_verify and the fleet report name where the bus shows fewer AMD GPUs than the health data
    file recorded (rule: expected()'s dict, source RECORDED)."""
    return ('the PCI bus shows %d AMD GPU(s), %d expected (%s, in the health data file): a GPU fell off the bus '
            '(dmesg | grep -i amdgpu; lspci -d 1002:); the expectation stays, lowering it is the admin\'s decision: '
            'set %s' % (rule['found'], rule['count'], rule['source'], STACK))
