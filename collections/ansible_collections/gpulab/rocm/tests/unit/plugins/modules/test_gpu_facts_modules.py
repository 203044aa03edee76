# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The four facts modules, run in-process with their command runner and get_bin_path patched.

The runner answers with real captured outputs (and the exit status the capture notes give), so these tests
exercise the modules' glue: which commands run, fallbacks, no-GPU handling, fail_on_no_gpu, src, check mode.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest

from ansible_collections.gpulab.rocm.plugins.module_utils.parsers.rocm_smi import JSON_ARGS
from ansible_collections.gpulab.rocm.plugins.modules import (
    amd_smi_facts, gpu_pci_facts, rocm_smi_facts, rocminfo_facts,
)
from ansible_collections.gpulab.rocm.tests.unit.gpu_facts_helpers import fixture, fixture_path, run_module
from ansible_collections.gpulab.rocm.tests.unit.sysfs_tree import add_function

ROCMINFO = '/opt/rocm/bin/rocminfo'
ROCM_SMI = '/opt/rocm/bin/rocm-smi'
AMD_SMI = '/opt/rocm/bin/amd-smi'


def facts_of(result, key):
    assert result['changed'] is False
    return result['ansible_facts'][key]


# --- rocminfo_facts -------------------------------------------------------------------------------------------

def test_rocminfo_listing():
    text = fixture('rocminfo/gfx90a-mi250x-gcd-4numa-epyc7a53-rocm5.7.txt')
    result, runner = run_module(rocminfo_facts.main, {}, [(0, text, '')], bin_path=ROCMINFO)
    runner.assert_called_once()
    assert runner.call_args[0][0] == [ROCMINFO]
    facts = facts_of(result, 'rocminfo')
    assert result['failed'] is False
    assert (facts['present'], facts['source'], facts['rc']) == (True, ROCMINFO, 0)
    assert (facts['gpu_count'], facts['gfx_targets'], facts['error']) == (1, ['gfx90a'], None)
    assert facts['gpus'][0]['marketing_name'] == 'AMD Instinct MI250X'


def test_rocminfo_tool_missing_is_not_a_failure():
    result, runner = run_module(rocminfo_facts.main, {'fail_on_no_gpu': True}, [], bin_path=None)
    facts = facts_of(result, 'rocminfo')
    assert result['failed'] is False and runner.call_count == 0
    assert (facts['present'], facts['gpu_count'], facts['error_kind']) == (False, 0, 'tool_missing')
    assert "install ROCm (role rocm_sdk; the legacy stream's rocminfo package" in facts['error']
    assert '/opt/rocm/core/bin' in facts['error']


def test_rocminfo_debian_no_gpu_rc1():
    # Debian's rocminfo without a GPU: coloured message on stdout, exit status 1, lsmod complaint on stderr.
    stdout = fixture('rocminfo/debian12-rocminfo5.2.3-no-gpu-ansi-colour-stdout.txt')
    result, _runner = run_module(rocminfo_facts.main, {}, [(1, stdout, 'sh: 1: lsmod: not found\n')],
                                 bin_path=ROCMINFO)
    facts = facts_of(result, 'rocminfo')
    assert result['failed'] is False
    assert (facts['present'], facts['rc'], facts['gpu_count'], facts['error_kind']) == (
        True, 1, 0, 'driver_not_loaded')


def test_rocminfo_fail_on_no_gpu_fails_with_the_reason():
    text = fixture('rocminfo/fail-kfd-permission-denied-vega-fe-rocm4.1.txt')
    result, _runner = run_module(rocminfo_facts.main, {'fail_on_no_gpu': True}, [(1, '', text)], bin_path=ROCMINFO)
    assert result['failed'] is True
    assert 'render and video groups' in result['msg'] and 'new login' in result['msg']
    assert result['ansible_facts']['rocminfo']['error_kind'] == 'permission_denied'


def test_rocminfo_garbage_fails_without_traceback():
    result, _runner = run_module(rocminfo_facts.main, {}, [(0, 'Segmentation fault\n', '')], bin_path=ROCMINFO)
    assert result['failed'] is True
    assert result['msg'].startswith('Cannot read the rocminfo output: this is not rocminfo output')


def test_rocminfo_src_reads_a_saved_output_and_runs_nothing():
    path = fixture_path('rocminfo/gfx908-mi100-plus-gfx1036-igpu-rocm5.7.0.txt')
    result, runner = run_module(rocminfo_facts.main, {'src': path}, [], bin_path=None)
    facts = facts_of(result, 'rocminfo')
    assert runner.call_count == 0
    assert (facts['source'], facts['rc'], facts['gfx_targets']) == (path, None, ['gfx1036', 'gfx908'])


