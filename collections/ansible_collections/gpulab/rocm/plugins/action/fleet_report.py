# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpulab.rocm.fleet_report: build the fleet report from each host's record, write it on the controller, record
its per-host figures for AWX and show its summary, in one task (docs in plugins/modules/fleet_report.py). Glue only:
the report is module_utils/planning/fleet_report.py's, the page Ansible's own template lookup renders, the files are written
as gpulab.rocm.controller_files writes them."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible.errors import AnsibleActionFail, AnsibleError
from ansible.plugins.action import ActionBase
from ansible.plugins.loader import lookup_loader

from ansible_collections.gpulab.rocm.plugins.module_utils.planning import fleet_report as impl, plan_pass as passes


class ActionModule(ActionBase):

    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        _valid, args = self.validate_argument_spec(argument_spec=dict(
            dest=dict(type='path', required=True),
            record_var=dict(type='str', required=True),
            hosts=dict(type='list', elements='str'),
            template=dict(type='str', default='fleet-report.html.j2'),
            stats_key=dict(type='str', default=''),
        ))
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        hosts = args['hosts'] if args['hosts'] is not None else task_vars.get('ansible_play_hosts_all') or []
        try:
            report = impl.report_fleet(task_vars.get('hostvars') or {}, hosts, args['record_var'])
        except ValueError as exc:
            raise AnsibleActionFail('gpulab.rocm.fleet_report: %s' % exc)
        # Unreachable hosts have no record: report_fleet lists them with a problem.
        template = lookup_loader.get('ansible.builtin.template', loader=self._loader, templar=self._templar)
        try:
            page = template.run([args['template']], variables=task_vars, template_vars={'__rocm_report': report})[0]
        except AnsibleError as exc:
            raise AnsibleActionFail('gpulab.rocm.fleet_report: the page %s: %s' % (args['template'], exc))
        # The files hold no timestamp: they change only when the fleet does (changed=0 on a second run).
        files = {'fleet-report.json': json.dumps(report, indent=2, sort_keys=True, separators=(',', ': ')) + '\n',
                 'fleet-report.html': page}
        # Check mode writes nothing and reports no change: a drift job over a converged fleet stays changed=0.
        if not self._task.check_mode:
            result.update(self._execute_controller_files(args['dest'], files, task_vars))
        else:
            result.update(changed=False, changed_files=[])
        page_path = args['dest'] + '/fleet-report.html' if not self._task.check_mode else 'not written in check mode'
        problems = dict((entry['name'], entry['problems']) for entry in report['hosts'] if entry['problems'])
        result.update(report=page_path, summary=report['summary'], problems=problems,
                      msg=_summary_line(page_path, report['summary']))
        # Shown without -v: the summary, then each host's problems (a probe's text: control characters escaped).
        self._display.display(passes.printable(result['msg']))
        for name, lines in sorted(problems.items()):
            self._display.display(passes.printable('  %s: %s' % (name, '; '.join(lines))))
        if args['stats_key']:
            # As set_stats does (per_host false): the key holds every host's figures (docs/fleet-report.md).
            result['ansible_stats'] = {'data': {args['stats_key']: impl.report_stats(report)},
                                       'per_host': False, 'aggregate': True}
        return result

    def _execute_controller_files(self, dest, files, task_vars):
        """gpulab.rocm.controller_files' action, in this process: changed, changed_files and the diffs."""
        task = self._task.copy()
        task.args = dict(dest=dest, files=files)
        action = self._shared_loader_obj.action_loader.get(
            'gpulab.rocm.controller_files', task=task, connection=self._connection, play_context=self._play_context,
            loader=self._loader, templar=self._templar, shared_loader_obj=self._shared_loader_obj)
        reply = action.run(task_vars=task_vars)
        return dict((key, reply[key]) for key in ('changed', 'changed_files', 'diff'))


def _summary_line(page, summary):
    return ('fleet report (%s): %d host(s), %d GPU(s) (%d AMD seen by ROCm), %d host(s) with problems, %d unreachable, '
            '%d degraded PCIe link(s)' % (page, summary['hosts'], summary['gpus'], summary['amd_gpus'],
                                          summary['hosts_with_problems'], summary['unreachable'],
                                          summary['degraded_links']))
