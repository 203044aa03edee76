# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What rocm_verify checks, on the host record the fleet report shows (fleet_report.host_record): rocminfo is
there; it lists the expected number of GPU agents or, by default (rocm_expected_gpu_count -1), every AMD GPU on
the PCI bus that the ROCm release runs on; the expected gfx targets; and, where amdgpu-dkms is installed on a host
(not a container), that the loaded amdgpu is the DKMS build of the installed driver and the newest kernel has one
(driver_guard.loaded_findings). Pure."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpulab.rocm.plugins.module_utils.planning import (
    driver_guard, fleet_report, gpu_count, gpu_support,
)
from ansible_collections.gpulab.rocm.plugins.module_utils.parsers.gfx import is_gfx_target
from ansible_collections.gpulab.rocm.plugins.module_utils.planning.plan_common import Plan, PlanError

# The phase's contract (docs/plan-contract.md): the probe sections it reads, the keys of its result that its
# role reads, and how the plan pass treats it; planner.REGISTRY collects it.
PHASE = {
    'name': 'verify',
    'role': 'rocm_verify',
    'changes_host': False,
    'sections': ('os', 'gpus', 'tools', 'versions', 'health', 'packages', 'driver'),
    # The kernel side (DKMS trees, the kernels' modules) changes with the packages: read again after a package change.
    'derived_from_packages': ('driver',),
    'keys': {
        'problems': 'What does not work on the node as planned (the role fails on them).',
        'stats': "The node's figures, recorded for AWX where the role passes O(stats_key).",
        'summary': 'The GPU agents in one list of lines.',
    },
    'read_by_plan': ('stats',),
}


def has_work(plan, wanted):
    """It reports on every run."""
    return True


def plan(node, wanted, stack, host=None, previous=None):
    """wanted: expected_gfx_targets. Returns the Plan: record, problems, stats (the set_stats entry), summary."""
    result = Plan('verify')
    targets = list(wanted.get('expected_gfx_targets') or [])
    bad = [t for t in targets if not is_gfx_target(str(t))]
    if bad:
        raise PlanError('rocm_verify_expected_gfx_targets holds values that are not gfx targets such as gfx90a: %s'
                        % ', '.join(map(repr, bad)))
    rocminfo = (node.get('tools') or {}).get('rocminfo') or {}
    record = fleet_report.host_record(node, (host or {}).get('name'))
    problems = []
    if not rocminfo.get('present'):
        problems.append('rocminfo is not installed (run the rocm_sdk role)')
    elif rocminfo.get('error_kind') == 'unreadable':
        problems.append(rocminfo['error'])
    count = int(rocminfo.get('gpu_count') or 0)
    # The one count rule (gpu_count.expected): rocm_expected_gpu_count is compared with rocminfo's agents; without
    # it, a count the health data file recorded with the AMD GPUs on the bus, and every GPU there with rocminfo.
    rule = gpu_count.expected(node, stack)
    expected = rule['count']
    if rule['configured'] and count != expected:
        problems.append('rocminfo lists %d GPU agent(s), expected %d (rocm_expected_gpu_count)%s'
                        % (count, expected, (': ' + rocminfo['error']) if rocminfo.get('error') else ''))
    elif not rule['configured']:
        if rule['source'] == gpu_count.RECORDED:
            problems.append(gpu_count.lost_problem(rule))
        unseen = unseen_gpus(record, stack['version'])
        if unseen:
            problems.append(
                'rocminfo does not list %d of the AMD GPUs on the PCI bus that ROCm %s runs on: %s%s. Check that '
                'amdgpu is loaded and bound to them (dmesg | grep -i amdgpu) and that /dev/kfd is there; where the '
                'host gives this node only some of its GPUs (a container), set rocm_expected_gpu_count'
                % (len(unseen), stack['version'], '; '.join(unseen),
                   (' (%s)' % rocminfo['error'].rstrip('.')) if rocminfo.get('error') else ''))
    found = list(rocminfo.get('gfx_targets') or [])
    missing = [t for t in targets if t not in found]
    if missing:
        problems.append('gfx targets missing: %s (rocminfo lists %s)' % (', '.join(missing), ', '.join(found) or 'none'))
    # The driver after its change and reboot: the DKMS build of the installed amdgpu-dkms loaded, not the kernel's
    # own nor another build; a reboot already done for this driver is said (the roles do not do it twice).
    problems += driver_guard.loaded_findings(node, stack)
    # The host tuning (rocm_tuning's plan of this run, after its apply): a setting not in effect yet is a notice
    # (a kernel argument waits for its reboot, a VM has no cpufreq); one written and applied in this run that still
    # is not, or kernel arguments the node came back without after its reboot, is a problem (docs/hardware.md).
    tuning = (((node.get('plans') or {}).get('tuning') or {}).get('plan') or {})
    if not tuning.get('skip'):
        for text in tuning.get('findings') or []:
            result.warn('tuning: %s' % text)
        problems += ['tuning: %s' % text for text in tuning.get('problems') or []]
    gpus = [gpu.get('marketing_name') for gpu in rocminfo.get('gpus') or []]
    result.update(
        record=record, problems=problems,
        stats={'gpu_count': count, 'gfx_targets': found, 'rocm_version': stack['version'], 'gpus': gpus,
               'problems': problems},
        summary='%d GPU agent(s): %s (%s)' % (count, ', '.join(str(g) for g in gpus) or 'none',
                                              ', '.join(found) or 'no gfx target'))
    return result


def unseen_gpus(record, rocm_version):
    """The AMD GPUs of the PCI bus that the release runs on (natively or through an HSA override) which rocminfo
    does not list, as text: address, model, gfx target and driver."""
    unseen = []
    for row in record.get('gpus') or []:
        if row.get('vendor') != 'AMD' or 'pci' not in row.get('seen_by', []) or 'rocminfo' in row['seen_by']:
            continue
        if gpu_support.support(row.get('gfx_target'), rocm_version)['status'] == 'unsupported':
            continue
        driver = ('driver %s' % row['driver']) if row.get('driver') else 'no driver bound'
        unseen.append('%s %s (%s, %s)' % (row.get('pci_bus'), row.get('model'), row.get('gfx_target'), driver))
    return unseen
