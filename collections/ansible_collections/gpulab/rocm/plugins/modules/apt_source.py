#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: apt_source
short_description: An apt repository's signing keys, sources and pin, changed as one transaction with its list refresh
version_added: 0.2.0
description:
  - Installs each signing key after checking its fingerprint (nothing is written before every key matches), writes
    the sources and preferences files (one-line C(.list) or deb822 C(.sources)), and refreshes apt's lists of those
    sources only. The other sources of the host are neither refreshed nor touched.
  - Several keyrings change in the one transaction (O(keys)), so a source that moves to another repository gets
    its new key and loses the old one together, and a failed refresh puts both back.
  - Before anything is written, apt reads the new sources together with the host's other sources (C(apt-cache policy)
    over a private copy, no cache written); a set apt refuses, such as a lab's own list for the same repository with
    another C(signed-by) ("Conflicting values set for option Signed-By"), is refused naming both files, and nothing
    is changed.
  - A failed refresh puts back the previous keys, sources and pin and fails with apt's reason; it says that apt works
    again only after C(apt-cache policy) read the host's sources and lists, and the restored sources' lists were
    refreshed.
  - apt-get update does not wait for apt's lists lock (C(/var/lib/apt/lists/lock), held by apt-daily's update); the
    module waits for it up to O(lock_timeout), and a message names the lock and the process holding it.
  - While it changes them, the previous files are kept in a journal; a run that was killed half way is finished by
    the next run, whose transaction starts from the journal (the last state apt accepted).
  - With O(state=absent), removes the files and every keyring it is given (O(keyring) and those of O(keys)).
author:
  - gpulab.rocm contributors (@gpulab)
options:
  state:
    description: V(present) writes, V(absent) removes.
    type: str
    choices: [present, absent]
    default: present
  key_url:
    description:
      - URL of the signing key of O(keyring) (armored or binary). Downloaded only when the keyring is missing or holds
        anything but the trusted public keys, at most O(key_max_bytes) of it. Required with O(keyring) when
        O(state=present).
      - The file must hold exactly trusted public keys with their own subkeys, signatures and user ids; anything
        else (a secret key, another key, other packets) is refused before anything is written.
    type: str
  fingerprints:
    description: Trusted primary-key fingerprints of O(keyring); the keyring must hold only these.
    type: list
    elements: str
    default: []
  keyring:
    description:
      - Path of the binary keyring the sources name with C(signed-by), for one key; O(keys) gives more. With
        O(state=present), one of O(keyring) and O(keys) is required.
    type: path
  keys:
    description:
      - Signing keys, each checked like O(key_url) and O(fingerprints) before anything is written, and installed in
        the same transaction as the files; with O(keyring), one more.
    type: list
    elements: dict
    default: []
    version_added: 0.3.0
    suboptions:
      keyring:
        description: Path of the binary keyring the sources name with C(signed-by).
        type: path
        required: true
      key_url:
        description: URL of the signing key (armored or binary), as O(key_url); required with O(keys[].state=present).
        type: str
      fingerprints:
        description: Trusted primary-key fingerprints; the keyring must hold only these. Required with
          O(keys[].state=present).
        type: list
        elements: str
        default: []
      state:
        description: V(absent) removes the keyring in the same transaction (no source uses it any more).
        type: str
        choices: [present, absent]
        default: present
  files:
    description: Files to write, path to content; paths must be under C(/etc/apt/sources.list.d/) or
      C(/etc/apt/preferences.d/).
    type: dict
    default: {}
  remove:
    description: Files to remove (same folders); keyrings are removed through O(keys) or O(state=absent).
    type: list
    elements: path
    default: []
  refresh:
    description:
      - When to refresh apt's lists of the sources in O(files). V(auto) when a file or a key changed, or apt has
        no list for one of the sources; V(always); V(never).
    type: str
    choices: [auto, always, never]
    default: auto
  refresh_scope:
    description:
      - V(sources) refreshes the lists of the sources in O(files) only; V(all) refreshes every source of the host
        (a host whose apt never refreshed its lists).
    type: str
    choices: [sources, all]
    default: sources
  validate_certs:
    description: Verify TLS certificates when downloading the key.
    type: bool
    default: true
  timeout:
    description: Seconds to wait for the key download.
    type: int
    default: 30
  key_max_bytes:
    description: Largest key file accepted (a signing key is a few KiB).
    type: int
    default: 1048576
  update_retries:
    description: Attempts of the list refresh before the change is rolled back.
    type: int
    default: 3
  lock_timeout:
    description: Seconds to wait for another process's apt lists lock or dpkg lock.
    type: int
    default: 60
