# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What rocm_driver changes: amdgpu-dkms (and the kernel headers) at the ROCm release, and whether it may reboot
after installing it. Pure."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpulab.rocm.plugins.module_utils.planning import rocm_release
from ansible_collections.gpulab.rocm.plugins.module_utils.planning.plan_common import Plan, PlanError
from ansible_collections.gpulab.rocm.plugins.module_utils.planning.stack import driver_wanted

# The phase's contract (docs/plan-contract.md): the probe sections it reads, the keys of its result that its
# role reads, and how the plan pass treats it; planner.REGISTRY collects it.
PHASE = {
    'name': 'driver',
    'role': 'rocm_driver',
    'changes_host': True,
    'sections': ('os', 'packages', 'apt', 'gpus'),
    'keys': {
        'wanted': 'Whether this host gets the amdgpu kernel driver.',
        'why_not': 'Why it does not, when it does not.',
        'install': 'Packages to install (amdgpu-dkms and the kernel headers); empty when in place.',
        'reboot': 'C(allowed) (whether the role may reboot this host) and C(reason).',
        'unbound': 'AMD GPUs that amdgpu does not drive (read again after the reboot).',
        'reboot_pending': 'The installed driver is not the loaded one and no reboot was marked (a run killed '
                          'between the install and its reboot step): reboot or mark it now.',
    },
}


_PACKAGE_RE = re.compile(r'^[a-z0-9][a-z0-9+.-]+\Z')


def has_work(plan, wanted):
    """Why a host gets no driver is said when the role runs, not on every converged run."""
    return bool(plan.get('install')) or bool(plan.get('reboot_pending'))


def reboot_plan(policy_allows, connection, host_machine_id, controller_machine_id, in_container,
                through_slurm=False):
    """{'allowed': bool, 'reason': str, 'through_slurm': bool}: a reboot after a driver change is allowed only when
    the policy allows it, never for the control node (same machine id, or a local connection) nor a container.
    through_slurm: the upgrade play reboots the node itself, through Slurm once its jobs ended (docs/health.md), so
    the role only marks it."""
    refusals = []
    if not policy_allows:
        refusals.append('rocm_driver_reboot is false')
    if connection in ('local', 'ansible.builtin.local'):
        refusals.append('the host is reached with a local connection')
    if host_machine_id and controller_machine_id and host_machine_id.strip() == controller_machine_id.strip():
        refusals.append('the host is the control node')
    if in_container:
        refusals.append('the host is a container')
    if refusals:
        return {'allowed': False, 'through_slurm': False,
                'reason': 'the driver changed and needs a reboot, not done here: %s; reboot it yourself'
                          % '; '.join(refusals)}
    if through_slurm:
        return {'allowed': False, 'through_slurm': True,
                'reason': 'the driver changed and needs a reboot: the upgrade play reboots the node through Slurm '
                          '(scontrol reboot ASAP) once its jobs ended'}
    return {'allowed': True, 'through_slurm': False, 'reason': 'the driver changed; rebooting to load it'}


