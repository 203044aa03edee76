# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What rocm_repo changes: the signing keys, the ROCm (and amdgpu) sources and the pin, and one list refresh
(every list on a host that has none and reaches its archive). Pure; the contents are built here and compared with
the probe's.

Two streams (rocm_release.py): a legacy release (up to 7.2.x) is rocm.list on repo.radeon.com, from 7.0 with the
graphics repository of each release; a ROCm Core SDK release (7.14 on) is AMD's deb822 amdrocm-stable.sources with
its own key. The amdgpu driver stays in the legacy layout for both (amdgpu.list, the legacy key), so a Core host
with the driver keeps two keyrings. A host that changes stream loses the other stream's files in the same plan."""

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
        'apply': 'V(present) (install keys, sources, pin), V(absent) (remove them) or V(none).',
        'contents': 'The sources and pin files to write, path to content: C(rocm.list) for a legacy release, '
                    'C(amdrocm-stable.sources) for a ROCm Core SDK release, C(amdgpu.list) where the driver is '
                    'wanted.',
        'remove': 'Sources and pin files to remove (the other stream\'s, C(amdgpu.list) where the driver is not '
                  'wanted, every one when absent).',
        'signing_keys': 'The keyrings to pass to M(gpulab.rocm.apt_source) as C(keys): the key URL and trusted '
                        'fingerprints of each one the sources name, and C(state=absent) for one no source uses any '
                        'more (every one when absent).',
        'refresh_scope': "V(sources) (only the lists of the ROCm sources) or V(all) (every list once, where apt has none "
                         'yet and the archive answers).',
    },
}


HEADER = '# Managed by gpulab.rocm (role rocm_repo): %s. Local changes are overwritten.\n'
_URL_RE = re.compile(r'^(https?|file)://[^\s\[\]"\'\\#]+\Z')  # no '#': apt reads the rest as a comment
_TOKEN_RE = re.compile(r'^[A-Za-z0-9][A-Za-z0-9._-]*\Z')
_PATH_RE = re.compile(r'^/[A-Za-z0-9._/-]+\Z')
_FPR_RE = re.compile(r'^([0-9A-F]{40}|[0-9A-F]{64})\Z')


# The Core SDK's sources as AMD's 10.0 install page writes them (X-Repo-Id, Architectures and Enabled included).
CORE_REPO_ID = 'amdrocm-stable'
CORE_SUITE = 'stable'
# The files of each stream's signing key: the legacy key signs rocm.list and the driver's amdgpu.list.
LEGACY_KEY_FILES = (ns.SOURCES_FILE, ns.AMDGPU_SOURCES_FILE)
CORE_KEY_FILES = (ns.CORE_SOURCES_FILE,)
MANAGED = (ns.SOURCES_FILE, ns.CORE_SOURCES_FILE, ns.AMDGPU_SOURCES_FILE, ns.PIN_FILE)


def _url_problem(name, value, empty_ok=False):
    if (empty_ok and value == '') or _URL_RE.match(str(value or '')):
        return None
    return ('%s must be an http(s):// or file:// URL without spaces, quotes, brackets, "#" or a line break%s, got %r'
            % (name, ' (or empty for the release table\'s)' if empty_ok else '', value))


def _fingerprint_problems(name, fingerprints):
    if not fingerprints:
        return ['%s is empty; list the fingerprints of the keys you trust' % name]
    bad = [fpr for fpr in fingerprints if not _FPR_RE.match(normalize_fingerprint(fpr))]
    if bad:
        return ['%s holds values that are not fingerprints (40 or 64 hex digits): %s'
                % (name, ', '.join(repr(fpr) for fpr in bad))]
    return []


