#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: fleet_report
short_description: Write the fleet GPU report of a play's hosts on the controller
version_added: 0.3.0
description:
  - Builds the fleet report (schema in docs/fleet-report.md) from the host record each host of the play registered
    with M(gpulab.rocm.plan) (phase C(report)) in the host variable O(record_var); a host without one (unreachable,
    or failed before) is listed with a problem.
  - Writes C(fleet-report.json) and C(fleet-report.html) (the page rendered from O(template) by Ansible's template
    lookup, with the report as C(__rocm_report)) into O(dest) on the controller, as M(gpulab.rocm.controller_files)
    does, only a file whose content differs, atomically. The files hold no timestamp, so a second run over the same
    fleet changes nothing.
  - Shows the report's summary and each host's problems, and records each host's figures for AWX with O(stats_key).
  - An action plugin, so nothing runs on any host. Run it once, on the controller (C(run_once),
    C(delegate_to=localhost)).
author:
  - gpulab.rocm contributors (@gpulab)
options:
  dest:
    description: The controller folder of the two files; made when missing.
    type: path
    required: true
  record_var:
    description: The host variable that holds each host's registered plan result (phase C(report)) or its record.
    type: str
    required: true
  hosts:
    description: The hosts of the report; by default the play's hosts, C(ansible_play_hosts_all).
    type: list
    elements: str
  template:
    description: The page's template, looked up in the role's C(templates/) as the template lookup does.
    type: str
    default: fleet-report.html.j2
  stats_key:
    description:
      - Record each host's C(gpu_count), C(gfx_targets), C(rocm_version) and C(problems) under this key, one entry
        per host name, as M(ansible.builtin.set_stats) does (C(per_host=false)); empty records nothing.
    type: str
    default: ''
attributes:
  action:
    support: full
    description: Runs entirely in the action plugin, on the controller.
  check_mode:
    support: full
    description: Writes nothing and reports no change (a drift job over a converged fleet stays C(changed=0)); the
      summary and the figures are the same.
  diff_mode:
    support: partial
    description: One diff per file that changes; none in check mode.
'''

EXAMPLES = r'''
- name: Write the fleet report
  gpulab.rocm.fleet_report:
    dest: "{{ playbook_dir }}/../fleet-report"
    record_var: host_record
    stats_key: rocm_report_nodes
  delegate_to: localhost
  run_once: true
'''

RETURN = r'''
changed_files:
  description: The paths written (none in check mode).
  returned: always
  type: list
  elements: str
report:
  description: The page's path, or C(not written in check mode).
  returned: always
  type: str
summary:
  description: The report's summary (hosts, unreachable, hosts_with_problems, gpus, amd_gpus, degraded_links, models).
  returned: always
  type: dict
problems:
  description: Each host with problems, with its problems.
  returned: always
  type: dict
'''