def test_rocminfo_src_missing_file(tmp_path):
    result, _runner = run_module(rocminfo_facts.main, {'src': str(tmp_path / 'none.txt')}, [])
    assert result['failed'] is True and result['msg'].startswith('Cannot read src')


def test_a_src_that_is_not_the_tools_output_fails_naming_the_file(tmp_path):
    path = tmp_path / 'not-rocminfo.txt'
    path.write_text('Segmentation fault\n')
    result, runner = run_module(rocminfo_facts.main, {'src': str(path)}, [])
    assert runner.call_count == 0 and result['failed'] is True
    assert result['msg'].startswith('Cannot read the rocminfo output in %s: this is not rocminfo output' % path)


def test_rocminfo_check_mode_reads_the_same():
    text = fixture('rocminfo/gfx942-mi300x-vf-rocm6.4.0.txt')
    normal, _runner = run_module(rocminfo_facts.main, {}, [(0, text, '')], bin_path=ROCMINFO)
    checked, _runner = run_module(rocminfo_facts.main, {'_ansible_check_mode': True}, [(0, text, '')],
                                  bin_path=ROCMINFO)
    assert checked['ansible_facts'] == normal['ansible_facts']


def test_rocminfo_executable_option():
    # Only the given path resolves: the module must run it, not look rocminfo up on PATH or under /opt/rocm.
    wanted = '/usr/bin/rocminfo'
    result, runner = run_module(rocminfo_facts.main, {'executable': wanted}, [(0, fixture(
        'rocminfo/gfx1030-rx6900xt-rocm6.4.txt'), '')], bin_path=lambda name: name if name == wanted else None)
    assert runner.call_args[0][0] == [wanted]
    facts = facts_of(result, 'rocminfo')
    assert (facts['present'], facts['source'], facts['gpu_count']) == (True, wanted, 1)
    assert facts['gpus'][0]['gfx_target'] == 'gfx1030'


# --- rocm_smi_facts -------------------------------------------------------------------------------------------

def test_rocm_smi_one_json_call():
    out = fixture('rocm-smi/json-telegraf-flags-mi50-32gb-driver5.9.17-card0-only.json')
    result, runner = run_module(rocm_smi_facts.main, {}, [(0, out, '')], bin_path=ROCM_SMI)
    assert runner.call_count == 1 and runner.call_args[0][0] == [ROCM_SMI] + JSON_ARGS
    facts = facts_of(result, 'rocm_smi')
    assert (facts['form'], facts['gpu_count'], facts['driver_version']) == ('json', 1, '5.9.17')
    assert facts['gpus'][0]['pcie_bus'] == '0000:63:00.0'


def test_rocm_smi_json_after_warning_lines():
    out = fixture('rocm-smi/json-a-no-gpus-warning-driver-6.3.6.txt')
    result, _runner = run_module(rocm_smi_facts.main, {}, [(0, out, '')], bin_path=ROCM_SMI)
    facts = facts_of(result, 'rocm_smi')
    assert (facts['gpu_count'], facts['error_kind'], facts['driver_version']) == (0, 'no_gpu', '6.3.6')


def test_rocm_smi_driver_not_initialized_exits_0():
    # Debian's rocm-smi without a GPU: nothing on stdout, the error on stderr, exit status 0.
    err = fixture('rocm-smi/debian12-rocm-smi5.2.3-json-flags-no-gpu-stderr.txt')
    result, runner = run_module(rocm_smi_facts.main, {}, [(0, '', err)], bin_path=ROCM_SMI)
    facts = facts_of(result, 'rocm_smi')
    assert runner.call_count == 1 and result['failed'] is False
    assert (facts['present'], facts['gpu_count'], facts['error_kind']) == (True, 0, 'driver_not_loaded')
    result, _runner = run_module(rocm_smi_facts.main, {'fail_on_no_gpu': True}, [(0, '', err)], bin_path=ROCM_SMI)
    assert result['failed'] is True and 'Driver not initialized' in result['msg']


def test_rocm_smi_falls_back_to_the_table_without_json():
    usage = 'usage: rocm-smi [-h] [-d DEVICE [DEVICE ...]]\nrocm-smi: error: unrecognized arguments: --json\n'
    table = fixture('rocm-smi/default-rocm1.9-two-gpu-igpu-n-a.txt')
    result, runner = run_module(rocm_smi_facts.main, {}, [(2, '', usage), (0, table, '')], bin_path=ROCM_SMI)
    assert [call[0][0] for call in runner.call_args_list] == [[ROCM_SMI] + JSON_ARGS, [ROCM_SMI]]
    facts = facts_of(result, 'rocm_smi')
    assert (facts['form'], facts['gpu_count'], facts['rc']) == ('table', 1, 0)
    assert facts['gpus'][0]['sclk_mhz'] == 852.0


