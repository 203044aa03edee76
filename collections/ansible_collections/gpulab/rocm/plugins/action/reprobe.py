# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpulab.rocm.reprobe: mark this host's probe, or some of its sections, as out of date (docs in
plugins/modules/reprobe.py), so that the next gpulab.rocm.plan reads them anew. No module runs."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.plugins.action import ActionBase

from ansible_collections.gpulab.rocm.plugins.action.plan import this_run_node


class ActionModule(ActionBase):

    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        _valid, args = self.validate_argument_spec(argument_spec={
            'sections': dict(type='list', elements='str', default=[]),
        })
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        run, node = this_run_node(task_vars)
        if not args['sections']:
            # The host changed in a way no plan foresaw (a failed package run): the next plan probes it anew. The
            # plan pass stays: a refusal later still says what the run changed before it.
            result.update(changed=False, msg='the probe of this host is forgotten; the next plan reads it anew',
                          ansible_facts={'gpulab_node': {'run': run, 'sections': [], 'pass': node.get('pass') or {}}})
            return result
        sections = [name for name in node.get('sections') or [] if name not in args['sections']]
        result.update(changed=False, msg='read again when next needed: %s' % ', '.join(args['sections']),
                      ansible_facts={'gpulab_node': dict(node, run=run, sections=sections)})
        return result