def check(wanted):
    """Every value that lands in a sources file or the pin, validated: a space or ']' could add apt options
    (trusted=yes) or lines. Both streams' values are checked whichever the host uses. Returns the problems."""
    problems = [_url_problem('rocm_repo_base_url', wanted.get('base_url')),
                _url_problem('rocm_repo_key_url', wanted.get('key_url')),
                _url_problem('rocm_repo_core_base_url', wanted.get('core_base_url'), empty_ok=True),
                _url_problem('rocm_repo_core_key_url', wanted.get('core_key_url'), empty_ok=True)]
    problems = [problem for problem in problems if problem]
    for key in ('architecture', 'pin_origin', 'core_pin_origin'):
        if not _TOKEN_RE.match(str(wanted.get(key) or '')):
            problems.append('rocm_repo_%s must be one word (letters, digits, ".", "-", "_"), got %r'
                            % (key, wanted.get(key)))
    if wanted.get('amdgpu_version') and not _TOKEN_RE.match(str(wanted['amdgpu_version'])):
        problems.append('rocm_repo_amdgpu_version must be a directory name such as 6.2.4 or 30.10, got %r'
                        % (wanted['amdgpu_version'],))
    for key in ('keyring', 'core_keyring'):
        if not _PATH_RE.match(str(wanted.get(key) or '')):
            problems.append('rocm_repo_%s must be an absolute path of letters, digits, ".", "-", "_" and "/", got %r'
                            % (key, wanted.get(key)))
    # One file cannot hold both keys: each keyring must hold only its own trusted keys.
    if wanted.get('keyring') and wanted.get('keyring') == wanted.get('core_keyring'):
        problems.append('rocm_repo_core_keyring must differ from rocm_repo_keyring (%s): each keyring holds only '
                        'its own key' % wanted['keyring'])
    problems += _fingerprint_problems('rocm_repo_key_fingerprints', wanted.get('key_fingerprints') or [])
    problems += _fingerprint_problems('rocm_repo_core_key_fingerprints', wanted.get('core_key_fingerprints') or [])
    try:
        priority = int(wanted.get('pin_priority'))
        if isinstance(wanted.get('pin_priority'), bool) or not -32768 <= priority <= 32767:
            raise ValueError()
    except (TypeError, ValueError):
        problems.append('rocm_repo_pin_priority must be a number, got %r' % (wanted.get('pin_priority'),))
    return problems


def releases_of(stack):
    """The release table's rows of the host's releases, the default first."""
    releases = [rocm_release.release(stack['version'])]
    for version in stack['versions']:
        info = rocm_release.release(version)
        if info['version'] not in [r['version'] for r in releases]:
            releases.append(info)
    return releases


def legacy_sources(os_info, wanted, stack, releases):
    """(suite, rocm.list) of legacy releases: one rocm/apt line per release, from 7.0 with its graphics line."""
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
    return suite, HEADER % ('ROCm ' + ', '.join(r['version'] for r in releases)) + ''.join(lines)


def core_sources(os_info, wanted, releases):
    """amdrocm-stable.sources of Core SDK releases, in AMD's deb822 form: the per-distribution folder of each
    release's repository (7.14 and 10.x side by side name two), or of the lab's mirror for all of them."""
    try:
        distro = rocm_release.core_distro(os_info.get('distribution'), os_info.get('version'))
    except ValueError as exc:
        raise ValueError('%s. Move the host to one of those, or set rocm_version to a legacy release that supports '
                         'it (docs/releases.md)' % exc)
    uris = []
    for info in releases:
        uri = '%s/%s/' % (str(wanted.get('core_base_url') or info['core_url']).rstrip('/'), distro)
        if uri not in uris:
            uris.append(uri)
    return (HEADER % ('ROCm Core SDK ' + ', '.join(r['version'] for r in releases))
            + 'X-Repo-Id: %s\nTypes: deb\nURIs: %s\nSuites: %s\nComponents: main\nArchitectures: %s\n'
              'Signed-By: %s\nEnabled: yes\n'
            % (CORE_REPO_ID, ' '.join(uris), CORE_SUITE, wanted['architecture'], wanted['core_keyring']))


