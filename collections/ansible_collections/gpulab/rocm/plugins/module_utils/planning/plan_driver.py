# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What rocm_driver changes: amdgpu-dkms (and the kernel headers of every installed kernel) at the ROCm release, the
old DKMS trees of AMD's driver it removes, and whether it may reboot after installing it; before any change to the
driver's packages, the guard (driver_guard.check: headers, the driver's kernel range, foreign amdgpu modules, free
space) refuses what would leave the host half configured. Pure."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpulab.rocm.plugins.module_utils.planning import driver_guard, rocm_release
from ansible_collections.gpulab.rocm.plugins.module_utils.planning.plan_common import Plan, PlanError
from ansible_collections.gpulab.rocm.plugins.module_utils.planning.stack import driver_wanted

# The phase's contract (docs/plan-contract.md): the probe sections it reads, the keys of its result that its
# role reads, and how the plan pass treats it; planner.REGISTRY collects it.
PHASE = {
    'name': 'driver',
    'role': 'rocm_driver',
    'changes_host': True,
    'sections': ('os', 'packages', 'apt', 'gpus', 'versions', 'driver'),
    # The kernel side (DKMS trees, the kernels' modules) changes with the packages: read again after a package change.
    'derived_from_packages': ('driver',),
    'keys': {
        'wanted': 'Whether this host gets the amdgpu kernel driver.',
        'why_not': 'Why it does not, when it does not.',
        'install': 'Packages to install (amdgpu-dkms and the headers of the installed kernels); empty when in place.',
        'dkms_remove': "AMD's old amdgpu DKMS trees to remove before the install (C(amdgpu/<version>), each run as "
                       'C(dkms remove amdgpu/<version> --all)); empty when there are none.',
        'reboot_record': 'What the role writes to its reboot record once it rebooted or marked the reboot: the driver '
                         'code the reboot is for (a node that comes back without that driver is not rebooted again '
                         'for it).',
        'reboot': 'C(allowed) (whether the role may reboot this host) and C(reason).',
        'unbound': 'AMD GPUs that amdgpu does not drive (read again after the reboot).',
        'reboot_pending': 'The installed driver is not the loaded one and no reboot was marked (a run killed '
                          'between the install and its reboot step): reboot or mark it now.',
    },
}


_PACKAGE_RE = re.compile(r'^[a-z0-9][a-z0-9+.-]+\Z')


def has_work(plan, wanted):
    """Why a host gets no driver is said when the role runs, not on every converged run."""
    return bool(plan.get('install')) or bool(plan.get('reboot_pending')) or bool(plan.get('dkms_remove'))


def probe_needs(node, wanted, stack, fresh=()):
    """The kernel side read under the role's kernel root (rocm_driver_kernel_root): read again (with the headers of
    its kernels) when the probe read another root."""
    root = wanted.get('kernel_root') or '/'
    if (node.get('params') or {}).get('kernel_root', '/') == root or 'driver' in fresh:
        return None
    return {'sections': ['driver', 'apt'], 'kernel_root': root}


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
    """wanted: packages, headers_package ('' for none; None or 'auto': the running kernel's and every installed
    kernel's), reboot, and the guard's kernel_check (strict|warn|ignore), kernel_max ('' or a series such as '6.18'),
    boot_min_free_mb, dkms_min_free_mb, kernel_root. host: connection and controller_machine_id (the action's), to
    never reboot the control node.

    Returns the Plan: wanted (bool), why_not, install (apt specs, headers first), dkms_remove (AMD's old DKMS trees),
    reboot {'allowed', 'reason'}, reboot_pending (the installed driver is not loaded yet and nobody was told: reboot
    or mark it now), reboot_record. Raises PlanError with every problem of the guard before a change to the
    driver's packages.
    """
    result = Plan('driver')
    pci = node.get('gpu_pci') or {}
    in_container = bool(pci.get('in_container'))
    wants = driver_wanted(stack['kernel_driver'], in_container) and stack['install_source'] == 'amd'
    result.update(wanted=wants, why_not=None, install=[], dkms_remove=[], reboot=None,
                  unbound=list(pci.get('unbound') or []), reboot_pending=False, reboot_record=None)
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
    if wanted.get('kernel_check', 'strict') not in driver_guard.KERNEL_CHECKS:
        raise PlanError('rocm_driver: rocm_driver_kernel_check is %r; use one of %s.'
                        % (wanted.get('kernel_check'), ', '.join(driver_guard.KERNEL_CHECKS)))
    if not driver_guard.valid_series(wanted.get('kernel_max')):
        raise PlanError("rocm_driver: rocm_driver_kernel_max is %r; give a kernel series such as '6.18' (quoted), or "
                        "empty for the table's." % (wanted.get('kernel_max'),))

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
    if wanted.get('headers_package') in (None, 'auto'):
        # DKMS builds amdgpu for every installed kernel it has headers for (the newest at the install, each at its
        # first boot): a kernel without them boots without the DKMS amdgpu.
        for name in driver_guard.headers_to_install(node):
            # A kernel built by hand may have a release no Debian package name can carry: its headers are its own.
            if name not in result['install'] and _PACKAGE_RE.match(name):
                result['install'].append(name)
                result.change('install %s' % name, 'DKMS builds amdgpu for every installed kernel; this is %s\'s '
                              'headers' % name[len('linux-headers-'):])
    for name in wanted.get('packages') or []:
        abbrev, version = packages.get(name) or ['  ', '']
        # amdgpu-dkms versions carry the ROCm code before the build: 1:6.8.5.60204-2044426.22.04.
        if abbrev[1] != 'i' or (code and ('.%s-' % code) not in version):
            result['install'].append('%s=*.%s-*' % (name, code) if code else name)
            result.change('install %s of ROCm %s' % (name, stack['version']),
                          'not installed' if abbrev[1] != 'i' else 'installed at %s' % version)
    if result['install']:
        # The guard: every change to the driver's packages (an install, upgrade or downgrade of amdgpu-dkms, or a
        # kernel's headers, which start a DKMS build too) first meets what would leave the host half configured.
        problems, notices = driver_guard.check(node, wanted, info)
        for text in notices:
            result.warn(text)
        if problems:
            raise PlanError('rocm_driver: ' + ' '.join(problem.rstrip('.') + '.' for problem in problems),
                            problems=['rocm_driver: %s' % problem for problem in problems])
    _old_trees(node, result)
    if not result['install']:
        result['reboot_pending'] = _reboot_pending(node, wanted.get('packages') or [], result)
    # What the role's record says once it rebooted or marked the reboot: the driver it was for.
    result['reboot_record'] = 'amdgpu-dkms %s\n' % code if code else 'amdgpu-dkms\n'
    result['reboot'] = reboot_plan(bool(wanted.get('reboot', True)), (host or {}).get('connection'),
                                   (node.get('os') or {}).get('machine_id'),
                                   (host or {}).get('controller_machine_id'), in_container,
                                   bool(wanted.get('reboot_through_slurm')))
    return result


