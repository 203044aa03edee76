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
deprecated:
  removed_in: 1.0.0
  why: No role calls it; the roles make their groups and memberships with M(gpulab.rocm.system_files), whose
    C(groups) and C(members) options do the same work in the same module run as the phase's files.
  alternative: Use M(gpulab.rocm.system_files) with its C(groups) and C(members) options.
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

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpulab.rocm.plugins.module_utils.host import groups as system_groups


def main():
    module = AnsibleModule(
        argument_spec=dict(
            groups=dict(type='list', elements='str', default=[]),
            members=dict(type='dict', default={}),
        ),
        supports_check_mode=True,
    )
    try:
        created, added = system_groups.missing(module.params['groups'], module.params['members'])
    except ValueError as exc:
        module.fail_json(msg='%s. Nothing was changed.' % exc)
    result = dict(changed=bool(created or added), created=created, added=added,
                  diff=dict(before='', after=system_groups.describe(created, added)))
    if not module.check_mode:
        system_groups.add(module.run_command, created, added)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
