# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What rocm_access changes: the GPU groups, the GPU users' memberships, and the block at the end of adduser.conf
that gives new users the groups. Pure; adduser.conf's new content is built here from the probed one."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpulab.rocm.plugins.module_utils.host import node_state as ns
from ansible_collections.gpulab.rocm.plugins.module_utils.planning.plan_common import Plan, PlanError, sha1

# The phase's contract (docs/plan-contract.md): the probe sections it reads, the keys of its result that its
# role reads, and how the plan pass treats it; planner.REGISTRY collects it.
PHASE = {
    'name': 'access',
    'role': 'rocm_access',
    'changes_host': True,
    'sections': ('files', 'users'),
    'keys': {
        'create_groups': 'GPU groups to create.',
        'memberships': 'User to the groups to add them to.',
        'files': 'The whole new /etc/adduser.conf by its path, where it changes (written in the same module run as '
                 'the groups).',
    },
}


BEGIN = '# BEGIN gpulab.rocm'
END = '# END gpulab.rocm'
SUPERSEDED = '  # superseded by the gpulab.rocm block below'
_GROUP_RE = re.compile(r'^[a-z_][a-z0-9_-]{0,31}\Z')
_ASSIGN_RE = re.compile(r'^\s*(ADD_)?EXTRA_GROUPS\s*=')
_EXTRA_RE = re.compile(r'^\s*EXTRA_GROUPS\s*=\s*"?([^"\n]*)"?')


def _split_block(lines):
    """(lines before the block, the block's lines or None, lines after it)."""
    if BEGIN in lines and END in lines and lines.index(BEGIN) < lines.index(END):
        start, end = lines.index(BEGIN), lines.index(END)
        return lines[:start], lines[start + 1:end], lines[end + 1:]
    return lines, None, []


def adduser_conf(text, groups, present=True):
    """adduser.conf with the gpulab.rocm block last: ADD_EXTRA_GROUPS=1 and EXTRA_GROUPS holding the groups the
    admin configured (from the lines the block supersedes, kept as comments) plus ours. present=False restores
    the superseded lines and drops the block. Returns the new text (equal to text when nothing changes)."""
    trailing_newline = text.endswith('\n')
    lines = text.split('\n')
    if trailing_newline:
        lines = lines[:-1]
    before, _block, after = _split_block(lines)
    # Lines this project commented out come back; without the block, they are the admin's settings again.
    restored = [line[1:-len(SUPERSEDED)] if line.startswith('#') and line.endswith(SUPERSEDED) else line
                for line in before + after]
    if not present:
        return '\n'.join(restored) + ('\n' if restored else '')
    # Only the last EXTRA_GROUPS assignment takes effect: keep its groups and add ours.
    admin_groups = []
    for line in restored:
        match = _EXTRA_RE.match(line)
        if match:
            admin_groups = match.group(1).split()
    merged = []
    for group in admin_groups + list(groups):
        if group not in merged:
            merged.append(group)
    body = [('#' + line + SUPERSEDED) if _ASSIGN_RE.match(line) else line for line in restored]
    block = [BEGIN, 'ADD_EXTRA_GROUPS=1', 'EXTRA_GROUPS="%s"' % ' '.join(merged), END]
    return '\n'.join(body + block) + '\n'


def plan(node, wanted, stack, host=None, previous=None):
    """wanted: state (present|absent), groups, adduser_defaults.

    Returns the Plan: create_groups, memberships {user: [groups to add]}, files ({path: new content} of
    adduser.conf where it changes).
    """
    result = Plan('access')
    groups = list(wanted.get('groups') or [])
    bad = [group for group in groups if not isinstance(group, str) or not _GROUP_RE.match(group)]
    if bad:
        raise PlanError('rocm_access_groups holds names that are not group names: %s.'
                        % ', '.join(repr(group) for group in bad))
    result.update(create_groups=[], memberships={}, files={})
    present = wanted.get('state', 'present') == 'present'
    probed_groups = node.get('groups') or {}
    users = node.get('users') or {}
    if present:
        for group in groups:
            if not (probed_groups.get(group) or {}).get('exists'):
                result['create_groups'].append(group)
                result.change('create the system group %s' % group, 'missing (minimal images have no render group)')
        # A user that does not exist is preflight's problem (it stops the host at the gate); planned alone, the
        # role leaves that user out rather than refuse twice.
        for user in [user for user in stack['gpu_users'] if (users.get(user) or {}).get('exists')]:
            missing = [group for group in groups if group not in (users[user].get('groups') or [])]
            if missing:
                result['memberships'][user] = missing
                result.change('add %s to %s' % (user, ', '.join(missing)), 'GPU access (/dev/kfd, /dev/dri)')

    conf = (node.get('files') or {}).get(ns.ADDUSER_CONF) or {}
    if conf.get('type') == 'file' and 'content' in conf:
        with_block = present and wanted.get('adduser_defaults', True)
        new = adduser_conf(conf['content'], groups, with_block)
        if sha1(new) != conf.get('sha1'):
            result['files'][ns.ADDUSER_CONF] = new
            result.change('%s the gpulab.rocm block of %s' % ('write' if with_block else 'remove', ns.ADDUSER_CONF),
                          'new users made with adduser get the GPU groups' if with_block else
                          'rocm_access_state is absent' if not present else 'rocm_access_adduser_defaults is false')
    return result
