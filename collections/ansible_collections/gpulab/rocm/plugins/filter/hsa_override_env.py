# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpulab.rocm.hsa_override_env (documentation: hsa_override_env.yml beside this file): a thin wrapper of module_utils/gpu_support.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.gpulab.rocm.plugins.module_utils import gpu_support as impl


def hsa_override_env(gpus, rocm_version):
    try:
        return impl.hsa_override_env(gpus, rocm_version)[0]
    except ValueError as exc:
        raise AnsibleFilterError('gpulab.rocm.hsa_override_env: %s' % exc)


class FilterModule(object):
    def filters(self):
        return {'hsa_override_env': hsa_override_env}
