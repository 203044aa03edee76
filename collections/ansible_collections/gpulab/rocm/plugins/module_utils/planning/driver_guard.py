# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The DKMS driver guard (issue 39): what must hold on the kernel side before rocm_driver changes the driver's
packages, the old DKMS trees of AMD's driver to remove, and what rocm_verify finds about the loaded amdgpu after the
change. Pure: it reads the probe's 'driver' section (node_state.driver_state), 'packages', 'apt' and 'versions'.

What it guards against, as lab admins report it: amdgpu-dkms failing to build for a kernel outside the driver's
range (ROCm/ROCm#5905, #6193, ROCm/amdgpu#192, #209), or for a kernel whose headers cannot be installed, which
leaves apt with a half-configured package; a full /boot that stops update-initramfs half way
(ROCm/rocm-install-on-linux#629); an old DKMS tree of the driver left behind, on which dkms itself fails
(ROCm/ROCm#3701); a foreign out-of-tree amdgpu; a node that boots a kernel without the DKMS amdgpu. AMD's Enterprise
AI installer (silogen/cluster-bloom, docs/gpu-driver-support.md) halts on an unknown out-of-tree amdgpu and checks
the headers before it touches the driver in the same spirit. docs/hardware.md describes each rule and its fix.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
import time

from ansible_collections.gpulab.rocm.plugins.module_utils.host.node_state import DKMS_LIMIT, kernel_sort_key
from ansible_collections.gpulab.rocm.plugins.module_utils.planning import rocm_release

# The DKMS version of AMD's amdgpu-dkms: <module version>-<build>.<Ubuntu release>, which its package version
# carries around the driver code (package 1:6.8.5.60204-2044426.22.04 is DKMS amdgpu/6.8.5-2044426.22.04, seen
# together in ROCm/ROCm#3701 and #4197; 1:6.16.13.30300400-2341068.24.04 is amdgpu/6.16.13-2341068.24.04 in #6193).
# AMD builds for Ubuntu only; Debian uses the same packages (rocm-reference.md 1.3).
AMD_DKMS_VERSION = re.compile(r'^\d+\.\d+\.\d+-\d+\.\d+\.\d+\Z')
MIB = 1 << 20
KERNEL_CHECKS = ('strict', 'warn', 'ignore')
_SERIES_RE = re.compile(r'^\d+\.\d+\Z')


def installed_version(node, name='amdgpu-dkms'):
    """The version dpkg has installed of a package, or None."""
    abbrev, version = ((node.get('packages') or {}).get(name) or ['  ', ''])[:2]
    return version if abbrev[1:2] == 'i' else None


def dkms_version(package_version):
    """AMD's DKMS version for an amdgpu-dkms package version: '1:6.16.13.30300400-2341068.24.04' ->
    '6.16.13-2341068.24.04' (the driver code dropped); None for another form."""
    version = re.sub(r'^\d+:', '', str(package_version or ''))
    if '-' not in version:
        return None
    upstream, revision = version.split('-', 1)
    parts = upstream.split('.')
    if len(parts) < 4 or not parts[-1].isdigit():
        return None
    found = '%s-%s' % ('.'.join(parts[:-1]), revision)
    return found if AMD_DKMS_VERSION.match(found) else None


def is_amd_tree(tree):
    """Whether a DKMS tree is one of AMD's amdgpu-dkms: named amdgpu, a version of AMD's form, and its source the
    folder the package installs (/usr/src/amdgpu-<version>), or no source left at all (an old one whose package
    went)."""
    return (tree.get('module') == 'amdgpu' and bool(AMD_DKMS_VERSION.match(tree.get('version') or ''))
            and tree.get('source') in (None, '/usr/src/amdgpu-%s' % tree.get('version')))


def kernels(node):
    """The installed kernels the probe found (oldest first), each a dict of node_state.driver_state."""
    return sorted((node.get('driver') or {}).get('kernels') or [], key=lambda k: kernel_sort_key(k['release']))


def headers_state(node, kernel):
    """'installed' (the package, or the kernel's build folder has its headers), 'installable' (apt's lists offer
    it), 'unknown' (apt has no lists yet, or the probe did not ask) or 'missing'."""
    name = kernel['headers_package']
    if installed_version(node, name) or kernel.get('headers_present'):
        return 'installed'
    apt = node.get('apt') or {}
    policy = (apt.get('policy') or {}).get(name)
    if policy and (policy.get('installed') or policy.get('candidate')):
        return 'installable'
    if apt.get('lists_empty') or policy is None:
        return 'unknown'
    return 'missing'


def _remove_kernel(kernel):
    return 'remove that kernel (apt purge %s)' % (kernel.get('image_package') or 'linux-image-' + kernel['release'])


def _mib(value):
    return int(value // MIB)


def _kernel_range_problems(node, kernels_, info, wanted):
    """(problems, notices) of the installed kernels against the table's range of the release's driver."""
    check = wanted.get('kernel_check') or 'strict'
    if check == 'ignore':
        return [], []
    row = rocm_release.kernel_range(info.get('amdgpu_dir'))
    if row is None:
        return [], ['the kernel range of amdgpu %s (ROCm %s) is not in the table, so the installed kernels were not '
                    'checked against it' % (info.get('amdgpu_dir') or 'unknown', info['version'])]
    newest, notices = row['newest'], []
    override = wanted.get('kernel_max') or ''
    if override:
        if rocm_release.series_key(override) > rocm_release.series_key(newest):
            notices.append('rocm_driver_kernel_max %s widens the newest kernel of amdgpu %s beyond the %s the table '
                           'knows (%s): the DKMS build may fail there' % (override, row['line'], newest, row['known']))
        newest = override
    problems = []
    for kernel in kernels_:
        series = rocm_release.series_key(kernel['release'])
        if series is None:
            continue
        driver = 'amdgpu %s (ROCm %s, DKMS module %s)' % (info['amdgpu_dir'], info['version'],
                                                          row['dkms'] or 'of the %s line' % row['line'])
        if series > rocm_release.series_key(newest):
            others = ['%s (ROCm %s)' % (line, ', '.join(releases)) for line, releases
                      in rocm_release.lines_for_kernel('%d.%d' % series) if releases]
            text = ('kernel %s is newer than %s builds on: the newest kernel series for it is %s (%s; '
                    'docs/hardware.md has the sources), so DKMS would fail to build amdgpu for it and leave apt with '
                    'amdgpu-dkms half configured. Fix: %s and keep a kernel of %s or older%s, or set '
                    'rocm_driver_kernel_max (or rocm_driver_kernel_check: warn) to try it anyway'
                    % (kernel['release'], driver, newest, 'rocm_driver_kernel_max' if override else row['known'],
                       _remove_kernel(kernel), newest,
                       ', or choose a ROCm release whose driver builds on %d.%d: %s' % (series + ('; '.join(others),))
                       if others else ''))
        elif series < rocm_release.series_key(row['oldest']):
            text = ('kernel %s is older than %s supports on Debian and Ubuntu (%s or later). Fix: boot a supported '
                    'kernel and %s, or set rocm_driver_kernel_check: warn to try it anyway'
                    % (kernel['release'], driver, row['oldest'], _remove_kernel(kernel)))
        else:
            continue
        (problems if check == 'strict' else notices).append(text)
    return problems, notices


def foreign_modules(node):
    """The amdgpu modules DKMS (or something else) put there that are not AMD's amdgpu-dkms, each with its fix."""
    drv = node.get('driver') or {}
    problems = []
    accounted = set()
    for tree in drv.get('dkms') or []:
        name = '%s/%s' % (tree['module'], tree['version'])
        if tree['module'] == 'amdgpu' and is_amd_tree(tree):
            accounted.update(entry.split('/')[0] for entry in tree.get('installed') or [])
            continue
        if tree['module'] == 'amdgpu':
            problems.append(
                'a DKMS tree amdgpu/%s is not one of AMD\'s amdgpu-dkms packages (%s): it would build the amdgpu '
                'module beside the driver this release installs, and which one loads depends on the order DKMS '
                'installs them. '
                'Fix: dkms remove %s --all, and remove the package or folder that added it (dpkg -S %s)'
                % (tree['version'], 'its source is %s' % tree['source'] if tree.get('source') else
                   'its version is not of the form AMD uses, such as 6.16.13-2341068.24.04', name,
                   tree.get('source') or '/usr/src/amdgpu-%s' % tree['version']))
            accounted.update(entry.split('/')[0] for entry in tree.get('installed') or [])
        elif tree.get('amdgpu_ko'):
            problems.append(
                'the DKMS module %s builds an amdgpu.ko (for %s): another amdgpu beside AMD\'s amdgpu-dkms. Fix: dkms '
                'remove %s --all, and remove the package that added it (dpkg -S %s)'
                % (name, ', '.join(sorted(entry.split('/')[0] for entry in tree['amdgpu_ko'])), name,
                   tree.get('source') or '/usr/src/%s-%s' % (tree['module'], tree['version'])))
            accounted.update(entry.split('/')[0] for entry in tree['amdgpu_ko'] if entry in tree.get('installed', []))
    for kernel in kernels(node):
        path = kernel.get('amdgpu_dkms')
        if path and kernel['release'] not in accounted:
            problems.append(
                '%s is an amdgpu module that no DKMS tree installed (a package or a copy put it there): it would load '
                'instead of the driver this release installs. Fix: find its package (dpkg -S %s) and remove it, or '
                'delete the file and run depmod -a %s' % (path, path, kernel['release']))
    return problems


def _space_problems(node, wanted):
    free = (node.get('driver') or {}).get('free') or {}
    problems = []
    for path, key, why, fix in (
            ('/boot', 'boot_min_free_mb',
             'the DKMS install rebuilds the initramfs of each kernel it builds amdgpu for, with the module and its '
             'firmware in it, written beside the old one; a full /boot stops update-initramfs and leaves apt with '
             'packages half configured (ROCm/rocm-install-on-linux#629)',
             'remove the kernels you no longer boot (apt autoremove --purge; dpkg -l \'linux-image-*\' lists them) '
             'or grow /boot, then run again'),
            ('/var/lib/dkms', 'dkms_min_free_mb',
             'DKMS copies the amdgpu source there and builds it, once per kernel',
             'free space on that filesystem (apt clean; old DKMS trees: dkms status) or grow it, then run again')):
        need = int(wanted.get(key) or 0)
        entry = free.get(path)
        if not need or not entry:
            continue
        if entry.get('error'):
            problems.append('%s: the free space there is unknown, so it cannot be checked (rocm_driver_%s)'
                            % (entry['error'], key))
        elif entry.get('free_bytes') is not None and entry['free_bytes'] < need * MIB:
            problems.append('%s has %d MiB free (filesystem of %s), %d MiB needed (rocm_driver_%s): %s. Fix: %s'
                            % (path, _mib(entry['free_bytes']), entry.get('checked') or path, need, key, why, fix))
    return problems


def check(node, wanted, info):
    """(problems, notices) before a change to the driver's packages: the headers of every installed kernel, the
    kernels against the driver's range, foreign amdgpu modules, and the free space of /boot and /var/lib/dkms.
    Nothing when the probe has no 'driver' section (a probe of a collection before it)."""
    if not node.get('driver'):
        return [], []
    installed = kernels(node)
    problems, notices = [], []
    for kernel in installed:
        if headers_state(node, kernel) == 'missing':
            problems.append(
                'kernel %s is installed, but its headers (%s) are neither installed nor offered by apt\'s sources: '
                'DKMS cannot build amdgpu for it, and booting it gives no DKMS amdgpu. Fix: add the distribution\'s '
                'archive (or a mirror of it) that has them, install %s, or %s'
                % (kernel['release'], kernel['headers_package'], kernel['headers_package'], _remove_kernel(kernel)))
    if not installed:
        notices.append('no kernel is installed under %s/lib/modules (a container or an image build): DKMS builds '
                       'amdgpu for none now; the kernel checks had nothing to check'
                       % ((node.get('driver') or {}).get('root') or '/').rstrip('/'))
    range_problems, range_notices = _kernel_range_problems(node, installed, info, wanted)
    problems += range_problems + foreign_modules(node) + _space_problems(node, wanted)
    notices += range_notices
    if (node.get('driver') or {}).get('dkms_cut'):
        notices.append('/var/lib/dkms holds more DKMS trees than the probe reads (%d): the ones beyond were not checked'
                       % DKMS_LIMIT)
    return problems, notices


def headers_to_install(node):
    """The headers packages of the installed kernels that are not installed and that apt offers (or may offer: no
    lists yet), oldest kernel first: DKMS builds amdgpu for each kernel it has headers for."""
    return [kernel['headers_package'] for kernel in kernels(node)
            if headers_state(node, kernel) in ('installable', 'unknown')]


def old_trees(node):
    """AMD's amdgpu DKMS trees that the installed amdgpu-dkms does not own (an upgrade or removal that left them:
    dkms fails on such a tree, ROCm/ROCm#3701), newest last: [(version, reason)]."""
    current = dkms_version(installed_version(node))
    found = []
    for tree in (node.get('driver') or {}).get('dkms') or []:
        if is_amd_tree(tree) and tree['version'] != current:
            found.append((tree['version'], 'an old DKMS tree of AMD\'s driver: %s%s' % (
                'the installed amdgpu-dkms is %s' % current if current else 'no amdgpu-dkms is installed',
                '' if tree.get('source_ok') else '; its source is gone, and dkms fails on such a tree '
                '(ROCm/ROCm#3701)')))
    return sorted(found, key=lambda item: kernel_sort_key(item[0]))


def rebooted_for(node, version):
    """Whether rocm_driver recorded a reboot (done or marked) for the driver of this installed amdgpu-dkms version,
    and when: (bool, recorded_at)."""
    versions = node.get('versions') or {}
    code = versions.get('reboot_recorded_for')
    return bool(code and version and ('.%s-' % code) in version), versions.get('reboot_recorded_at')


def _when(stamp):
    return time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(stamp)) if stamp else 'at an unknown time'


def loop_note(node, version):
    """The sentence a finding adds when the role already rebooted the node for this very driver and it came back
    without it (booted after the record): no second reboot for the same driver."""
    recorded, at = rebooted_for(node, version)
    booted = (node.get('versions') or {}).get('booted_at')
    if not recorded or not at or not booted or booted <= at:
        return ''
    return (' rocm_driver already rebooted the node for this driver (recorded %s) and it came back without it, so '
            'the roles do not reboot it again for the same driver (that would repeat the same boot) until the '
            'installed driver changes: fix the cause, then reboot it yourself.' % _when(at))


def loaded_findings(node, stack):
    """rocm_verify's findings about the loaded amdgpu where amdgpu-dkms is installed on a host with AMD GPUs (not a
    container: it runs the host's kernel): an installed driver other than the one the release plans; amdgpu not
    loaded; the kernel's own (in-tree) amdgpu loaded instead of the DKMS build; a DKMS build other than the
    installed one loaded (its srcversion differs from what DKMS built for the running kernel, or its version from
    the package's); the newest installed kernel without a DKMS amdgpu."""
    pci = node.get('gpu_pci') or {}
    drv = node.get('driver') or {}
    version = installed_version(node)
    if pci.get('in_container') or not pci.get('amd') or not version or not drv or \
            stack.get('install_source', 'amd') != 'amd' or stack.get('kernel_driver') == 'never':
        return []
    dkms = dkms_version(version)
    module_version = dkms.split('-')[0] if dkms else None
    running, arch = drv.get('running'), drv.get('arch')
    tree = dict((t['version'], t) for t in drv.get('dkms') or [] if t['module'] == 'amdgpu').get(dkms) or {}
    here = '%s/%s' % (running, arch)
    loaded = drv.get('loaded') or {}
    name = 'amdgpu-dkms %s (DKMS amdgpu/%s)' % (version, dkms or 'of an unknown form')
    note = loop_note(node, version)
    problems = []
    planned = _planned_driver(stack)
    if planned and ('.%s-' % planned[1]) not in version:
        problems.append('the installed amdgpu-dkms is %s, not the driver ROCm %s plans (amdgpu %s, whose versions '
                        'carry .%s-). Fix: run rocm_driver (site.yml --tags driver), which installs it'
                        % (version, stack['version'], planned[0], planned[1]))
    if not loaded.get('present'):
        problems.append('amdgpu is not loaded although %s is installed and AMD GPUs are on the bus. Fix: modprobe '
                        'amdgpu and read dmesg | grep -i amdgpu (a blacklist in /etc/modprobe.d, missing firmware, '
                        'or a DKMS build that did not finish: dkms status amdgpu).%s' % (name, note))
    elif not loaded.get('version'):
        if here not in (tree.get('installed') or []):
            cause = ('DKMS has no build of it installed for the running kernel %s (dkms status amdgpu shows it). '
                     'Fix: install the kernel\'s headers (linux-headers-%s), run dkms install amdgpu/%s -k %s '
                     '(its make.log says why a build failed), then reboot' % (running, running, dkms, running))
        else:
            cause = ('DKMS built and installed it for the running kernel %s, but the node did not load it. Fix: '
                     'reboot (or modprobe -r amdgpu && modprobe amdgpu where nothing uses the GPUs)' % running)
        problems.append('the loaded amdgpu is the kernel\'s own (in-tree) module, not %s: %s.%s' % (name, cause, note))
    else:
        built = drv.get('running_dkms_srcversion')
        mismatch = (built and loaded.get('srcversion') and built != loaded['srcversion']) or \
            (module_version and loaded['version'] != module_version)
        if mismatch:
            problems.append('the loaded amdgpu is a DKMS build %s (srcversion %s), not the one %s built for the '
                            'running kernel %s%s. Fix: reboot to load it.%s'
                            % (loaded['version'], loaded.get('srcversion') or 'unknown', name, running,
                               ' (srcversion %s)' % built if built else '', note))
    installed = kernels(node)
    newest = installed[-1] if installed else None
    if newest and newest['release'] != running and not newest.get('amdgpu_dkms'):
        problems.append('the newest installed kernel %s (the one the boot loader starts by default) has no amdgpu '
                        'from %s: booting it gives the kernel\'s own amdgpu or none. Fix: install its headers (%s) '
                        'and run dkms install amdgpu/%s -k %s, or %s'
                        % (newest['release'], name, newest['headers_package'], dkms, newest['release'],
                           _remove_kernel(newest)))
    return problems


def _planned_driver(stack):
    """(driver directory, the code its amdgpu-dkms versions carry) of the stack's release, or None where unknown."""
    try:
        info = rocm_release.release(stack.get('version'))
    except (TypeError, ValueError):
        return None
    code = rocm_release.driver_code(info['amdgpu_dir']) if info['amdgpu_min'] else info['code']
    return (info['amdgpu_dir'], code) if code and info['amdgpu_dir'] else None


def valid_series(value):
    """Whether a rocm_driver_kernel_max value is empty or a kernel series such as '6.18'."""
    return value in (None, '') or bool(_SERIES_RE.match(str(value)))