def _old_trees(node, result):
    """AMD's old amdgpu DKMS trees, removed before the install (and on a converged host too: dkms fails on them at
    the next kernel update), with dkms itself; where dkms is not installed, the next run removes them."""
    found = driver_guard.old_trees(node)
    if not found:
        return
    root = (node.get('driver') or {}).get('root') or '/'
    if root != '/' or not driver_guard.installed_version(node, 'dkms'):
        result.warn('old DKMS trees of AMD\'s driver (%s) %s' % (
            ', '.join('amdgpu/%s' % version for version, _why in found),
            'are read under %s, not /: dkms is not run on them' % root if root != '/' else
            'stay until dkms is installed (amdgpu-dkms brings it): the next run removes them'))
        return
    for version, why in found:
        result['dkms_remove'].append('amdgpu/%s' % version)
        result.change('dkms remove amdgpu/%s --all' % version, why)


def _reboot_pending(node, names, result):
    """Whether the installed amdgpu-dkms waits for a reboot that no run did or marked: unpacked after this boot, not
    the loaded module's version, and no /run/reboot-required. A run killed between the install and its reboot (or
    the marker) left exactly that; the next run finishes it instead of reporting changed=0.

    Never twice for the same driver: once the role rebooted (or marked the reboot) for the driver of the installed
    amdgpu-dkms (its record names the driver code), a node that came back without it is rocm_verify's finding, not
    a reason to reboot again, until the installed driver changes."""
    versions = node.get('versions') or {}
    installed_at, booted_at = versions.get('driver_installed_at'), versions.get('booted_at')
    if 'amdgpu-dkms' not in names or versions.get('reboot_marked') or not installed_at or not booted_at:
        return False
    version = ((node.get('packages') or {}).get('amdgpu-dkms') or ['', ''])[1]
    loaded = versions.get('amdgpu')
    upstream = re.sub(r'^\d+:', '', version).split('-')[0]
    if loaded and upstream.startswith(loaded):
        return False
    recorded, recorded_at = driver_guard.rebooted_for(node, version)
    if recorded:
        if recorded_at and booted_at > recorded_at:
            result.warn('rocm_driver rebooted this node for amdgpu-dkms %s already and the loaded amdgpu is %s: it '
                        'is not rebooted again for the same driver (rocm_verify reports it)'
                        % (version, loaded or 'another one (no version: the kernel\'s own)'))
        return False
    # Rebooted since, or rebooted (marked) for by the role since: nothing pending (a driver that still does not
    # load after its reboot is verify's finding, never a reboot loop).
    settled = max(booted_at, versions.get('reboot_recorded_at') or 0)
    if installed_at <= settled:
        return False
    result.change('load amdgpu-dkms %s (reboot, or mark the reboot)' % version,
                  'it was installed after the last boot and the loaded amdgpu is %s: a run stopped before its reboot'
                  % (loaded or 'another one (no version)'))
    return True
