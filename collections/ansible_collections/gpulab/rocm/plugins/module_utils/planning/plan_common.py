# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What every phase's plan shares: the plan itself (changes with their reasons) and how a file is compared."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib


class PlanError(ValueError):
    """The wanted state cannot be planned (an invalid value, or a host not fit for the change); the message names it
    and the fix. problems: several problems of one phase, each with its fix (the gate numbers each one); the message
    is then all of them."""

    def __init__(self, message, problems=None):
        super(PlanError, self).__init__(message)
        self.problems = list(problems) if problems else [message]


class Plan(dict):
    """A phase's plan: {'phase', 'changes': [{'change', 'reason'}], 'notices', ...what the role applies}."""

    def __init__(self, phase):
        super(Plan, self).__init__(phase=phase, changes=[], notices=[])

    def change(self, what, why):
        self['changes'].append({'change': what, 'reason': why})

    def warn(self, text):
        self['notices'].append(text)


def sha1(text):
    return hashlib.sha1(text.encode('utf-8')).hexdigest()


def file_matches(current, content, mode='0644', uid=0, gid=0):
    """Whether a probed file (node_state.describe_file) is a regular file with this content, owner and mode."""
    current = current or {}
    return (current.get('type') == 'file' and current.get('sha1') == sha1(content)
            and (mode is None or current.get('mode') == mode)
            and (uid is None or current.get('uid') == uid) and (gid is None or current.get('gid') == gid))


def user_become_method(node):
    """How a task becomes a GPU user to write that user's files: sudo where the host has it, else su (root runs
    either without a password). A probe from before this key was read assumes sudo, as the roles always did."""
    return 'ansible.builtin.sudo' if (node.get('os') or {}).get('sudo', True) else 'ansible.builtin.su'
