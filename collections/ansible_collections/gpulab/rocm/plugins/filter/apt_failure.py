# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpulab.rocm.apt_failure (documentation: apt_failure.yml beside this file): a thin wrapper of module_utils/planning/rocm_packages.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.gpulab.rocm.plugins.module_utils.planning import rocm_packages as impl


def apt_failure(message):
    try:
        return impl.apt_failure(message)
    except ValueError as exc:
        raise AnsibleFilterError('gpulab.rocm.apt_failure: %s' % exc)


class FilterModule(object):
    def filters(self):
        return {'apt_failure': apt_failure}
