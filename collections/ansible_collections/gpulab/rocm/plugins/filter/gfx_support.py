# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpulab.rocm.gfx_support (documentation: gfx_support.yml beside this file): a thin wrapper of module_utils/gpu_support.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.gpulab.rocm.plugins.module_utils import gpu_support as impl


def gfx_support(gfx_target, rocm_version):
    try:
        return impl.support(gfx_target, rocm_version)
    except ValueError as exc:
        raise AnsibleFilterError('gpulab.rocm.gfx_support: %s' % exc)


class FilterModule(object):
    def filters(self):
        return {'gfx_support': gfx_support}
