#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: plan
short_description: Plan one phase of a ROCm node from the node's probe and the wanted state
version_added: 0.2.0
description:
  - The first call on a host runs M(gpulab.rocm.node_probe) (one read-only module run) and keeps the result for the
    rest of the run as the host variable C(gpulab_node); later calls plan from it without touching the host.
  - Plans the phase O(phase) from the node, the phase's wanted state O(wanted) (the calling role's own variables)
    and the stack-wide inputs, which it reads from the host's variables (C(rocm_version), C(rocm_versions),
    C(rocm_install_source), C(rocm_gpu_users), C(rocm_kernel_driver), C(rocm_apt_suite),
    C(rocm_expected_gpu_count); their defaults are in the README's "Stack-wide inputs").
  - Returns what the phase must change, each change with its reason, and what the role applies. Never changes the
    host; an invalid wanted state fails with a message naming the variable and the fix, before any change.
  - Runs on the controller; the decisions are the pure functions of the collection's module_utils (planner.py).
author:
  - gpulab.rocm contributors (@gpulab)
options:
  phase:
    description: The phase to plan; required unless O(forget) is true.
    type: str
    choices: [preflight, repo, driver, sdk, access, env, containers, verify, report, slurm_node, slurm, metrics]
  forget:
    description:
      - Forget this host's probe instead of planning, so that the next plan reads the host anew. For a change that
        failed half way (a package run that stopped), after which no plan can trust what was read before.
    type: bool
    default: false
  wanted:
    description: The phase's wanted state (its keys per phase are in the roles' vars and in module_utils/plan_*.py).
    type: dict
    default: {}
  probe:
    description: Arguments of M(gpulab.rocm.node_probe) for this host (for example C(sysfs_root)); kept for the
      later probes of the run.
    type: dict
    default: {}
  refresh:
    description: Probe sections to read again before planning (V(all) for everything), after a phase changed them.
    type: list
    elements: str
    default: []
attributes:
  action:
    support: full
    description: Plans on the controller; the only module it runs on the host is the read-only
      M(gpulab.rocm.node_probe).
  check_mode:
    support: full
    description: Plans the same in check mode; it never changes the host.
  diff_mode:
    support: none
    description: Nothing changes, so there is no diff; the plan lists the changes the role would make.
seealso:
  - module: gpulab.rocm.node_probe
'''

EXAMPLES = r'''
- name: Plan the ROCm apt sources
  gpulab.rocm.plan:
    phase: repo
    wanted:
      state: present
      base_url: https://repo.radeon.com
      key_url: https://repo.radeon.com/rocm/rocm.gpg.key
      key_fingerprints: [CA8BB4727A47B4D09B4EE8969386B48A1A693C5C]
      keyring: /etc/apt/keyrings/rocm.gpg
      architecture: amd64
      pin_origin: repo.radeon.com
      pin_priority: 600
  register: repo_plan

- name: Show what would change, and why
  ansible.builtin.debug:
    msg: "{{ repo_plan.changes }}"
'''

RETURN = r'''
phase:
  description: The phase planned.
  returned: always
  type: str
changes:
  description: What the phase changes, each as C(change) and C(reason); empty when the host is converged.
  returned: always
  type: list
  elements: dict
notices:
  description: Things worth knowing that change nothing (Ansible keeps the key warnings for its own).
  returned: always
  type: list
  elements: str
stack:
  description: The stack-wide inputs, with their defaults applied.
  returned: always
  type: dict
msg:
  description: The changes in one line.
  returned: always
  type: str
'''
