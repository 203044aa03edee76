#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: controller_files
short_description: Write files on the controller, without running a module
version_added: 0.2.0
description:
  - Writes each file of O(files) into the controller folder O(dest) when its content differs, atomically, from the
    Ansible process itself (an action plugin), so nothing runs on any host. For reports the controller produces.
  - Check mode writes nothing and reports what would change, with the diff.
author:
  - gpulab.rocm contributors (@gpulab)
options:
  dest:
    description: The controller folder; made when missing.
    type: path
    required: true
  files:
    description: File name (no folders) to content.
    type: dict
    required: true
  mode:
    description: Mode of the files written.
    type: str
    default: '0644'
attributes:
  action:
    support: full
    description: Runs entirely in the action plugin, on the controller.
  check_mode:
    support: full
    description: Writes nothing and reports which files would change.
  diff_mode:
    support: full
    description: One diff per file that would change.
'''

EXAMPLES = r'''
- name: Write the fleet report
  gpulab.rocm.controller_files:
    dest: "{{ playbook_dir }}/../fleet-report"
    files:
      fleet-report.json: "{{ report | to_nice_json }}"
  run_once: true
'''

RETURN = r'''
changed_files:
  description: The paths written (or that would be, in check mode).
  returned: always
  type: list
  elements: str
'''
