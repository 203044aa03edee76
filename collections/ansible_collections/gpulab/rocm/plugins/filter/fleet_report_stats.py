# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpulab.rocm.fleet_report_stats (documentation: fleet_report_stats.yml beside this file): a thin wrapper of module_utils/fleet_report.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.gpulab.rocm.plugins.module_utils import fleet_report as impl


def fleet_report_stats(report):
    try:
        return impl.report_stats(report)
    except ValueError as exc:
        raise AnsibleFilterError('gpulab.rocm.fleet_report_stats: %s' % exc)


class FilterModule(object):
    def filters(self):
        return {'fleet_report_stats': fleet_report_stats}