attributes:
  check_mode:
    support: full
    description: Checks the keys and compares every file, then reports what would change and whether the lists
      would be refreshed, without writing or refreshing anything.
  diff_mode:
    support: full
    description: One diff per changed file (a keyring by its fingerprints).
notes:
  - The journal is C(/var/lib/gpulab-rocm/apt-source.journal) (root only).
'''

EXAMPLES = r'''
- name: AMD's ROCm repository
  gpulab.rocm.apt_source:
    key_url: https://repo.example.com/rocm/rocm.gpg.key
    fingerprints: [CA8BB4727A47B4D09B4EE8969386B48A1A693C5C]
    keyring: /etc/apt/keyrings/rocm.gpg
    files:
      /etc/apt/sources.list.d/rocm.list: |
        deb [arch=amd64 signed-by=/etc/apt/keyrings/rocm.gpg] https://repo.example.com/rocm/apt/6.2.4 jammy main

- name: The ROCm Core SDK's repository beside the amdgpu driver's, each with its own key
  gpulab.rocm.apt_source:
    keys:
      - keyring: /etc/apt/keyrings/amdrocm.gpg
        key_url: https://stable.repo.amd.com/rocm/gpg/packages.gpg
        fingerprints: [D0F004A0025A1145C7807FCD0701EAC4D5E02107]
      - keyring: /etc/apt/keyrings/rocm.gpg
        key_url: https://repo.radeon.com/rocm/rocm.gpg.key
        fingerprints: [CA8BB4727A47B4D09B4EE8969386B48A1A693C5C]
    files:
      /etc/apt/sources.list.d/amdrocm-stable.sources: |
        Types: deb
        URIs: https://stable.repo.amd.com/rocm/core/packages/ubuntu2404/
        Suites: stable
        Components: main
        Architectures: amd64
        Signed-By: /etc/apt/keyrings/amdrocm.gpg
      /etc/apt/sources.list.d/amdgpu.list: |
        deb [arch=amd64 signed-by=/etc/apt/keyrings/rocm.gpg] https://repo.radeon.com/amdgpu/31.50/ubuntu noble main
    remove: [/etc/apt/sources.list.d/rocm.list]
'''

RETURN = r'''
apt_works:
  description: After a failed refresh and the rollback, whether apt read the host's sources and lists again
    (C(apt-cache policy)).
  returned: when a refresh failed
  type: bool
conflicts:
  description: When apt refuses the new sources with the host's others, each conflict apt named (option, uri, suite,
    values, the files that name that source).
  returned: when the sources are refused
  type: list
  elements: dict
changed_files:
  description: The files (and keyrings) written or removed.
  returned: always
  type: list
  elements: str
refreshed:
  description: Whether apt's lists of the sources were refreshed.
  returned: always
  type: bool
fingerprints:
  description: Fingerprints of the keys downloaded, of every keyring downloaded in this run.
  returned: when a key was downloaded
  type: list
  elements: str
keyrings:
  description: Each keyring whose key was downloaded, with the fingerprints of its keys.
  returned: when a key was downloaded
  type: dict
  version_added: 0.3.0
