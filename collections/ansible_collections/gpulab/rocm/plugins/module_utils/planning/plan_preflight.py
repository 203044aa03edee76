# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The preflight verdict of one host, from its probe: every problem (the run stops before any change) and every
warning. Pure; gpulab.rocm.plan calls plan() for the phase 'preflight'.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpulab.rocm.plugins.module_utils.planning import gpu_support, rocm_release
from ansible_collections.gpulab.rocm.plugins.module_utils.planning.stack import driver_wanted

# The phase's contract (docs/plan-contract.md): the probe sections it reads, the keys of its result that its
# role reads, and how the plan pass treats it; planner.REGISTRY collects it.
PHASE = {
    'name': 'preflight',
    'role': 'rocm_preflight',
    'changes_host': False,
    # The probe's own checks: planned from a whole new reading of the host, with any phase the run selects
    # (alone under its own tag), and no role to apply after the gate.
    'reads_all': True,
    'selected': 'with_any_phase',
    'applies': 'never',
    'sections': ('os', 'packages', 'apt', 'users', 'disk', 'firmware', 'gpus'),
    'keys': {'problems': 'Why the host is not fit for the release (the gate lists them); empty when it is.'},
    # The key whose entries stop the host at the gate (other phases refuse by raising PlanError).
    'gate': 'problems',
}


POLICIES = ('fail', 'warn', 'ignore')


def _gpu_label(dev):
    return '%s %s (%s)' % (dev.get('bdf'), dev.get('name') or 'AMD GPU %s' % dev.get('device_id'),
                           dev.get('gfx_target') or 'gfx target unknown')


def _link_text(link):
    text = '%s GT/s x%s (max %s GT/s x%s)' % (link.get('current_speed_gts'), link.get('current_width'),
                                              link.get('max_speed_gts'), link.get('max_width'))
    if link.get('upstream_bdf'):
        text += ', slot link at %s: %s GT/s x%s (max %s GT/s x%s)' % (
            link.get('upstream_bdf'), link.get('upstream_current_speed_gts'), link.get('upstream_current_width'),
            link.get('upstream_max_speed_gts'), link.get('upstream_max_width'))
    return text


def distribution_needs(apt, stack, wants_driver):
    """What the plan must get from the distribution's own archive (not AMD's sources): the running kernel's headers
    where the driver is built and they are missing, and the distribution's ROCm with rocm_install_source distro."""
    needs = []
    headers = (apt.get('policy') or {}).get(apt.get('headers_package')) if wants_driver else None
    if headers is not None and not headers.get('installed'):
        needs.append(apt['headers_package'])
    if stack['install_source'] == 'distro':
        needs.append("the distribution's ROCm packages (rocm_install_source distro)")
    return needs


def distribution_lists(apt, needs):
    """(problems, warnings) for a host whose apt has no lists yet. Where its archive answers, the first refresh
    brings them. Where it does not, the run goes on only when nothing the plan needs comes from it: rocm_repo then
    refreshes AMD's lists only, and where a dependency of AMD's packages is in no reachable source, rocm_sdk's one
    apt transaction stops before any package changes (apt resolves it whole before downloading) with apt's line
    naming it."""
    if not apt.get('lists_empty'):
        return [], []
    archive = apt.get('archive') or {}
    if archive.get('reachable', True):
        return [], ['apt has no package lists yet (apt-get update never ran): rocm_repo refreshes them all once']
    error = archive.get('error') or 'apt-get update failed'
    if needs:
        return ['apt has no package lists yet and the host\'s own package archive cannot be reached (%s), but the '
                'plan needs from it: %s. Make the distribution\'s archive (or a mirror of it) reachable, then run '
                'again' % (error, ', '.join(needs))], []
    return [], ['the host\'s own package archive cannot be reached (%s) and apt has no lists of it: only the ROCm '
                'sources are refreshed, and every package must come from them or be installed already (if one cannot, the '
                'install stops before any package changes, with apt\'s line naming it)' % error]


def _repository_problems(distribution, os_version, version, stack, wants_driver):
    """Why the host's OS has no repository for a release: a legacy release needs its apt suite; a Core release
    its per-distribution folder, and the driver (still in the legacy layout) its suite."""
    info = rocm_release.release(version)
    checks = []
    if info['stream'] == 'core':
        checks.append(lambda: rocm_release.core_distro(distribution, os_version))
    if info['stream'] == 'legacy' or wants_driver:
        checks.append(lambda: rocm_release.apt_suite(distribution, os_version, version, stack.get('apt_suite') or None))
    problems = []
    for check in checks:
        try:
            check()
        except ValueError as exc:
            problems.append(str(exc))
    return problems


def _unshipped_targets(amd, release, source):
    """A Core release ships one package per GPU target (rocm_release.CORE_TARGETS): a GPU whose target (the override's
    for an overridden one) it does not ship cannot run it. A release the table lacks is asked through its index by
    rocm_sdk instead."""
    if source != 'amd' or not release.get('targets'):
        return []
    problems = []
    for dev in amd:
        target = (gpu_support.effective_targets([dev.get('gfx_target')], release['version']) or [None])[0]
        if target and target not in release['targets']:
            problems.append('%s: ROCm %s ships no package for its target %s (it ships %s): hold this node class on '
                            'a release that supports it, or choose another release'
                            % (_gpu_label(dev), release['version'], target, ', '.join(release['targets'])))
    return problems