def contents(node, wanted, stack):
    """{path: content} of the sources and pin this host wants: rocm.list (legacy) or amdrocm-stable.sources (Core),
    amdgpu.list where the driver is wanted, the pin."""
    os_info = node.get('os') or {}
    releases = releases_of(stack)
    default = releases[0]
    core = default['stream'] == 'core'
    # One stream at a time: stack.resolve refuses rocm_versions that mix them.
    files = {}
    if core:
        suite = None
        files[ns.CORE_SOURCES_FILE] = core_sources(os_info, wanted, releases)
    else:
        suite, files[ns.SOURCES_FILE] = legacy_sources(os_info, wanted, stack, releases)
    if driver_wanted(stack['kernel_driver'], (node.get('gpu_pci') or {}).get('in_container')):
        amdgpu_dir = wanted.get('amdgpu_version') or default['amdgpu_dir']
        if not amdgpu_dir:
            raise ValueError('ROCm %s is not in the release table (known releases: %s), so the amdgpu driver '
                             'directory that goes with it is not known: set rocm_repo_amdgpu_version to the driver '
                             'AMD names for it, or choose a release of the table'
                             % (default['version'], ', '.join(rocm_release.known_core() if core
                                                              else rocm_release.known_7x())))
        # The driver stays in the legacy layout for a Core release too: repo.radeon.com's amdgpu/<dir>/ubuntu with
        # the Ubuntu suite of the host, signed by the legacy key.
        suite = suite or rocm_release.apt_suite(os_info.get('distribution'), os_info.get('version'),
                                                default['version'], stack.get('apt_suite') or None)
        # The 7.x driver line carries the architectures AMD documents for the OS (amd64,i386 on Ubuntu).
        arch = default['driver_architectures'].get(os_info.get('distribution'), wanted['architecture'])
        driver_options = '[arch=%s signed-by=%s]' % (arch, wanted['keyring'])
        label = ('amdgpu kernel driver %s for ROCm %s' % (amdgpu_dir, default['version']) if default['amdgpu_min']
                 else 'amdgpu kernel driver for ROCm ' + default['version'])
        files[ns.AMDGPU_SOURCES_FILE] = (HEADER % label + 'deb %s %s/amdgpu/%s/ubuntu %s main\n'
                                         % (driver_options, str(wanted['base_url']).rstrip('/'), amdgpu_dir, suite))
    if core:
        # AMD documents no pin for the Core SDK; the pin prefers its origin as the legacy one prefers repo.radeon.com.
        why = "# Prefer the ROCm Core SDK's packages over same-named packages of other sources.\n"
        origin = wanted['core_pin_origin']
    else:
        why = ("# Prefer AMD's packages over the distribution's same-named ROCm packages, which sort higher (Debian "
               'bug #1028307).\n')
        origin = wanted['pin_origin']
    files[ns.PIN_FILE] = (HEADER % 'ROCm pin' + why + 'Package: *\nPin: release o=%s\nPin-Priority: %d\n'
                          % (origin, int(wanted['pin_priority'])))
    return files


def signing_keys(wanted, default):
    """Both streams' keys, each with the files it signs: the legacy one, and the Core SDK's (its key URL the lab's
    or the release table's)."""
    return [
        ({'keyring': wanted.get('keyring'), 'key_url': wanted.get('key_url'),
          'fingerprints': list(wanted.get('key_fingerprints') or [])}, LEGACY_KEY_FILES),
        ({'keyring': wanted.get('core_keyring'), 'key_url': wanted.get('core_key_url') or default.get('core_key_url'),
          'fingerprints': list(wanted.get('core_key_fingerprints') or [])}, CORE_KEY_FILES),
    ]


def key_change(found, trusted):
    """(change, reason) for a wanted keyring as the probe found it (None when the probe has not read it), or None
    when it holds only trusted, unexpired public keys and is root-owned 0644."""
    if found is None:
        # The sources do not name this keyring yet: the probe has not read it.
        return 'install the signing key %s', 'the sources do not use it yet'
    if not found.get('exists') or found.get('type') != 'file':
        return 'install the signing key %s', 'missing'
    if not found.get('clean'):
        return 'replace the signing key %s', ('it holds more than public keys (%s)'
                                              % (found.get('error') or 'secret key material or other packets'))
    if not found.get('fingerprints') or not set(found['fingerprints']) <= trusted:
        return 'replace the signing key %s', ('it holds %s, not only trusted keys (%s)' % (
            ', '.join(found.get('fingerprints') or ['no readable key']), ', '.join(sorted(trusted))))
    if found.get('expired'):
        return 'fetch the signing key %s again', ('the key %s in it has expired (apt reports EXPKEYSIG): vendors '
                                                  're-issue their key with a new expiry' % ', '.join(found['expired']))
    if found.get('mode') != '0644' or found.get('uid') != 0:
        return 'set owner and mode of %s', 'not root-owned 0644'
    return None