def test_rocm_smi_unreadable_twice_fails_with_both_reasons():
    result, _runner = run_module(rocm_smi_facts.main, {}, [(2, '', 'usage: rocm-smi\n'), (1, 'Killed\n', '')],
                                 bin_path=ROCM_SMI)
    assert result['failed'] is True
    assert 'not rocm-smi output' in result['msg'] and 'with --json' in result['msg']


def test_rocm_smi_missing_tool():
    result, _runner = run_module(rocm_smi_facts.main, {}, [], bin_path=None)
    facts = facts_of(result, 'rocm_smi')
    assert (facts['present'], facts['error_kind']) == (False, 'tool_missing')
    # Optional (the ROCm Core SDK drops it): nothing to install, and the facts that do without it are named.
    assert 'it is optional' in facts['error'] and 'install' not in facts['error']
    assert result['failed'] is False and not result.get('warnings')


@pytest.mark.parametrize('name, form, count', [
    ('showallinfo-a-4x-mi300x-vf-sriov-driver6.7.0.txt', 'text', 4),
    ('csv-showproductname-showmeminfo-vram-showuniqueid-rx6800xt-plus-raphael.txt', 'csv', 2),
    ('default-rocm6.3.3-2x-mi210.txt', 'table', 2),
    ('json-raw-oneline-showtemp-showuse-showpower-meminfo-vram-rx7900xtx.json', 'json', 1),
])
def test_rocm_smi_src_detects_the_form(name, form, count):
    result, runner = run_module(rocm_smi_facts.main, {'src': fixture_path('rocm-smi/' + name)}, [])
    facts = facts_of(result, 'rocm_smi')
    assert runner.call_count == 0 and (facts['form'], facts['gpu_count']) == (form, count)


def test_rocm_smi_src_garbage():
    saved = fixture_path('amd-smi/list-2x-mi210-rocm6.3.3-unique-uuids.txt')
    result, _runner = run_module(rocm_smi_facts.main, {'src': saved}, [])
    assert result['failed'] is True and 'not rocm-smi output' in result['msg']


# --- amd_smi_facts --------------------------------------------------------------------------------------------

def amd_smi_answers(outputs):
    """The runner for amd-smi: {subcommand: (rc, stdout, stderr)}; `firmware` is run as text, the others as JSON."""
    def answer(argv):
        assert argv[0] == AMD_SMI and (argv[-1] == '--json') == (argv[1] != 'firmware')
        return outputs[argv[1]]
    return answer


def test_amd_smi_static_and_metric_merge():
    # Both captured on the same Proxmox host (SOURCES.md); `list` is answered like a version without it.
    outputs = {'static': (0, fixture('amd-smi/static-json-rx6600-navi23-proxmox-bare-array.json'), ''),
               'metric': (0, fixture('amd-smi/metric-json-rx6600-navi23-proxmox-bare-array.json'), ''),
               'list': (2, '', 'usage: amd-smi [-h]  ...\namd-smi: error: argument : invalid choice: \'list\'\n'),
               'firmware': (2, '', 'usage: amd-smi [-h]  ...\namd-smi: error: argument : invalid choice: '
                                   '\'firmware\'\n')}
    result, runner = run_module(amd_smi_facts.main, {}, amd_smi_answers(outputs), bin_path=AMD_SMI)
    assert [call[0][0][1] for call in runner.call_args_list] == ['static', 'metric', 'list', 'firmware']
    facts = facts_of(result, 'amd_smi')
    assert len(result['warnings']) == 2 and not any('invalid choice' in warning for warning in result['warnings'])
    assert all(warning.startswith('Ignored one amd-smi output: this is not amd-smi output')
               for warning in result['warnings'])
    assert (facts['kinds'], facts['gpu_count'], facts['driver_version']) == (['static', 'metric'], 1, '7.0.0-3-pve')
    gpu = facts['gpus'][0]
    assert (gpu['device_id'], gpu['gfx_target'], gpu['max_link_width'], gpu['link_width']) == ('0x73ff', 'gfx1032', 16, 8)


def test_amd_smi_static_and_list_without_metric():
    # Both captured from the same Strix Halo machine (SOURCES.md).
    outputs = {'static': (0, fixture('amd-smi/static-json-strix-halo-gfx1151-bare-array-rocm6.3.json'), ''),
               'list': (0, fixture('amd-smi/list-json-strix-halo-gfx1151-bare-array-rocm6.3.json'), '')}
    result, runner = run_module(amd_smi_facts.main, {'metric': False, 'firmware': False}, amd_smi_answers(outputs),
                                bin_path=AMD_SMI)
    assert [call[0][0][1] for call in runner.call_args_list] == ['static', 'list']
    gpu = facts_of(result, 'amd_smi')['gpus'][0]
    assert (gpu['gfx_target'], gpu['compute_units'], gpu['kfd_id']) == ('gfx1151', 40, 42905)
    assert gpu['uuid_placeholder'] is True


