# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpulab.rocm.health_failures (documentation: health_failures.yml beside this file): a thin wrapper of module_utils/node/health.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible.errors import AnsibleFilterError
from ansible_collections.gpulab.rocm.plugins.module_utils.node import health as impl


def health_failures(result):
    if isinstance(result, str):
        if not result.strip():
            return []
        try:
            result = json.loads(result)
        except ValueError as exc:
            raise AnsibleFilterError('gpulab.rocm.health_failures: not the JSON of gpulab-gpu-health --json: %s' % exc)
    if not isinstance(result, dict) or not isinstance(result.get('checks'), list):
        raise AnsibleFilterError('gpulab.rocm.health_failures: a result of gpulab-gpu-health --json has a list '
                                 '"checks"; got %r' % (type(result).__name__,))
    return ['health check: %s' % item.get('reason') for item in impl.failing(result['checks'])]


class FilterModule(object):
    def filters(self):
        return {'health_failures': health_failures}
