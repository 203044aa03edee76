# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""System groups and the users added to them: what is missing, checked before anything changes, and the commands
that add it (groupadd, gpasswd, each with its arguments as a list). One implementation for the modules that manage
groups (group_members, system_files)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import grp
import os
import pwd
import re

NAME_RE = re.compile(r'^[A-Za-z_][A-Za-z0-9_.-]{0,31}\$?\Z')


def member_of(user, group):
    entry = pwd.getpwnam(user)
    info = grp.getgrnam(group)
    return entry.pw_gid == info.gr_gid or user in info.gr_mem or group in [
        grp.getgrgid(gid).gr_name for gid in os.getgrouplist(user, entry.pw_gid)]


def missing(groups, members):
    """(created, added): the groups to make (system groups) and, per user, the groups to add it to, for groups that
    must exist and members {user: [group, ...]} (a group a user is named for must exist too). Raises ValueError
    naming what is not a user or group name, or the users that do not exist; nothing is changed then."""
    members = dict((user, list(wanted or [])) for user, wanted in (members or {}).items())
    names = set(groups or []) | set(members) | set(g for wanted in members.values() for g in wanted)
    bad = sorted(repr(name) for name in names if not isinstance(name, str) or not NAME_RE.match(name))
    if bad:
        raise ValueError('Not user or group names: %s' % ', '.join(bad))
    unknown = []
    for user in members:
        try:
            pwd.getpwnam(user)
        except KeyError:
            unknown.append(user)
    if unknown:
        raise ValueError('These users do not exist: %s. Create them first' % ', '.join(sorted(unknown)))
    created = []
    for group in sorted(set(groups or []) | set(g for wanted in members.values() for g in wanted)):
        try:
            grp.getgrnam(group)
        except KeyError:
            created.append(group)
    added = {}
    for user, wanted in sorted(members.items()):
        lacking = [group for group in wanted if group in created or not member_of(user, group)]
        if lacking:
            added[user] = lacking
    return created, added


def describe(created, added):
    """The change as the lines of a diff's after side."""
    return ''.join(['group %s (system)\n' % group for group in created]
                   + ['%s: + %s\n' % (user, ', '.join(groups)) for user, groups in added.items()])


def add(run_command, created, added):
    """Make the groups and add the memberships of missing() (run_command: AnsibleModule's, check_rc)."""
    for group in created:
        run_command(['groupadd', '--system', group], check_rc=True)
    for user, groups in sorted(added.items()):
        for group in groups:
            run_command(['gpasswd', '--add', user, group], check_rc=True)
