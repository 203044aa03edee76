# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpulab.rocm.metrics_file_sd (documentation: metrics_file_sd.yml beside this file): a thin wrapper of
module_utils/planning/plan_metrics.py's file_sd_targets, over the hosts' variables."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible.module_utils.parsing.convert_bool import boolean
from ansible_collections.gpulab.rocm.plugins.module_utils.planning import plan_metrics as impl


def metrics_file_sd(hosts):
    try:
        return impl.file_sd_targets([{
            'address': host.get('rocm_metrics_target_address') or host['inventory_hostname'],
            'node_class': host.get('rocm_metrics_node_class') or '',
            'listen_address': host.get('rocm_metrics_listen_address') or ':9100',
        } for host in hosts if boolean(host.get('rocm_metrics_enabled') or False, strict=False)])
    except (KeyError, IndexError, ValueError) as exc:
        raise AnsibleFilterError('gpulab.rocm.metrics_file_sd: %s' % exc)


class FilterModule(object):
    def filters(self):
        return {'metrics_file_sd': metrics_file_sd}
