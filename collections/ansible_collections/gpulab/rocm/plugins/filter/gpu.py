# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters over GPU facts: support per ROCm release, HSA overrides, MIOpen kdb packages, CUDA coexistence."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.gpulab.rocm.plugins.module_utils import gpu_support


def _wrap(func):
    def call(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except ValueError as exc:
            raise AnsibleFilterError(str(exc))
    return call


def gfx_support(gfx_target, rocm_version):
    return gpu_support.support(gfx_target, rocm_version)


def hsa_override_env(gpus, rocm_version):
    env, _ = gpu_support.hsa_override_env(gpus, rocm_version)
    return env


def hsa_override_warnings(gpus, rocm_version):
    _, warnings = gpu_support.hsa_override_env(gpus, rocm_version)
    return warnings


class FilterModule(object):
    def filters(self):
        return {
            'amd_gpus': _wrap(gpu_support.amd_gpus),
            'gfx_support': _wrap(gfx_support),
            'hsa_override_env': _wrap(hsa_override_env),
            'hsa_override_warnings': _wrap(hsa_override_warnings),
            'effective_gfx_targets': _wrap(gpu_support.effective_targets),
            'kdb_packages': _wrap(gpu_support.kdb_packages),
            'cuda_coexistence_env': _wrap(gpu_support.cuda_coexistence_env),
        }
