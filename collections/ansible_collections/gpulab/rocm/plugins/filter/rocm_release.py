# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpulab.rocm.rocm_release (documentation: rocm_release.yml beside this file): a thin wrapper of module_utils/rocm_release.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.gpulab.rocm.plugins.module_utils import rocm_release as impl


def rocm_release(version):
    try:
        return impl.release(version)
    except ValueError as exc:
        raise AnsibleFilterError('gpulab.rocm.rocm_release: %s' % exc)


class FilterModule(object):
    def filters(self):
        return {'rocm_release': rocm_release}
