#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: reprobe
short_description: Have the next plan read this host anew, all of it or some probe sections
version_added: 0.4.0
description:
  - M(gpulab.rocm.plan) keeps this host's probe for the rest of the run (the host fact C(gpulab_node)). After a task
    changed the host in a way no plan foresaw, this marks the probe as out of date, so that the next plan reads it
    anew; it never touches the host.
  - Without O(sections), the whole probe is forgotten (for a change that failed half way, a package run that
    stopped, after which no plan can trust what was read before). The plan pass's record stays, so a refusal later
    still says what the run changed before it.
  - With O(sections), only those are read again by the next plan that needs one of them (the health check's last
    result, C(health), after running the check).
author:
  - gpulab.rocm contributors (@gpulab)
options:
  sections:
    description: The probe sections to read again; empty for the whole probe.
    type: list
    elements: str
    default: []
attributes:
  action:
    support: full
    description: Runs entirely in the action plugin, on the controller.
  check_mode:
    support: full
    description: The same in check mode; it never changes the host.
  diff_mode:
    support: none
    description: Nothing changes.
seealso:
  - module: gpulab.rocm.plan
'''

EXAMPLES = r'''
- name: Read the health check's result anew at the next plan
  gpulab.rocm.reprobe:
    sections: [health]

- name: Forget the probe after a package run that stopped half way
  gpulab.rocm.reprobe:
'''

RETURN = r'''
msg:
  description: What the next plan reads anew.
  returned: always
  type: str
'''