'''

import base64
import json
import os
import shutil
import tempfile
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpulab.rocm.plugins.module_utils.host import node_state as ns
from ansible_collections.gpulab.rocm.plugins.module_utils.apt.download import bounded_download
from ansible_collections.gpulab.rocm.plugins.module_utils.apt.openpgp import (
    expired_keys, primary_fingerprints, trusted_fingerprints, trusted_keyring,
)
from ansible_collections.gpulab.rocm.plugins.module_utils.apt.apt_errors import classify, describe_lock, lock_held
from ansible_collections.gpulab.rocm.plugins.module_utils.apt import sources_check as sc
from ansible_collections.gpulab.rocm.plugins.module_utils.host.root_files import write_atomic

ALLOWED_DIRS = ('/etc/apt/sources.list.d/', '/etc/apt/preferences.d/')
# Where the host's sources are read from (the unit tests point these at a folder of their own).
HOST_SOURCES_LIST = sc.SOURCES_LIST
HOST_SOURCES_D = sc.SOURCES_D
C_LOCALE = {'LANG': 'C', 'LC_ALL': 'C'}


def read(path):
    """(content bytes, mode) of a path, or (None, None); a symlink counts as a file to replace, not to follow."""
    try:
        info = os.lstat(path)
    except OSError:
        return None, None
    if not os.path.isfile(path) or os.path.islink(path):
        return b'', None
    with open(path, 'rb') as handle:
        return handle.read(), info.st_mode & 0o7777


def write(path, content, mode=0o644):
    write_atomic(path, content, mode)


def remove(path):
    if os.path.lexists(path):
        os.unlink(path)


def key_is_trusted(data, trusted):
    """Whether a keyring on disk holds exactly trusted public keys (what trusted_keyring would write)."""
    if not data:
        return False
    try:
        return trusted_keyring(data, trusted) == data
    except ValueError:
        return False


def download_key(module, url, trusted):
    """The checked binary keyring from the key URL; fails before anything is written."""
    raw = bounded_download(module, url, limit=module.params['key_max_bytes'], timeout=module.params['timeout'],
                           limit_option='key_max_bytes')
    try:
        keyring = trusted_keyring(raw, trusted)
    except ValueError as exc:
        module.fail_json(msg='The key file at %s was refused: %s. Nothing was changed.' % (url, exc), url=url,
                         fingerprints=getattr(exc, 'fingerprints', []), trusted=trusted)
    return keyring, primary_fingerprints(keyring)


class Journal(object):
    """The state before a change: written before the first file changes, removed once apt accepted the change or
    the previous state is back. Its presence at the start of a run means a run was killed half way."""

    def __init__(self, path=ns.APT_JOURNAL):
        self.path = path

    def load(self):
        try:
            with open(self.path) as handle:
                data = json.load(handle)
        except (IOError, OSError, ValueError):
            return None
        return dict((path, (base64.b64decode(item['content']) if item['content'] is not None else None,
                            item.get('mode'))) for path, item in data['files'].items())

    def save(self, previous):
        data = {'files': dict((path, {'content': base64.b64encode(content).decode('ascii')
                                      if content is not None else None, 'mode': mode})
                              for path, (content, mode) in previous.items())}
        write_atomic(self.path, json.dumps(data).encode('ascii'), mode=0o600, dir_mode=0o700)

    def clear(self):
        remove(self.path)


def failure_line(line):
    """A line of apt-get update that means a source was not refreshed (apt may still exit 0 for it). Other warnings,
    such as a download performed unsandboxed, are not failures."""
    line = line.strip()
    return line.startswith(('E:', 'Err:')) or (line.startswith('W:') and any(
        text in line for text in ('Failed to fetch', 'failed to download', 'GPG error', 'is not signed',
                                  'NO_PUBKEY', 'not valid yet', 'is expired')))


def host_sources():
    """{path as apt knows it: text} of the host's sources.list and the *.list / *.sources files of sources.list.d."""
    found = {}
    paths = [(HOST_SOURCES_LIST, sc.SOURCES_LIST)]
    try:
        paths += [(os.path.join(HOST_SOURCES_D, name), sc.SOURCES_D + name) for name in sorted(os.listdir(HOST_SOURCES_D))
                  if sc.is_sources_file(name)]
    except OSError:
        pass
    for path, name in paths:
        if os.path.isfile(path):
            with open(path, 'rb') as handle:
                found[name] = handle.read().decode('utf-8', 'replace')
    return found


def apt_reads(module, sources):
    """(ok, output) of apt reading exactly these sources ({path: text}) in a private folder: apt-cache policy with an
    empty lists folder and no cache written; the output names the host's paths."""
    workdir = tempfile.mkdtemp(prefix='gpulab-apt-check-')
    try:
        parts, lists = os.path.join(workdir, 'parts'), os.path.join(workdir, 'lists')
        os.makedirs(parts)
        os.makedirs(os.path.join(lists, 'partial'))
        source_list = os.path.join(workdir, 'sources.list')
        with open(source_list, 'w') as handle:
            handle.write(sources.get(sc.SOURCES_LIST, ''))
        for path, text in sources.items():
            if path.startswith(sc.SOURCES_D):
                with open(os.path.join(parts, os.path.basename(path)), 'w') as handle:
                    handle.write(text)
        rc, stdout, stderr = module.run_command(sc.argv(source_list, parts + '/', lists + '/'), environ_update=C_LOCALE)
        output = sc.real_paths(stdout + '\n' + stderr, {source_list: sc.SOURCES_LIST, parts + '/': sc.SOURCES_D})
        return not sc.failed(rc, output), output
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def apt_works(module):
    """(ok, output): whether apt reads the host's real sources and lists (apt-cache policy, no cache written)."""
    rc, stdout, stderr = module.run_command(sc.works_argv(), environ_update=C_LOCALE)
    output = stdout + '\n' + stderr
    return not sc.failed(rc, output), output


def check_sources(module, files, remove_paths):
    """Refuses, before anything is written, sources apt would not read together with the host's other sources."""
    host = host_sources()
    new = dict((path, content.decode('utf-8', 'replace')) for path, content in files.items())
    after = sc.after_change(host, new, remove_paths)
    ok, output = apt_reads(module, after)
    if ok:
        return
    written = [path for path in after if path in new]
    ok_before, output_before = apt_reads(module, host)
    foreign = sc.foreign_files(output, after, written)
    lines = sc.error_lines(output)
    if ok_before:
        module.fail_json(
            msg='apt would not read the new sources together with the host\'s other sources, and every apt command on '
                'the host would fail from then on: %s (apt: %s). Nothing was changed. Remove or fix %s (a lab\'s own '
                'list for the same repository: keep one of the two, or give both the same signed-by keyring), or '
                'change the repository variables so the two do not overlap, then run again.'
                % (sc.explain(output, after, written), lines[0] if lines else 'no message',
                   ', '.join(foreign) or 'the other file'),
            conflicts=sc.conflicts(output, after), files=foreign, apt_output=output[-4000:])
    module.fail_json(
        msg='apt cannot read the host\'s apt sources already, before this run changes anything: %s. The new sources do '
            'not fix that (%s). Nothing was changed. Fix %s (apt-get update shows the same), then run again.'
            % (sc.explain(output_before, host), sc.explain(output, after, written),
               ', '.join(sc.foreign_files(output_before, host, ())) or 'the file apt names'),
        conflicts=sc.conflicts(output_before, host), files=sc.foreign_files(output_before, host, ()),
        apt_output=output_before[-4000:])


def refresh(module, source_files, scope='sources'):
    """apt-get update of the given sources files only (scope 'all': of every source); (ok, output).

    apt-get update fails at once while another update holds apt's lists lock (it does not wait, whatever
    DPkg::Lock::Timeout says): that is waited for, up to lock_timeout, without counting as an attempt."""
    workdir = tempfile.mkdtemp(prefix='gpulab-apt-')
    try:
        for index, path in enumerate(source_files):
            shutil.copy(path, os.path.join(workdir, '%02d-%s' % (index, os.path.basename(path))))
        argv = ['apt-get', 'update', '--quiet', '-o', 'DPkg::Lock::Timeout=%d' % module.params['lock_timeout']]
        if scope != 'all':
            argv += ['-o', 'Dir::Etc::SourceList=/dev/null', '-o', 'Dir::Etc::SourceParts=%s' % workdir,
                     '-o', 'APT::Get::List-Cleanup=0']
        deadline = time.time() + module.params['lock_timeout']
        attempt = 0
        while True:
            rc, stdout, stderr = module.run_command(argv, environ_update=C_LOCALE)
            output = stdout + '\n' + stderr
            failed = rc != 0 or any(failure_line(line) for line in output.splitlines())
            if not failed:
                return True, output
            if classify(output)['kind'] == 'lock':
                if time.time() >= deadline:
                    return False, output
                time.sleep(max(0.1, min(2, deadline - time.time())))
                continue
            attempt += 1
            if attempt >= max(1, module.params['update_retries']):
                return False, output
            time.sleep(min(2 ** attempt, 8))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def apt_line(output):
    """apt's own line about the failure: its E:/W: lines name the URL and the reason, an Err: line the URL alone."""
    lines = [line.strip() for line in output.splitlines()]
    found = ([line for line in lines if line.startswith(('E:', 'W:'))] + [line for line in lines if line.startswith('Err:')])
    return found[0] if found else (lines[-1] if lines else 'no message')


def sources_of(paths):
    return [path for path in paths if path.startswith('/etc/apt/sources.list.d/') and os.path.isfile(path)]


def describe(path, content, keyrings):
    if content is None:
        return '(absent)\n'
    if path in keyrings:
        try:
            return 'fingerprints: %s\n' % ' '.join(primary_fingerprints(content))
        except ValueError as exc:
            return 'unreadable key: %s\n' % exc
    return content.decode('utf-8', 'replace')


RESTORED_OK = 'The previous sources, pin and key were put back, and apt reads the host\'s sources again'


def restored_state(module, output, restored_paths):
    """(apt works, what the rollback left), said only as far as apt shows it: apt-cache policy must read the host's
    sources and lists again before the message says apt works, and the restored sources' lists must refresh."""
    reads, reads_output = apt_works(module)
    if not reads:
        return False, ('The previous sources, pin and key were put back, but apt still cannot read the host\'s sources '
                       '(%s): apt is not working on this host. Fix what apt names there, then run again.'
                       % sc.explain(reads_output, host_sources()))
    held = lock_held(output) if classify(output)['kind'] == 'lock' else None
    if held:
        return True, ('%s (apt-cache policy). apt-get update never took %s, so it changed no list; run again once that '
                      'process is done.' % (RESTORED_OK, describe_lock(held)))
    restored_sources = sources_of(restored_paths)
    if not restored_sources:
        return True, ('The previous sources, pin and key were put back (this run\'s were removed: there were none '
                      'before), and apt reads the host\'s sources again (apt-cache policy), so apt is as it was before '
                      'this run.')
    back, again = refresh(module, restored_sources)
    if back:
        return True, ('%s (apt-cache policy) and refreshes the restored sources\' lists, so apt works for the rest '
                      'of the host as before.' % RESTORED_OK)
    return True, ('%s (apt-cache policy), but refreshing the restored sources\' lists failed too: %s'
                  % (RESTORED_OK, classify(again)['reason']))


def keys_of(module):
    """The keyrings to change, [{'keyring', 'key_url', 'fingerprints', 'state'}]: those of `keys`, and the one of the
    single-key options; fails, before anything is written, on one that cannot be checked."""
    params = module.params
    keys = [dict(item) for item in params['keys']]
    if params['keyring']:
        keys.insert(0, dict(keyring=params['keyring'], key_url=params['key_url'], fingerprints=params['fingerprints'],
                            state='present'))
    if not keys and params['state'] == 'present':
        module.fail_json(msg='Give the keyring the sources name (keyring, or keys). Nothing was changed.')
    seen = set()
    for key in keys:
        if not os.path.isabs(key['keyring']):
            module.fail_json(msg='keyring must be an absolute path, got %s. Nothing was changed.' % key['keyring'])
        if key['keyring'] in seen:
            module.fail_json(msg='The keyring %s is given twice. Nothing was changed.' % key['keyring'])
        seen.add(key['keyring'])
        if params['state'] == 'present' and key['state'] == 'present' and not (key['key_url'] and key['fingerprints']):
            module.fail_json(msg='The keyring %s needs key_url and fingerprints to be installed. Nothing was changed.'
                                 % key['keyring'])
    return keys


def wanted_keyring(module, key, on_disk):
    """The bytes the keyring must hold: the trusted key on disk, else the checked download. Fails before anything is
    written. Returns (bytes, fingerprints downloaded or None)."""
    try:
        trusted = trusted_fingerprints(key['fingerprints'])
    except ValueError as exc:
        module.fail_json(msg='The trusted fingerprint list of %s is not usable: %s. Nothing was changed.'
                             % (key['keyring'], exc))
    # A trusted key on disk is kept, unless it has expired: apt then fails with EXPKEYSIG until the key the vendor
    # re-issued with a new expiry (same fingerprint) is fetched.
    if key_is_trusted(on_disk, trusted) and not expired_keys(on_disk, time.time()):
        return on_disk, None
    data, fingerprints = download_key(module, key['key_url'], trusted)
    expired = expired_keys(data, time.time())
    if expired:
        module.fail_json(msg='The key at %s has expired (%s), like the one in %s: apt refuses what it signed '
                             '(EXPKEYSIG). The vendor, or your mirror, has not published the key with a new expiry '
                             'yet; update the copy at %s and run again. Nothing was changed.'
                             % (key['key_url'], ', '.join(expired), key['keyring'], key['key_url']))
    return data, fingerprints


def main():
    key_options = dict(
        keyring=dict(type='path', required=True),
        key_url=dict(type='str', no_log=False),
        fingerprints=dict(type='list', elements='str', default=[], no_log=False),
        state=dict(type='str', choices=['present', 'absent'], default='present'),
    )
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type='str', choices=['present', 'absent'], default='present'),
            key_url=dict(type='str', no_log=False),
            fingerprints=dict(type='list', elements='str', default=[], no_log=False),
            keyring=dict(type='path'),
            keys=dict(type='list', elements='dict', default=[], options=key_options, no_log=False),
            files=dict(type='dict', default={}),
            remove=dict(type='list', elements='path', default=[]),
            refresh=dict(type='str', choices=['auto', 'always', 'never'], default='auto'),
            refresh_scope=dict(type='str', choices=['sources', 'all'], default='sources'),
            validate_certs=dict(type='bool', default=True),
            timeout=dict(type='int', default=30),
            key_max_bytes=dict(type='int', default=1048576, no_log=False),
            update_retries=dict(type='int', default=3),
            lock_timeout=dict(type='int', default=60),
        ),
        supports_check_mode=True,
    )
    params = module.params
    present = params['state'] == 'present'
    files = dict((path, content.encode('utf-8')) for path, content in (params['files'] or {}).items())
    for path in list(files) + params['remove']:
        if not path.startswith(ALLOWED_DIRS) or '/../' in path or path.endswith('/'):
            module.fail_json(msg='%s is not an apt sources or preferences file (under %s). Nothing was changed.'
                                 % (path, ' or '.join(ALLOWED_DIRS)))
    keys = keys_of(module)
    keyrings = [key['keyring'] for key in keys]

    journal = Journal()
    interrupted = journal.load()
    paths = sorted(set(list(files) + params['remove'] + keyrings))
    current = dict((path, read(path)) for path in paths)

    desired = dict((path, files.get(path)) for path in paths)
    result = dict(changed=False, changed_files=[], refreshed=False)
    downloaded = {}
    # Every key is checked (and downloaded where needed) before anything is written.
    for key in keys:
        if present and key['state'] == 'present':
            desired[key['keyring']], fingerprints = wanted_keyring(module, key, current[key['keyring']][0])
            if fingerprints is not None:
                downloaded[key['keyring']] = fingerprints
        else:
            desired[key['keyring']] = None
    if downloaded:
        result['keyrings'] = downloaded
        result['fingerprints'] = [fpr for key in keys for fpr in downloaded.get(key['keyring'], [])]

    changed = [path for path in paths
               if desired[path] != current[path][0] or (desired[path] is not None and current[path][1] != 0o644)]
    lists_missing = [item for item in ns.apt_lists('/', dict(
        (path, content.decode('utf-8', 'replace')) for path, content in files.items()
        if path.startswith('/etc/apt/sources.list.d/')))['sources'] if not item['exists']]
    wants_refresh = present and (params['refresh'] == 'always' or params['refresh'] == 'auto' and bool(
        changed or lists_missing or interrupted is not None))
    result['changed_files'] = changed
    if not changed and not wants_refresh and interrupted is None:
        module.exit_json(**result)
    result['changed'] = bool(changed) or interrupted is not None or wants_refresh
    result['diff'] = [dict(before_header=path, after_header=path, before=describe(path, current[path][0], keyrings),
                           after=describe(path, desired[path], keyrings)) for path in changed]
    if present and any(path == sc.SOURCES_LIST or path.startswith(sc.SOURCES_D) for path in changed + params['remove']):
        check_sources(module, files, params['remove'])
    if module.check_mode:
        result['refreshed'] = wants_refresh
        module.exit_json(**result)

    # The state to go back to: what apt last accepted (the journal of a killed run), else what is there now.
    previous = interrupted if interrupted is not None else current
    for path in paths:
        previous.setdefault(path, current[path])
    journal.save(previous)
    for path in changed:
        if desired[path] is None:
            remove(path)
        else:
            write(path, desired[path])

    if wants_refresh:
        ok, output = refresh(module, sources_of(files), params['refresh_scope'])
        if not ok:
            for path, (content, mode) in previous.items():
                if content is None:
                    remove(path)
                else:
                    write(path, content, mode or 0o644)
            journal.clear()
            works, state = restored_state(module, output, [path for path, (content, _mode) in previous.items()
                                                           if content])
            uris = ['%s %s' % (line['uri'], line['suite']) for path, content in sorted(files.items())
                    for line in ns.sources_of(path, content.decode('utf-8', 'replace'))]
            module.fail_json(msg='The apt list refresh failed after writing the sources (%s). %s %s'
                                 % (', '.join(uris), classify(output)['reason'], state),
                             stdout=output[-4000:], restored=True, apt_works=works)
        result['refreshed'] = True
    journal.clear()
    module.exit_json(**result)


if __name__ == '__main__':
    main()