def removal_reason(path, stack, node, version):
    """Why a managed file this host does not want goes: the other stream's sources, or the driver's."""
    if path == ns.SOURCES_FILE:
        return 'ROCm %s is a ROCm Core SDK release: its packages come from %s' % (version, ns.CORE_SOURCES_FILE)
    if path == ns.CORE_SOURCES_FILE:
        return 'ROCm %s is a legacy release: its packages come from %s' % (version, ns.SOURCES_FILE)
    return 'the amdgpu driver is not wanted on this host (rocm_kernel_driver %s, %s)' % (
        stack['kernel_driver'], 'a container' if (node.get('gpu_pci') or {}).get('in_container') else 'bare metal')


def unused_key_reason(signed, default):
    """Why a stream's key goes: none of the files it signs is wanted (for the legacy key: nor the driver's)."""
    stream = 'a ROCm Core SDK' if default['stream'] == 'core' else 'a legacy'
    driver = ' and the amdgpu driver is not wanted here' if ns.AMDGPU_SOURCES_FILE in signed else ''
    return 'no source of this host names it any more (ROCm %s is %s release%s)' % (default['version'], stream, driver)


def plan(node, wanted, stack, host=None, previous=None):
    """wanted: state (present|absent), base_url, key_url, key_fingerprints, keyring, amdgpu_version, architecture,
    pin_origin, pin_priority; core_base_url, core_key_url ('' for the release table's), core_key_fingerprints,
    core_keyring, core_pin_origin.

    Returns the Plan with: contents {path: content} of every wanted file, files (those that differ now), remove
    [paths], signing_keys [{keyring, key_url, fingerprints, state}], key {keyring: install|keep|remove}, refresh,
    refresh_scope (sources|all), and each change with its reason.
    """
    result = Plan('repo')
    files = node.get('files') or {}
    keyrings = node.get('keyrings') or {}
    result.update(files={}, contents={}, remove=[], signing_keys=[], key={}, refresh=False, refresh_scope='sources',
                  apply=None)
    default = rocm_release.release(stack['version'])

    if wanted.get('state', 'present') == 'absent' or stack['install_source'] == 'distro':
        why = ('rocm_repo_state is absent' if wanted.get('state') == 'absent'
               else "rocm_install_source is distro: AMD's sources must not mix with the distribution's ROCm")
        for path in MANAGED:
            if (files.get(path) or {}).get('exists'):
                result['remove'].append(path)
                result.change('remove %s' % path, why)
        for key, _signed in signing_keys(wanted, default):
            if (keyrings.get(key['keyring']) or {}).get('exists'):
                result['signing_keys'].append({'keyring': key['keyring'], 'state': 'absent'})
                result['key'][key['keyring']] = 'remove'
                result.change('remove the signing key %s' % key['keyring'], why)
        result['apply'] = 'absent' if result['changes'] else None
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
    for path in MANAGED:
        current = files.get(path) or {}
        if path in wanted_files:
            if not file_matches(current, wanted_files[path]):
                result['files'][path] = wanted_files[path]
                result.change('write %s' % path, 'missing' if not current.get('exists') else
                              'its content, owner or mode differs from what is wanted'
                              if current.get('type') == 'file' else 'it is a %s, not a file' % current.get('type'))
        elif current.get('exists'):
            result['remove'].append(path)
            result.change('remove %s' % path, removal_reason(path, stack, node, default['version']))

    # Each stream's key where a wanted file names it; the other one goes with the last file that used it.
    for key, signed in signing_keys(wanted, default):
        path = key['keyring']
        if any(name in wanted_files for name in signed):
            result['signing_keys'].append(dict(key, state='present'))
            change = key_change(keyrings.get(path),
                                set(normalize_fingerprint(fpr) for fpr in key['fingerprints']))
            result['key'][path] = 'install' if change else 'keep'
            if change:
                result.change(change[0] % path, change[1])
        elif (keyrings.get(path) or {}).get('exists'):
            result['signing_keys'].append({'keyring': path, 'state': 'absent'})
            result['key'][path] = 'remove'
            result.change('remove the signing key %s' % path, unused_key_reason(signed, default))

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