def test_amd_smi_firmware_of_each_gpu():
    # The text `amd-smi firmware` of a 4x MI300A host (issue 4477, SOURCES.md). The other calls answer an empty JSON
    # array (not captures: no other output of that host was posted); firmware alone gives the GPUs and their microcode.
    outputs = {'static': (0, '[]', ''), 'metric': (0, '[]', ''), 'list': (0, '[]', ''),
               'firmware': (0, fixture('amd-smi/firmware-text-4x-mi300a-amdsmi24.7.1-rocm6.3.3.txt'), '')}
    result, runner = run_module(amd_smi_facts.main, {}, amd_smi_answers(outputs), bin_path=AMD_SMI)
    assert runner.call_args_list[-1][0][0] == [AMD_SMI, 'firmware']
    facts = facts_of(result, 'amd_smi')
    assert facts['kinds'] == ['firmware'] and facts['gpu_count'] == 4
    assert [gpu['firmware']['smc'] for gpu in facts['gpus']] == ['0x045567b8'] * 4
    assert facts['gpus'][0]['firmware']['sos'] == '0x00360150'


def test_amd_smi_rc_255_stops_after_the_first_call():
    err = fixture('amd-smi/fail-version-wsl2-driver-not-initialized.txt')
    result, runner = run_module(amd_smi_facts.main, {}, [(255, '', err)], bin_path=AMD_SMI)
    facts = facts_of(result, 'amd_smi')
    assert runner.call_count == 1 and result['failed'] is False
    assert (facts['present'], facts['rc'], facts['gpu_count']) == (True, 255, 0)
    assert facts['error_kind'] == 'driver_not_loaded'
    result, _runner = run_module(amd_smi_facts.main, {'fail_on_no_gpu': True}, [(255, '', err)], bin_path=AMD_SMI)
    assert result['failed'] is True and 'amdgpu' in result['msg']


def test_amd_smi_missing_tool():
    result, runner = run_module(amd_smi_facts.main, {'fail_on_no_gpu': True}, [], bin_path=None)
    facts = facts_of(result, 'amd_smi')
    assert result['failed'] is False and runner.call_count == 0
    assert (facts['present'], facts['gpu_count'], facts['error_kind']) == (False, 0, 'tool_missing')


def test_amd_smi_all_outputs_unreadable():
    result, _runner = run_module(amd_smi_facts.main, {}, [(0, 'garbage', '')] * 4, bin_path=AMD_SMI)
    assert result['failed'] is True and 'not amd-smi output' in result['msg']


def test_amd_smi_src_usage_banner_fails_clearly():
    path = fixture_path('amd-smi/noargs-usage-banner-container-amdsmi25.5.1-rocm6.4.4.txt')
    result, _runner = run_module(amd_smi_facts.main, {'src': path}, [])
    assert result['failed'] is True and 'amd-smi static --json' in result['msg']


def test_amd_smi_src_gpu_data_wrapper(tmp_path):
    saved = tmp_path / 'static.json'
    saved.write_text(json.dumps({'gpu_data': json.loads(fixture(
        'amd-smi/static-json-strix-halo-gfx1151-bare-array-rocm6.3.json'))}))
    facts = facts_of(run_module(amd_smi_facts.main, {'src': str(saved)}, [])[0], 'amd_smi')
    assert facts['gpus'][0]['product_name'].startswith('Strix Halo')


# --- gpu_pci_facts --------------------------------------------------------------------------------------------

def test_gpu_pci_facts_module(tmp_path):
    # The V620 MxGPU of lspci/navi21-radeon-pro-v620-mxgpu-lspci-nn-grep-amd.txt (0002:00:00.0, [0380], 1002:73ae).
    add_function(str(tmp_path / 'sys'), ['pci0002:00', '0002:00:00.0'], cls='0x038000', vendor='0x1002', device='0x73ae')
    (tmp_path / '.dockerenv').write_text('')
    args = {'sysfs_root': str(tmp_path / 'sys'), 'root': str(tmp_path), 'proc_root': str(tmp_path / 'proc'),
            '_ansible_check_mode': True}
    result, runner = run_module(gpu_pci_facts.main, args)
    facts = facts_of(result, 'gpu_pci')
    assert runner.call_count == 0
    assert facts['amd'][0]['name'] == 'AMD Radeon PRO V620 MxGPU' and facts['gfx_targets'] == ['gfx1030']
    assert (facts['in_container'], facts['container_type'], facts['kfd_present']) == (True, 'docker', False)


def test_gpu_pci_facts_without_sysfs(tmp_path):
    result, _runner = run_module(gpu_pci_facts.main, {'sysfs_root': str(tmp_path)})
    assert result['failed'] is True and 'sysfs is not mounted there' in result['msg']
