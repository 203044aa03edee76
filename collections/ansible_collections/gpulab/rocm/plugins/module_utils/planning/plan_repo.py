# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What rocm_repo changes: the signing key, the ROCm (and amdgpu) sources and the pin, and one list refresh
(every list on a host that has none and reaches its archive). Pure; the contents are built here and compared with
the probe's.

From ROCm 7.0 rocm.list also holds the graphics repository of each release, and amdgpu.list names the driver
under its own numbers (30.x), both from the release table (rocm_release.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpulab.rocm.plugins.module_utils.host import node_state as ns
from ansible_collections.gpulab.rocm.plugins.module_utils.planning import rocm_release
from ansible_collections.gpulab.rocm.plugins.module_utils.apt.openpgp import normalize_fingerprint
from ansible_collections.gpulab.rocm.plugins.module_utils.planning.plan_common import PlanError, Plan, file_matches
from ansible_collections.gpulab.rocm.plugins.module_utils.planning.stack import driver_wanted

# The phase's contract (docs/plan-contract.md): the probe sections it reads, the keys of its result that its
# role reads, and how the plan pass treats it; planner.REGISTRY collects it.
PHASE = {
    'name': 'repo',
    'role': 'rocm_repo',
    'changes_host': True,
    'sections': ('os', 'packages', 'apt', 'files', 'gpus'),
    'keys': {
        'apply': 'V(present) (install key, sources, pin), V(absent) (remove them) or V(none).',
        'contents': 'The sources and pin files to write, path to content.',
        'remove': 'Paths to remove (old sources, the key when absent).',
        'refresh_scope': "V(sources) (only the lists of the ROCm sources) or V(all) (every list once, where apt has none "
                         'yet and the archive answers).',
    },
}


HEADER = '# Managed by gpulab.rocm (role rocm_repo): %s. Local changes are overwritten.\n'
_URL_RE = re.compile(r'^(https?|file)://[^\s\[\]"\'\\#]+\Z')  # no '#': apt reads the rest as a comment
_TOKEN_RE = re.compile(r'^[A-Za-z0-9][A-Za-z0-9._-]*\Z')
_PATH_RE = re.compile(r'^/[A-Za-z0-9._/-]+\Z')
_FPR_RE = re.compile(r'^([0-9A-F]{40}|[0-9A-F]{64})\Z')


def check(wanted):
    """Every value that lands in a sources line or the pin, validated: a space or ']' could add apt options
    (trusted=yes) or lines. Returns the problems."""
    problems = []
    for key in ('base_url', 'key_url'):
        if not _URL_RE.match(str(wanted.get(key) or '')):
            problems.append('rocm_repo_%s must be an http(s):// or file:// URL without spaces, quotes, brackets, '
                            '"#" or a line break, got %r' % (key, wanted.get(key)))
    for key in ('architecture', 'pin_origin'):
        if not _TOKEN_RE.match(str(wanted.get(key) or '')):
            problems.append('rocm_repo_%s must be one word (letters, digits, ".", "-", "_"), got %r'
                            % (key, wanted.get(key)))
    if wanted.get('amdgpu_version') and not _TOKEN_RE.match(str(wanted['amdgpu_version'])):
        problems.append('rocm_repo_amdgpu_version must be a directory name such as 6.2.4 or 30.10, got %r'
                        % (wanted['amdgpu_version'],))
    if not _PATH_RE.match(str(wanted.get('keyring') or '')):
        problems.append('rocm_repo_keyring must be an absolute path of letters, digits, ".", "-", "_" and "/", got %r'
                        % (wanted.get('keyring'),))
    fingerprints = wanted.get('key_fingerprints') or []
    if not fingerprints:
        problems.append('rocm_repo_key_fingerprints is empty; list the fingerprints of the keys you trust')
    bad = [fpr for fpr in fingerprints if not _FPR_RE.match(normalize_fingerprint(fpr))]
    if bad:
        problems.append('rocm_repo_key_fingerprints holds values that are not fingerprints (40 or 64 hex digits): %s'
                        % ', '.join(repr(fpr) for fpr in bad))
    try:
        priority = int(wanted.get('pin_priority'))
        if isinstance(wanted.get('pin_priority'), bool) or not -32768 <= priority <= 32767:
            raise ValueError()
    except (TypeError, ValueError):
        problems.append('rocm_repo_pin_priority must be a number, got %r' % (wanted.get('pin_priority'),))
    return problems


def contents(node, wanted, stack):
    """{path: content} of the sources and pin this host wants (no amdgpu.list where the driver is not wanted)."""
    os_info = node.get('os') or {}
    releases = [rocm_release.release(stack['version'])]
    for version in stack['versions']:
        info = rocm_release.release(version)
        if info['version'] not in [r['version'] for r in releases]:
            releases.append(info)
    suites = set()
    for info in releases:
        suites.add(rocm_release.apt_suite(os_info.get('distribution'), os_info.get('version'), info['version'],
                                          stack.get('apt_suite') or None))
    suite = suites.pop()
    base = str(wanted['base_url']).rstrip('/')
    options = '[arch=%s signed-by=%s]' % (wanted['architecture'], wanted['keyring'])
    lines = []
    for info in releases:
        lines.append('deb %s %s/rocm/apt/%s %s main\n' % (options, base, info['repo_dir'], suite))
        if info['graphics_dir']:
            # From ROCm 7.0 user space also needs AMD's graphics repository, in the same file (reference 1.1).
            lines.append('deb %s %s/graphics/%s/ubuntu %s main\n' % (options, base, info['graphics_dir'], suite))
    files = {ns.SOURCES_FILE: HEADER % ('ROCm ' + ', '.join(r['version'] for r in releases)) + ''.join(lines)}
    if driver_wanted(stack['kernel_driver'], (node.get('gpu_pci') or {}).get('in_container')):
        default = releases[0]
        amdgpu_dir = wanted.get('amdgpu_version') or default['amdgpu_dir']
        if not amdgpu_dir:
            raise ValueError('ROCm %s is not in the release table (known 7.x releases: %s), so the amdgpu driver '
                             'directory that goes with it is not known: set rocm_repo_amdgpu_version to the driver '
                             '(30.x) AMD names for it, or choose a release of the table'
                             % (default['version'], ', '.join(rocm_release.known_7x())))
        # The 7.x driver line carries the architectures AMD documents for the OS (amd64,i386 on Ubuntu).
        arch = default['driver_architectures'].get(os_info.get('distribution'), wanted['architecture'])
        driver_options = '[arch=%s signed-by=%s]' % (arch, wanted['keyring'])
        label = ('amdgpu kernel driver %s for ROCm %s' % (amdgpu_dir, default['version']) if default['amdgpu_min']
                 else 'amdgpu kernel driver for ROCm ' + default['version'])
        files[ns.AMDGPU_SOURCES_FILE] = (HEADER % label + 'deb %s %s/amdgpu/%s/ubuntu %s main\n'
                                         % (driver_options, base, amdgpu_dir, suite))
    files[ns.PIN_FILE] = (HEADER % 'ROCm pin'
                          + "# Prefer AMD's packages over the distribution's same-named ROCm packages, which sort "
                            'higher (Debian bug #1028307).\n'
                          + 'Package: *\nPin: release o=%s\nPin-Priority: %d\n'
                          % (wanted['pin_origin'], int(wanted['pin_priority'])))
    return files


def plan(node, wanted, stack, host=None, previous=None):
    """wanted: state (present|absent), base_url, key_url, key_fingerprints, keyring, amdgpu_version, architecture,
    pin_origin, pin_priority.

    Returns the Plan with: contents {path: content} of every wanted file, files (those that differ now), remove
    [paths], key (install|keep|remove), refresh, refresh_scope (sources|all), and each change with its reason.
    """
    result = Plan('repo')
    files = node.get('files') or {}
    keyrings = node.get('keyrings') or {}
    managed = (ns.SOURCES_FILE, ns.AMDGPU_SOURCES_FILE, ns.PIN_FILE)
    result.update(files={}, contents={}, remove=[], key='keep', refresh=False, refresh_scope='sources', apply=None)

    if wanted.get('state', 'present') == 'absent' or stack['install_source'] == 'distro':
        why = ('rocm_repo_state is absent' if wanted.get('state') == 'absent'
               else "rocm_install_source is distro: AMD's sources must not mix with the distribution's ROCm")
        for path in managed:
            if (files.get(path) or {}).get('exists'):
                result['remove'].append(path)
                result.change('remove %s' % path, why)
        if (keyrings.get(wanted.get('keyring')) or {}).get('exists'):
            result['remove'].append(wanted['keyring'])
            result.change('remove the signing key %s' % wanted['keyring'], why)
        result['key'] = 'remove' if wanted.get('keyring') in result['remove'] else 'keep'
        result['apply'] = 'absent' if result['remove'] else None
        return result

    problems = check(wanted)
    driver = rocm_release.driver_problem(stack['version'], wanted.get('amdgpu_version'))
    if driver and driver_wanted(stack['kernel_driver'], (node.get('gpu_pci') or {}).get('in_container')):
        problems.append(driver)
    if problems:
        raise PlanError('rocm_repo: %s. Nothing was changed.' % '; '.join(problems))
    try:
        wanted_files = contents(node, wanted, stack)
    except ValueError as exc:
        raise PlanError('rocm_repo: %s. Nothing was changed.' % exc)

    # Every wanted file goes to gpulab.rocm.apt_source (it writes only what differs, and refreshes the lists of all
    # of them after a key change or an interrupted run); `files` names the ones that differ now.
    result['contents'] = wanted_files
    for path in managed:
        current = files.get(path) or {}
        if path in wanted_files:
            if not file_matches(current, wanted_files[path]):
                result['files'][path] = wanted_files[path]
                result.change('write %s' % path, 'missing' if not current.get('exists') else
                              'its content, owner or mode differs from what is wanted'
                              if current.get('type') == 'file' else 'it is a %s, not a file' % current.get('type'))
        elif current.get('exists'):
            result['remove'].append(path)
            result.change('remove %s' % path, 'the amdgpu driver is not wanted on this host (rocm_kernel_driver %s, %s)'
                          % (stack['kernel_driver'], 'a container' if (node.get('gpu_pci') or {}).get('in_container')
                             else 'bare metal'))

    trusted = set(normalize_fingerprint(fpr) for fpr in wanted['key_fingerprints'])
    keyring = keyrings.get(wanted['keyring'])
    if keyring is None:
        # The sources do not name this keyring yet: the probe has not read it.
        result['key'] = 'install'
        result.change('install the signing key %s' % wanted['keyring'], 'the sources do not use it yet')
    elif not keyring.get('exists') or keyring.get('type') != 'file':
        result['key'] = 'install'
        result.change('install the signing key %s' % wanted['keyring'], 'missing')
    elif not keyring.get('clean'):
        result['key'] = 'install'
        result.change('replace the signing key %s' % wanted['keyring'], 'it holds more than public keys (%s)'
                      % (keyring.get('error') or 'secret key material or other packets'))
    elif not keyring.get('fingerprints') or not set(keyring['fingerprints']) <= trusted:
        result['key'] = 'install'
        result.change('replace the signing key %s' % wanted['keyring'], 'it holds %s, not only trusted keys (%s)'
                      % (', '.join(keyring.get('fingerprints') or ['no readable key']), ', '.join(sorted(trusted))))
    elif keyring.get('expired'):
        result['key'] = 'install'
        result.change('fetch the signing key %s again' % wanted['keyring'], 'the key %s in it has expired (apt '
                      'reports EXPKEYSIG): vendors re-issue their key with a new expiry' % ', '.join(keyring['expired']))
    elif keyring.get('mode') != '0644' or keyring.get('uid') != 0:
        result['key'] = 'install'
        result.change('set owner and mode of %s' % wanted['keyring'], 'not root-owned 0644')

    journal = files.get(ns.APT_JOURNAL) or {}
    if journal.get('exists'):
        result.change('finish the interrupted change of the apt sources', 'a run stopped while changing them (%s)'
                      % ns.APT_JOURNAL)
    lists = (node.get('apt') or {}).get('sources') or []
    lists_missing = [item['uri'] for item in lists if not item.get('exists')]
    if not result['changes'] and lists_missing:
        result.change('refresh the apt lists of the ROCm sources', 'apt has no list for %s' % ', '.join(lists_missing))
    # A host whose apt never refreshed its lists gets them all refreshed once where its archive answers (ROCm's
    # packages need the distribution's libraries); where it does not, only ROCm's (preflight said what that means).
    apt = node.get('apt') or {}
    archive = apt.get('archive') or {}
    result['refresh_scope'] = 'all' if apt.get('lists_empty') and archive.get('reachable', True) else 'sources'
    if result['refresh_scope'] == 'all' and not result['changes']:
        result.change('refresh all apt lists', 'apt has none yet')
    result['refresh'] = bool(result['changes'])
    result['apply'] = 'present' if result['changes'] else None
    return result