def plan(node, wanted, stack, host=None, previous=None):
    """wanted: packages, headers_package ('' for none; None: the running kernel's), reboot. host: connection and
    controller_machine_id (the action's), to never reboot the control node.

    Returns the Plan: wanted (bool), why_not, install (apt specs, headers first), reboot {'allowed', 'reason'},
    reboot_pending (the installed driver is not loaded yet and nobody was told: reboot or mark it now).
    """
    result = Plan('driver')
    pci = node.get('gpu_pci') or {}
    in_container = bool(pci.get('in_container'))
    wants = driver_wanted(stack['kernel_driver'], in_container) and stack['install_source'] == 'amd'
    result.update(wanted=wants, why_not=None, install=[], reboot=None, unbound=list(pci.get('unbound') or []), reboot_pending=False)
    # Bad names are refused wherever the role runs, driver wanted here or not (the gate lists them before any change).
    bad = [name for name in wanted.get('packages') or [] if not _PACKAGE_RE.match(str(name))]
    headers = wanted.get('headers_package')
    if headers in (None, 'auto'):
        headers = (node.get('apt') or {}).get('headers_package') or ''
    if headers and not _PACKAGE_RE.match(headers):
        bad.append(headers)
    if bad:
        raise PlanError('rocm_driver: not Debian package names: %s.'
                        % ', '.join(repr(name) for name in bad))

    if not wants:
        result['why_not'] = ('rocm_kernel_driver is never' if stack['kernel_driver'] == 'never'
                             else 'rocm_install_source is distro (the distribution kernel has amdgpu)'
                             if stack['install_source'] == 'distro'
                             else "the host is a container: it uses the host kernel's driver (rocm_kernel_driver: "
                                  'always installs it anyway)')
        return result
    info = rocm_release.release(stack['version'])
    # Up to 6.4 amdgpu-dkms carries the ROCm code (1:6.8.5.60204-...); from 7.0 the driver's own 8-digit number
    # (6.10.5.30100200-... for 30.10.2), from the release table. The driver of rocm_repo_amdgpu_version, when that
    # differs from the table's, is not known here (another role's variable): docs/releases.md says so.
    code = rocm_release.driver_code(info['amdgpu_dir']) if info['amdgpu_min'] else info['code']
    packages = node.get('packages') or {}
    if headers and (packages.get(headers) or ['  '])[0][1] != 'i':
        result['install'].append(headers)
        result.change('install %s' % headers, 'DKMS builds amdgpu against the running kernel')
    for name in wanted.get('packages') or []:
        abbrev, version = packages.get(name) or ['  ', '']
        # amdgpu-dkms versions carry the ROCm code before the build: 1:6.8.5.60204-2044426.22.04.
        if abbrev[1] != 'i' or (code and ('.%s-' % code) not in version):
            result['install'].append('%s=*.%s-*' % (name, code) if code else name)
            result.change('install %s of ROCm %s' % (name, stack['version']),
                          'not installed' if abbrev[1] != 'i' else 'installed at %s' % version)
    if not result['install']:
        result['reboot_pending'] = _reboot_pending(node, wanted.get('packages') or [], result)
    result['reboot'] = reboot_plan(bool(wanted.get('reboot', True)), (host or {}).get('connection'),
                                   (node.get('os') or {}).get('machine_id'),
                                   (host or {}).get('controller_machine_id'), in_container,
                                   bool(wanted.get('reboot_through_slurm')))
    return result


def _reboot_pending(node, names, result):
    """Whether the installed amdgpu-dkms waits for a reboot that no run did or marked: unpacked after this boot, not
    the loaded module's version, and no /run/reboot-required. A run killed between the install and its reboot (or
    the marker) left exactly that; the next run finishes it instead of reporting changed=0."""
    versions = node.get('versions') or {}
    installed_at, booted_at = versions.get('driver_installed_at'), versions.get('booted_at')
    if 'amdgpu-dkms' not in names or versions.get('reboot_marked') or not installed_at or not booted_at:
        return False
    version = ((node.get('packages') or {}).get('amdgpu-dkms') or ['', ''])[1]
    loaded = versions.get('amdgpu')
    upstream = re.sub(r'^\d+:', '', version).split('-')[0]
    # Rebooted since, or rebooted (marked) for by the role since: nothing pending (a driver that still does not
    # load after its reboot is verify's finding, never a reboot loop).
    settled = max(booted_at, versions.get('reboot_recorded_at') or 0)
    if installed_at <= settled or (loaded and upstream.startswith(loaded)):
        return False
    result.change('load amdgpu-dkms %s (reboot, or mark the reboot)' % version,
                  'it was installed after the last boot and the loaded amdgpu is %s: a run stopped before its reboot'
                  % (loaded or 'another one (no version)'))
    return True
