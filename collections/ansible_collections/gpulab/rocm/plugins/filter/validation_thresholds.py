# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpulab.rocm.validation_thresholds (documentation: validation_thresholds.yml beside this file): a thin wrapper of module_utils/planning/validation.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.gpulab.rocm.plugins.module_utils.planning import validation as impl


def validation_thresholds(report, thresholds):
    try:
        return impl.model_thresholds(report, thresholds)[1] or {}
    except ValueError as exc:
        raise AnsibleFilterError('gpulab.rocm.validation_thresholds: %s' % exc)


class FilterModule(object):
    def filters(self):
        return {'validation_thresholds': validation_thresholds}
