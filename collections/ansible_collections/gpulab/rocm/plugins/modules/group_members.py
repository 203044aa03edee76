#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: group_members
short_description: System groups and the users added to them, in one module run
version_added: 0.2.0
description:
  - Creates each group of O(groups) as a system group where it is missing (C(groupadd --system)), then adds each
    user of O(members) to the groups named for it (C(gpasswd --add)), in one module run (M(ansible.builtin.user)
    runs once per user).
  - It only adds, leaving a user's other groups as they are (C(append) in M(ansible.builtin.user) terms).
  - Names are checked before anything changes; every command gets its arguments as a list, never through a shell.
author:
  - gpulab.rocm contributors (@gpulab)
options:
  groups:
    description: Groups that must exist (made as system groups where missing).
    type: list
    elements: str
    default: []
  members:
    description: User name to the groups it must be in; every user must exist.
    type: dict
    default: {}
attributes:
  check_mode:
    support: full
    description: Reports the groups it would create and the memberships it would add, without changing them.
  diff_mode:
    support: full
    description: The groups created and, per user, the groups added.
seealso:
  - module: ansible.builtin.user
  - module: ansible.builtin.group
'''

EXAMPLES = r'''
- name: GPU access for two users
  gpulab.rocm.group_members:
    groups: [video, render]
    members:
      alice: [video, render]
      bob: [render]
'''

RETURN = r'''
created:
  description: The groups made.
  returned: always
  type: list
  elements: str
added:
  description: User to the groups it was added to.
  returned: always
  type: dict
'''

import grp
import os
import pwd
import re

from ansible.module_utils.basic import AnsibleModule

NAME_RE = re.compile(r'^[A-Za-z_][A-Za-z0-9_.-]{0,31}\$?\Z')


def member_of(user, group):
    entry = pwd.getpwnam(user)
    info = grp.getgrnam(group)
    return entry.pw_gid == info.gr_gid or user in info.gr_mem or group in [
        grp.getgrgid(gid).gr_name for gid in os.getgrouplist(user, entry.pw_gid)]


def main():
    module = AnsibleModule(
        argument_spec=dict(
            groups=dict(type='list', elements='str', default=[]),
            members=dict(type='dict', default={}),
        ),
        supports_check_mode=True,
    )
    groups = module.params['groups']
    members = dict((user, list(wanted or [])) for user, wanted in module.params['members'].items())
    names = set(groups) | set(members) | set(g for wanted in members.values() for g in wanted)
    bad = sorted(name for name in names if not isinstance(name, str) or not NAME_RE.match(name))
    if bad:
        module.fail_json(msg='Not user or group names: %s. Nothing was changed.' % ', '.join(map(repr, bad)))
    unknown = []
    for user in members:
        try:
            pwd.getpwnam(user)
        except KeyError:
            unknown.append(user)
    if unknown:
        module.fail_json(msg='These users do not exist: %s. Create them first. Nothing was changed.'
                             % ', '.join(sorted(unknown)))

    created = []
    for group in sorted(set(groups) | set(g for wanted in members.values() for g in wanted)):
        try:
            grp.getgrnam(group)
        except KeyError:
            created.append(group)
    added = {}
    for user, wanted in sorted(members.items()):
        missing = [group for group in wanted if group in created or not member_of(user, group)]
        if missing:
            added[user] = missing
    result = dict(changed=bool(created or added), created=created, added=added)
    result['diff'] = dict(before='', after=''.join(
        ['group %s (system)\n' % group for group in created]
        + ['%s: + %s\n' % (user, ', '.join(g)) for user, g in added.items()]))
    if module.check_mode or not result['changed']:
        module.exit_json(**result)
    for group in created:
        module.run_command(['groupadd', '--system', group], check_rc=True)
    for user, wanted in sorted(added.items()):
        for group in wanted:
            module.run_command(['gpasswd', '--add', user, group], check_rc=True)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
