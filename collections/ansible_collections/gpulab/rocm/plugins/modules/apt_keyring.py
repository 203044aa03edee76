#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: apt_keyring
short_description: Install an apt signing key as a dearmored keyring, only if its fingerprint is trusted
version_added: 0.1.0
deprecated:
  removed_in: 1.0.0
  why: No role calls it; rocm_repo runs M(gpulab.rocm.apt_source), which checks the key the same way and changes the
    key, the sources and the pin as one transaction with their list refresh.
  alternative: Use M(gpulab.rocm.apt_source).
description:
  - Downloads an OpenPGP public key (armored or binary), checks that every primary key in it has a fingerprint
    from O(fingerprints), and only then writes it dearmored to O(dest) for use with C(signed-by=).
  - The file must hold exactly trusted public keys with their own subkeys, signatures, user ids and user attributes.
    Secret keys and secret subkeys, keys whose fingerprint is not trusted, any other packet (literal, compressed or
    encrypted data, markers, trust packets), subkeys or signatures before any primary key, text outside the
    armor or bytes after the last packet, and armor whose CRC-24 line does not match are refused, naming the packet
    (number, byte, tag).
  - Armored keys may have armor headers (C(Version:), C(Comment:) lines), CRLF line ends and several public key blocks.
  - At most O(max_size) bytes are read from O(url); a bigger answer is refused.
  - Nothing is written when the download fails or the key file is refused; the error names the fingerprint or
    packet found and what to change.
  - Fingerprints, not file hashes, are checked because vendors re-issue the same key with a new expiry (AMD's ROCm
    key was re-issued several times), which changes the file but not the fingerprint.
author:
  - gpulab.rocm contributors (@gpulab)
options:
  url:
    description: Where to download the key (http, https or file). Required with O(state=present).
    type: str
  dest:
    description: Path of the dearmored keyring, for example C(/etc/apt/keyrings/rocm.gpg).
    type: path
    required: true
  fingerprints:
    description:
      - Trusted primary-key fingerprints, 40 (v4) or 64 (v5/v6) hex digits; spaces and a C(0x) prefix are ignored.
      - Required with O(state=present).
    type: list
    elements: str
  state:
    description: V(absent) removes O(dest).
    type: str
    choices: [present, absent]
    default: present
  mode:
    description: File mode of O(dest); its directory is created with mode C(0755).
    type: str
    default: '0644'
  validate_certs:
    description: Verify the server's TLS certificate.
    type: bool
    default: true
  timeout:
    description: Download timeout in seconds.
    type: int
    default: 30
  max_size:
    description:
      - The most bytes read from O(url). A signing key is a few KiB; a bigger answer (an error page, a wrong URL, an
        endless stream) is refused without reading more than one byte over this limit, and nothing is written.
    type: int
    default: 1048576
attributes:
  check_mode:
    support: full
    description: Downloads and checks the key as usual, then reports whether O(dest) would change without writing it.
  diff_mode:
    support: full
    description: The keyring's primary fingerprints and SHA-256, before and after.
notes:
  - The key is downloaded by the managed host, so a lab mirror only the hosts can reach works.
'''

EXAMPLES = r'''
- name: Install AMD's ROCm signing key
  gpulab.rocm.apt_keyring:
    url: https://repo.radeon.com/rocm/rocm.gpg.key
    dest: /etc/apt/keyrings/rocm.gpg
    fingerprints:
      - CA8BB4727A47B4D09B4EE8969386B48A1A693C5C
'''

RETURN = r'''
fingerprints:
  description: Primary-key fingerprints found in the downloaded key.
  returned: state=present and the key was downloaded
  type: list
  elements: str
  sample: [CA8BB4727A47B4D09B4EE8969386B48A1A693C5C]
dest:
  description: The keyring path.
  returned: always
  type: str
  sample: /etc/apt/keyrings/rocm.gpg
'''

import hashlib
import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpulab.rocm.plugins.module_utils.apt.download import DEFAULT_LIMIT, bounded_download
from ansible_collections.gpulab.rocm.plugins.module_utils.host.root_files import write_atomic
from ansible_collections.gpulab.rocm.plugins.module_utils.apt.openpgp import (
    primary_fingerprints,
    trusted_fingerprints,
    trusted_keyring,
)


def describe(data):
    """A short, diffable description of a keyring's content."""
    if data is None:
        return '(no keyring)\n'
    try:
        fprs = primary_fingerprints(data)
    except ValueError as exc:
        fprs = ['unreadable: %s' % exc]
    return 'fingerprints: %s\nsha256: %s\n' % (' '.join(fprs), hashlib.sha256(data).hexdigest())


def read_current(path):
    if not os.path.exists(path):
        return None
    with open(path, 'rb') as handle:
        return handle.read()


def main():
    module = AnsibleModule(
        argument_spec=dict(
            url=dict(type='str'),
            dest=dict(type='path', required=True),
            fingerprints=dict(type='list', elements='str', no_log=False),
            state=dict(type='str', choices=['present', 'absent'], default='present'),
            mode=dict(type='str', default='0644'),
            validate_certs=dict(type='bool', default=True),
            timeout=dict(type='int', default=30),
            max_size=dict(type='int', default=DEFAULT_LIMIT),
        ),
        required_if=[('state', 'present', ['url', 'fingerprints'])],
        supports_check_mode=True,
    )
    dest = module.params['dest']
    current = read_current(dest)
    result = dict(changed=False, dest=dest)

    if module.params['state'] == 'absent':
        if current is not None:
            result['changed'] = True
            result['diff'] = dict(before=describe(current), after='(no keyring)\n')
            if not module.check_mode:
                os.unlink(dest)
        module.exit_json(**result)

    try:
        trusted = trusted_fingerprints(module.params['fingerprints'])
    except ValueError as exc:
        module.fail_json(msg='The trusted fingerprint list is not usable: %s. Nothing was changed.' % exc)
    url = module.params['url']
    raw = bounded_download(module, url, limit=module.params['max_size'], timeout=module.params['timeout'])
    try:
        keyring = trusted_keyring(raw, trusted)
    except ValueError as exc:
        module.fail_json(msg='The key file at %s was refused: %s. Nothing was changed.' % (url, exc),
                         url=url, fingerprints=getattr(exc, 'fingerprints', []), trusted=trusted)
    result['fingerprints'] = primary_fingerprints(keyring)

    if current != keyring:
        result['changed'] = True
        result['diff'] = dict(before=describe(current), after=describe(keyring))
        if not module.check_mode:
            # Mode and owner follow from the file arguments below.
            write_atomic(dest, keyring, owner=None)
    if not module.check_mode and os.path.exists(dest):
        file_args = module.load_file_common_arguments(dict(path=dest, mode=module.params['mode']))
        result['changed'] = module.set_fs_attributes_if_different(file_args, result['changed'])
    module.exit_json(**result)


if __name__ == '__main__':
    main()
