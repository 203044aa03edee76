# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The modules over real rocminfo / rocm-smi / amd-smi binaries, when GPULAB_ROCM_TOOLS names their folder.

Nothing is patched but the module arguments. On a host without a GPU the tools report their no-GPU errors and
the modules must turn those into gpu_count 0 with an error; on a GPU host they must list the GPUs. Example
(Debian 12's packages unpacked with dpkg -x, as docs/performance-facts.md describes):
  GPULAB_ROCM_TOOLS=/tmp/rocmdeb/root/usr/bin LD_LIBRARY_PATH=/tmp/rocmdeb/root/usr/lib:... pytest ...
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible_collections.gpulab.rocm.plugins.modules import amd_smi_facts, rocm_smi_facts, rocminfo_facts
from ansible_collections.gpulab.rocm.tests.unit.gpu_facts_helpers import run_module

TOOLS = os.environ.get('GPULAB_ROCM_TOOLS')
NO_GPU_KINDS = ('driver_not_loaded', 'permission_denied', 'no_kfd_device', 'kfd_invalid_argument',
                'kfd_open_failed', 'hsa_out_of_resources', 'hsa_error', 'no_gpu_agent', 'no_gpu')

pytestmark = pytest.mark.skipif(not TOOLS, reason='set GPULAB_ROCM_TOOLS to a folder with real ROCm tools')


@pytest.mark.parametrize('main, tool, key', [(rocminfo_facts.main, 'rocminfo', 'rocminfo'),
                                             (rocm_smi_facts.main, 'rocm-smi', 'rocm_smi'),
                                             (amd_smi_facts.main, 'amd-smi', 'amd_smi')])
def test_real_tool(main, tool, key):
    path = os.path.join(TOOLS, tool)
    if not os.path.exists(path):
        pytest.skip('{0} is not in {1}'.format(tool, TOOLS))
    result, runner = run_module(main, {'executable': path}, 'real')
    assert runner.call_count >= 1 and result['failed'] is False, result.get('msg')
    facts = result['ansible_facts'][key]
    assert facts['present'] is True and facts['source'] == path
    if facts['gpu_count'] == 0:
        assert facts['error_kind'] in NO_GPU_KINDS and facts['error']
    else:
        assert facts['error'] is None and all(gpu.get('gfx_target') for gpu in facts['gpus'])
