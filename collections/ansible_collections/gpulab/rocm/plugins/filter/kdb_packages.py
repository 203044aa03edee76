# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpulab.rocm.kdb_packages (documentation: kdb_packages.yml beside this file): a thin wrapper of module_utils/gpu_support.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.gpulab.rocm.plugins.module_utils import gpu_support as impl


def kdb_packages(gfx_targets, rocm_version):
    try:
        return impl.kdb_packages(gfx_targets, rocm_version)
    except ValueError as exc:
        raise AnsibleFilterError('gpulab.rocm.kdb_packages: %s' % exc)


class FilterModule(object):
    def filters(self):
        return {'kdb_packages': kdb_packages}
