# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpulab.rocm.validation_failures (documentation: validation_failures.yml beside this file): a thin wrapper of module_utils/planning/validation.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.gpulab.rocm.plugins.module_utils.planning import validation as impl


def validation_failures(report, thresholds, unknown_model='report', scale=1.0):
    try:
        return impl.failures(report, thresholds, unknown_model, scale)
    except ValueError as exc:
        raise AnsibleFilterError('gpulab.rocm.validation_failures: %s' % exc)


class FilterModule(object):
    def filters(self):
        return {'validation_failures': validation_failures}