def plan(node, wanted, stack, host=None, previous=None):
    """wanted: gpus_required, unsupported_gpu (fail|warn), degraded_link (fail|warn|ignore), min_free_gb.

    Returns {'problems', 'notices', 'gpus' (support per GPU), 'driver_wanted', 'in_container', 'nvidia_present'}.
    """
    problems, warnings, gpus = [], [], []
    for key, allowed in (('unsupported_gpu', POLICIES[:2]), ('degraded_link', POLICIES)):
        if wanted.get(key) not in allowed:
            problems.append('rocm_preflight_%s is %r; use one of %s' % (key, wanted.get(key), ', '.join(allowed)))

    os_info = node.get('os') or {}
    distribution, os_version = os_info.get('distribution'), os_info.get('version')
    if os_info.get('euid') not in (0, None):
        problems.append('this run is not root on the host (uid %s): run with become: true (the playbooks set it; '
                        'check that the remote user may sudo) or as root' % os_info['euid'])
    release = rocm_release.release(stack['version'])
    pci = node.get('gpu_pci') or {}
    in_container = bool(pci.get('in_container'))
    wants_driver = driver_wanted(stack['kernel_driver'], in_container)
    if stack['install_source'] == 'amd':
        for version in [stack['version']] + [v for v in stack['versions'] if v != stack['version']]:
            problems.extend(_repository_problems(distribution, os_version, version, stack, wants_driver))

    amd = pci.get('amd') or []
    if not amd and wanted.get('gpus_required'):
        problems.append('no AMD GPU on the PCI bus (rocm_preflight_gpus_required is true; set it to false for build '
                        'nodes without GPUs)')
    for dev in amd:
        verdict = gpu_support.support(dev.get('gfx_target'), release['version'])
        gpus.append(dict(verdict, bdf=dev.get('bdf'), name=dev.get('name')))
        if verdict['status'] == 'unsupported':
            text = '%s: not supported by ROCm %s: %s' % (_gpu_label(dev), release['version'], verdict['note'])
            (problems if wanted.get('unsupported_gpu') == 'fail' else warnings).append(text)
        elif verdict['status'] == 'override' or verdict['note']:
            warnings.append('%s: %s' % (_gpu_label(dev), verdict['note']))
        link = dev.get('link') or {}
        if link.get('degraded') and wanted.get('degraded_link') != 'ignore':
            text = ('%s: PCIe link degraded, %s: a wrong slot, a riser or a bad seat (an idle GPU may train its '
                    'speed down; width is what counts)' % (_gpu_label(dev), _link_text(link)))
            (problems if wanted.get('degraded_link') == 'fail' else warnings).append(text)

    unshipped = _unshipped_targets([dev for dev, verdict in zip(amd, gpus) if verdict['status'] != 'unsupported'],
                                   release, stack['install_source'])
    (problems if wanted.get('unsupported_gpu') == 'fail' else warnings).extend(unshipped)
    apt = node.get('apt') or {}
    policy = apt.get('policy') or {}
    if wants_driver and (node.get('firmware') or {}).get('secure_boot'):
        warnings.append('Secure Boot is on and the amdgpu driver is built by DKMS: the module must be signed with a '
                        'key enrolled in MOK (mokutil --import), or it will not load')
    headers = policy.get(apt.get('headers_package')) if wants_driver else None
    if headers is not None and not headers.get('installed') and not headers.get('candidate'):
        warnings.append('%s is not in the apt sources: DKMS cannot build amdgpu for the running kernel; install '
                        'the headers or boot a kernel that has them' % apt.get('headers_package'))

    lists_problems, lists_warnings = distribution_lists(apt, distribution_needs(apt, stack, wants_driver))
    problems += lists_problems
    warnings += lists_warnings
    if apt.get('policy_error'):
        warnings.append('apt-cache reported a problem with the apt sources: %s' % apt['policy_error'].splitlines()[-1])

    disk = node.get('disk') or {}
    need = float(wanted.get('min_free_gb') or 0) * 2 ** 30
    if disk.get('error'):
        problems.append('%s: the free space on the filesystem of %s is unknown, so it cannot be checked '
                        '(rocm_preflight_min_free_gb)' % (disk['error'], disk.get('path')))
    elif disk.get('free_bytes') is not None and disk['free_bytes'] < need:
        problems.append('%.1f GiB free on the filesystem of %s, %.1f GiB needed (rocm_preflight_min_free_gb)'
                        % (disk['free_bytes'] / 2.0 ** 30, disk.get('path'), need / 2.0 ** 30))

    users = node.get('users') or {}
    missing = [user for user in stack['gpu_users'] if not (users.get(user) or {}).get('exists')]
    if missing:
        problems.append('users that do not exist: %s (rocm_gpu_users); create them first' % ', '.join(missing))

    # A tool the probe had to stop (a wedged GPU hangs rocminfo) is this host's problem, not a hung run; what the
    # probe replaced or left unread (bytes that are not UTF-8, a file over its bound) is a notice.
    problems.extend(node.get('timeouts') or [])
    warnings.extend(node.get('notices') or [])

    pending = node.get('dpkg_pending') or {}
    if pending.get('packages') or pending.get('journal'):
        warnings.append('an interrupted dpkg run left %s half done; rocm_sdk finishes it before installing'
                        % (', '.join(pending.get('packages') or []) or 'packages'))
    return {'problems': problems, 'notices': warnings, 'gpus': gpus, 'driver_wanted': wants_driver,
            'in_container': in_container, 'nvidia_present': bool(pci.get('nvidia_present'))}
