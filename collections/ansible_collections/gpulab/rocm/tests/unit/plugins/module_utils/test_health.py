# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The health checks: a passing and a failing case for every check, over real captures and fixture sysfs trees.

The node of the end-to-end cases is an MI210 (fixtures/kfd-topology/mi210-xgmi-8gpu-node2-*, location 0x6300 =
0000:63:00.0, device 0x740f) on a PCIe 4.0 x16 link, with the rocminfo of an MI250X GCD (one gfx90a agent,
fixtures/rocminfo/gfx90a-*) and amd-smi's `metric --json` and `bad-pages` captures (RX 6600, MI300X). Where a
failing case needs a value no capture shows (a counter above zero), the test changes that one value of the capture
and says so.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import stat
import sys

import pytest

from ansible_collections.gpulab.rocm.plugins.module_utils.node import health, health_run, kernel_log_rules
from ansible_collections.gpulab.rocm.plugins.module_utils.parsers import amd_smi, gpu_sysfs, pci
from ansible_collections.gpulab.rocm.tests.unit import ttar
from ansible_collections.gpulab.rocm.tests.unit.gpu_facts_helpers import fixture
from ansible_collections.gpulab.rocm.tests.unit.sysfs_tree import add_function, add_kfd_node

ROCMINFO = 'rocminfo/gfx90a-mi250x-gcd-4numa-epyc7a53-rocm5.7.txt'
METRIC = 'amd-smi/metric-json-rx6600-navi23-proxmox-bare-array.json'
BAD_PAGES = 'health/amd-smi-bad-pages-8x-mi300x-rocm6.2-blog-no-bad-pages-found-text.txt'
VEGA64 = 'health/sysfs-drm-card0-device-vega64-rocm-na-procfs-ttar-snapshot-aer-link-vram-busy.txt'
BDF = '0000:63:00.0'
WANT = health.expected({})
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason='making device nodes (mknod) needs root')


def statuses(entries, check=None):
    return [item['status'] for item in entries if check is None or item['check'] == check]


def build_node(tmp_path, link=('16.0 GT/s PCIe', 16, '16.0 GT/s PCIe', 16), render=True, in_kfd=True,
               driver='amdgpu', extra_gpu=False):
    sysfs, dev = str(tmp_path / 'sys'), str(tmp_path / 'dev')
    add_function(sysfs, ['pci0000:60', '0000:60:01.1', BDF], cls='0x038000', vendor='0x1002', device='0x740f',
                 revision='0x02', link=link, driver=driver, drm=['card0', 'renderD128'] if render else None)
    if extra_gpu:  # a second MI210 on the bus that KFD does not list (amdgpu's probe failed on it)
        add_function(sysfs, ['pci0000:80', '0000:80:01.1', '0000:83:00.0'], cls='0x038000', vendor='0x1002',
                     device='0x740f', revision='0x02', link=link, driver=None)
    add_kfd_node(sysfs, 0, fixture('kfd-topology/mi210-xgmi-8gpu-node0-cpu-properties.txt'))
    if in_kfd:
        add_kfd_node(sysfs, 2, fixture('kfd-topology/mi210-xgmi-8gpu-node2-gpu-properties.txt'))
    os.makedirs(os.path.join(sysfs, 'module', 'amdgpu'))
    os.makedirs(os.path.join(dev, 'dri'))
    if os.geteuid() == 0:
        os.mknod(os.path.join(dev, 'kfd'), 0o660 | stat.S_IFCHR, os.makedev(235, 0))
        if render:
            os.mknod(os.path.join(dev, 'dri', 'renderD128'), 0o660 | stat.S_IFCHR, os.makedev(226, 128))
    group = health_run.stat_node(os.path.join(dev, 'kfd'))['group']
    data = {'sysfs_root': sysfs, 'dev_root': dev, 'kfd_group': group or 'root', 'render_group': group or 'root',
            'gpu_count': 1, 'kernel_log_source': 'none'}  # (the kernel log's own tests: test_kernel_log.py)
    path = str(tmp_path / 'health.json')
    with open(path, 'w') as handle:
        json.dump(data, handle)
    return path


def tools(outputs, present=('rocminfo', 'amd-smi')):
    """find and run over captured outputs: outputs maps a command's first argument to (rc, stdout, stderr)."""
    def find(name):
        return '/opt/rocm/bin/' + name if name in present else None

    def run(argv, timeout):
        key = os.path.basename(argv[0]) if len(argv) == 1 else argv[1]
        value = outputs[key]
        if isinstance(value, Exception):
            raise value
        return value
    return find, run


GOOD = {'rocminfo': (0, fixture(ROCMINFO), ''), 'metric': (0, fixture(METRIC), ''),
        'bad-pages': (0, fixture(BAD_PAGES), '')}


def run_node(tmp_path, data, outputs=None, present=('rocminfo', 'amd-smi')):
    find, run = tools(outputs or GOOD, present)
    return health_run.run(data, str(tmp_path / 'state'), find, run)


# --- the whole node ------------------------------------------------------------------------------------------

@needs_root
def test_a_healthy_node(tmp_path):
    result = run_node(tmp_path, build_node(tmp_path))
    assert result['verdict'] == 'healthy', result['checks']
    assert [item['check'] for item in result['checks']] == [
        'gpu_count', 'amdgpu_loaded', 'amdgpu_bound', 'amdgpu_module', 'kfd_node', 'render_node', 'rocminfo',
        'pcie_link', 'aer_errors', 'pcie_replay', 'ecc_uncorrectable', 'bad_pages_pending', 'bad_pages_pending',
        'xgmi_errors', 'kernel_log']
    # (the bad-pages capture shows two GPUs of its 8-GPU host, the metric capture one GPU: an entry per GPU shown)
    assert set(statuses(result['checks'])) == {'pass'}
    # last.json per the interface with the metrics textfile
    with open(str(tmp_path / 'state' / 'last.json')) as handle:
        written = json.load(handle)
    assert written == result
    assert sorted(written) == ['checks', 'host', 'kernel_log', 'schema', 'time', 'verdict'] and written['schema'] == 1
    assert written['kernel_log']['source'] == 'none' and written['kernel_log']['run']['KLOG_PROBE_FAILED'] == 0
    info = os.stat(str(tmp_path / 'state' / 'last.json'))
    assert stat.S_IMODE(info.st_mode) == 0o644 and info.st_uid == 0
    assert result['checks'][5]['gpu'] == 0 and result['checks'][0]['gpu'] is None


@needs_root
def test_a_missing_gpu(tmp_path):
    result = run_node(tmp_path, build_node(tmp_path, extra_gpu=True))
    assert result['verdict'] == 'unhealthy'
    count = [item for item in result['checks'] if item['check'] == 'gpu_count'][0]
    assert count == {'check': 'gpu_count', 'code': 'GPU_COUNT', 'status': 'fail', 'gpu': None,
                     'reason': '1 GPU(s) in KFD and 2 on the PCI bus, 1 expected'}
    bound = [item for item in result['checks'] if item['check'] == 'amdgpu_bound']
    assert statuses(bound) == ['pass', 'fail'] and bound[1]['gpu'] is None
    assert 'no driver' in bound[1]['reason']


@needs_root
def test_a_gpu_gone_from_kfd_fails_count_and_rocminfo(tmp_path):
    result = run_node(tmp_path, build_node(tmp_path, in_kfd=False))
    assert statuses(result['checks'], 'gpu_count') == ['fail']
    assert statuses(result['checks'], 'rocminfo') == ['fail']  # rocminfo lists 1 agent, KFD has 0 GPU nodes


@needs_root
def test_a_link_at_x8(tmp_path):
    data = build_node(tmp_path, link=('16.0 GT/s PCIe', 8, '16.0 GT/s PCIe', 16))
    result = run_node(tmp_path, data)
    link = [item for item in result['checks'] if item['check'] == 'pcie_link'][0]
    assert link['status'] == 'fail' and 'x8 at 16.0 GT/s is below its maximum' in link['reason']
    assert link['gpu'] == 0 and result['verdict'] == 'unhealthy'


@needs_root
def test_a_link_at_x8_is_a_warning_by_policy(tmp_path):
    data = build_node(tmp_path, link=('16.0 GT/s PCIe', 8, '16.0 GT/s PCIe', 16))
    with open(data) as handle:
        values = json.load(handle)
    values['link_policy'] = 'warn'
    with open(data, 'w') as handle:
        json.dump(values, handle)
    result = run_node(tmp_path, data)
    assert statuses(result['checks'], 'pcie_link') == ['warn'] and result['verdict'] == 'healthy'


@needs_root
def test_a_missing_render_node(tmp_path):
    result = run_node(tmp_path, build_node(tmp_path, render=False))
    render = [item for item in result['checks'] if item['check'] == 'render_node'][0]
    assert render['status'] == 'fail' and 'has no render node' in render['reason']


@needs_root
def test_a_render_node_removed_from_dev(tmp_path):
    data = build_node(tmp_path)
    os.unlink(str(tmp_path / 'dev' / 'dri' / 'renderD128'))
    render = [item for item in run_node(tmp_path, data)['checks'] if item['check'] == 'render_node'][0]
    assert render['status'] == 'fail' and render['reason'].endswith('renderD128 is missing')


@needs_root
def test_amdgpu_not_loaded_and_not_bound(tmp_path):
    data = build_node(tmp_path, driver='vfio-pci')
    os.rmdir(str(tmp_path / 'sys' / 'module' / 'amdgpu'))
    result = run_node(tmp_path, data)
    assert statuses(result['checks'], 'amdgpu_loaded') == ['fail']
    assert statuses(result['checks'], 'amdgpu_bound') == ['fail']


@needs_root
def test_aer_counters_that_rise_between_runs(tmp_path):
    data = build_node(tmp_path)
    device = str(tmp_path / 'sys' / 'bus' / 'pci' / 'devices' / BDF)
    # The kernel's AER files of the Vega 64 capture (all zero), then one non-fatal error more.
    vega = tmp_path / 'vega'
    ttar.extract(os.path.join(os.path.dirname(__file__), 'fixtures', VEGA64), str(vega), strip='fixtures/')
    captured = vega / 'sys' / 'class' / 'drm' / 'card0' / 'device'
    for kind in gpu_sysfs.AER_KINDS:
        target = os.path.join(device, 'aer_dev_' + kind)
        with open(str(captured / ('aer_dev_' + kind))) as source, open(target, 'w') as handle:
            handle.write(source.read())
    first = run_node(tmp_path, data)
    assert statuses(first['checks'], 'aer_errors') == ['pass']
    assert 'recorded' in [item for item in first['checks'] if item['check'] == 'aer_errors'][0]['reason']
    assert statuses(run_node(tmp_path, data)['checks'], 'aer_errors') == ['pass']
    path = os.path.join(device, 'aer_dev_nonfatal')
    with open(path) as handle:
        text = handle.read()
    with open(path, 'w') as handle:
        handle.write(text.replace('Undefined 0', 'Undefined 1').replace('TOTAL_ERR_NONFATAL 0', 'TOTAL_ERR_NONFATAL 1'))
    third = run_node(tmp_path, data)
    aer = [item for item in third['checks'] if item['check'] == 'aer_errors'][0]
    assert aer['status'] == 'fail' and aer['reason'] == '%s: AER errors since the last run: nonfatal +1' % BDF
    # The state now holds the new counts: no new error, a pass again.
    assert statuses(run_node(tmp_path, data)['checks'], 'aer_errors') == ['pass']


def test_correctable_aer_is_a_warning_by_default():
    gpus = [{'bdf': BDF, 'gpu': 0, 'aer': {'correctable': 5, 'nonfatal': 0, 'fatal': 0}}]
    previous = {BDF: {'correctable': 2, 'nonfatal': 0, 'fatal': 0}}
    assert statuses(health.check_aer(gpus, previous, WANT)) == ['warn']
    assert statuses(health.check_aer(gpus, previous, dict(WANT, aer_correctable='fail'))) == ['fail']
    # lower than last time: a reset (reboot), a new baseline
    assert statuses(health.check_aer(gpus, {BDF: {'correctable': 9, 'nonfatal': 0, 'fatal': 0}}, WANT)) == ['pass']


@needs_root
def test_a_tool_that_hangs(tmp_path):
    """rocminfo killed after its timeout (a real process that sleeps), and amd-smi that never answers."""
    data = build_node(tmp_path)
    with open(data) as handle:
        values = json.load(handle)
    values.update(rocminfo_timeout=1, amd_smi_timeout=1)
    with open(data, 'w') as handle:
        json.dump(values, handle)

    def find(name):
        return sys.executable

    def run(argv, timeout):
        return health_run.run_tool([sys.executable, '-c', 'import time; time.sleep(30)'], timeout)
    result = health_run.run(data, str(tmp_path / 'state'), find, run)
    rocminfo = [item for item in result['checks'] if item['check'] == 'rocminfo'][0]
    assert rocminfo['status'] == 'fail'
    assert rocminfo['reason'] == 'rocminfo did not finish within 1 s (a hung GPU or driver)'
    for check in ('ecc_uncorrectable', 'bad_pages_pending', 'xgmi_errors'):
        assert statuses(result['checks'], check) == ['fail']  # fails closed
    assert result['verdict'] == 'unhealthy'


def test_run_tool_kills_after_its_timeout():
    with pytest.raises(health_run.Timeout):
        health_run.run_tool([sys.executable, '-c', 'import time; time.sleep(30)'], 0.5)
    assert health_run.run_tool([sys.executable, '-c', 'print("ok")'], 5) == (0, 'ok\n', '')


@needs_root
def test_tools_that_are_absent(tmp_path):
    """No amd-smi: its checks are not run (docs/health.md); no rocminfo: a ROCm node without it fails."""
    result = run_node(tmp_path, build_node(tmp_path), present=('rocminfo',))
    assert result['verdict'] == 'healthy'
    assert not [item for item in result['checks'] if item['check'] in ('ecc_uncorrectable', 'xgmi_errors')]
    result = run_node(tmp_path, build_node(tmp_path / 'b'), present=())
    assert statuses(result['checks'], 'rocminfo') == ['fail'] and result['verdict'] == 'unhealthy'


def test_a_node_without_amd_gpus_expecting_none(tmp_path):
    sysfs = str(tmp_path / 'sys')
    os.makedirs(os.path.join(sysfs, 'bus', 'pci', 'devices'))
    data = tmp_path / 'health.json'
    data.write_text(json.dumps({'sysfs_root': sysfs, 'dev_root': str(tmp_path), 'gpu_count': 0}))
    result = run_node(tmp_path, str(data), present=())
    assert result['verdict'] == 'healthy' and statuses(result['checks']) == ['pass']
    data.write_text(json.dumps({'sysfs_root': sysfs, 'dev_root': str(tmp_path), 'gpu_count': 1}))
    result = run_node(tmp_path, str(data), present=())
    assert result['verdict'] == 'unhealthy' and statuses(result['checks'], 'gpu_count') == ['fail']


def test_no_data_file_could_not_run(tmp_path):
    result = health_run.run(str(tmp_path / 'absent.json'), str(tmp_path / 'state'), *tools(GOOD))
    assert result['verdict'] == 'error' and health_run.EXIT[result['verdict']] == 2
    assert result['checks'][0]['code'] == 'HEALTH_DATA' and 'is missing' in result['checks'][0]['reason']
    assert os.path.exists(str(tmp_path / 'state' / 'last.json'))


def test_bad_data_is_refused_by_name():
    for data, words in (({'gpu_count': 'eight'}, 'gpu_count must be a whole number'),
                        ({'link_policy': 'ignore'}, 'link_policy must be one of fail, warn'),
                        ({'gpu_models': {'MI300X': {}}}, 'PCI device id'),
                        ({'render_group': 'render;rm'}, 'render_group must be a group name'),
                        ({'colour': 1}, 'unknown keys in the health data file: colour')):
        with pytest.raises(health.DataError, match=words):
            health.expected(data)


# --- each check on its own -----------------------------------------------------------------------------------

def test_gpu_count_pass_and_fail():
    assert statuses(health.check_gpu_count(8, 8, 8)) == ['pass']
    assert statuses(health.check_gpu_count(7, 8, 8)) == ['fail']
    assert statuses(health.check_gpu_count(None, 1, -1)) == ['fail']  # no KFD at all
    assert statuses(health.check_gpu_count(2, 2, -1)) == ['pass']


def test_device_nodes_pass_and_fail():
    good = {'path': '/dev/kfd', 'exists': True, 'char': True, 'group': 'render'}
    assert statuses(health.check_device_nodes(good, [], WANT)) == ['pass']
    assert health.check_device_nodes(dict(good, group='video'), [], WANT)[0]['reason'] == \
        '/dev/kfd belongs to group video, not render'
    assert statuses(health.check_device_nodes(dict(good, char=False), [], WANT)) == ['fail']


def test_rocminfo_pass_and_fail_over_captures():
    from ansible_collections.gpulab.rocm.plugins.module_utils.parsers import gpu_tools

    def facts(name, rc):
        return gpu_tools.read_rocminfo(lambda argv: (rc, fixture(name), ''), lambda tool: '/usr/bin/rocminfo')
    assert statuses(health.check_rocminfo({'status': 'ok', 'facts': facts(ROCMINFO, 0)}, 1)) == ['pass']
    not_loaded = facts('rocminfo/fail-rock-not-loaded-azure-mi25.txt', 1)
    failed = health.check_rocminfo({'status': 'ok', 'facts': not_loaded}, 1)
    assert statuses(failed) == ['fail'] and failed[0]['reason'].startswith('rocminfo exit status 1')


def test_link_floor_per_gpu_model(tmp_path):
    # the RX 7800 XT capture's link files (16 GT/s x16 current and max) on a function of a fixture tree
    capture = dict((path.rsplit('/', 1)[1], value) for path, value in (line.split(':', 1) for line in fixture(
        'health/sysfs-grep-link-attrs-rx7800xt-rocm-na-card0-16gts-x16.txt').splitlines()))
    device = add_function(str(tmp_path), ['pci0000:00', '0000:00:01.1', '0000:03:00.0'], cls='0x030000',
                          vendor='0x1002', device='0x747e', extra=capture)
    gpus = [{'bdf': '0000:03:00.0', 'gpu': 0, 'device_id': '0x747e', 'link': pci.link_facts(device)}]
    passed = health.check_links(gpus, WANT)
    assert statuses(passed) == ['pass'] and passed[0]['reason'] == '0000:03:00.0 link x16 at 16.0 GT/s'
    floor = dict(WANT, gpu_models={'0x747e': {'link_width': 16, 'link_speed_gts': 32.0}})
    result = health.check_links(gpus, floor)
    assert statuses(result) == ['fail'] and 'below the 0x747e floor (speed 32.0 GT/s)' in result[0]['reason']


def _metric(change=None):
    text = fixture(METRIC)
    if change:
        text = text.replace(*change)
    return {'status': 'ok', 'entries': amd_smi.read_entries(text)}


def test_ecc_pass_and_fail():
    assert statuses(health.check_ecc(_metric(), WANT)) == ['pass']
    # the capture with one uncorrectable error
    bad = health.check_ecc(_metric(('"total_uncorrectable_count": 0', '"total_uncorrectable_count": 3')), WANT)
    assert bad == [{'check': 'ecc_uncorrectable', 'code': 'ECC_UNCORRECTABLE', 'status': 'fail', 'gpu': 0,
                    'reason': 'GPU 0: 3 uncorrectable ECC error(s), at most 0 allowed'}]
    na = health.check_ecc(_metric(('"total_uncorrectable_count": 0', '"total_uncorrectable_count": "N/A"')), WANT)
    assert statuses(na) == ['pass'] and 'not supported' in na[0]['reason']


def test_xgmi_not_supported_passes_and_an_error_fails():
    passed = health.check_xgmi(_metric())  # the capture prints "xgmi_err": "N/A"
    assert statuses(passed) == ['pass'] and 'not supported' in passed[0]['reason']
    assert statuses(health.check_xgmi(_metric(('"xgmi_err": "N/A"', '"xgmi_err": "NO_ERROR"')))) == ['pass']
    assert statuses(health.check_xgmi(_metric(('"xgmi_err": "N/A"', '"xgmi_err": "ERROR"')))) == ['fail']


def test_bad_pages_pass_and_fail():
    text = fixture(BAD_PAGES)
    assert statuses(health.check_bad_pages({'status': 'ok', 'entries': amd_smi.read_entries(text)}, WANT)) == \
        ['pass', 'pass']
    # GPU 1 of the capture with one pending page listed instead of "No bad pages found."
    pending = text.replace('PENDING: No bad pages found.\n    UN_RES: No bad pages found.\n \n',
                           'PENDING: 0x1a2b3c000\n    UN_RES: No bad pages found.\n \n', 2)
    pending = text[:text.index('GPU: 1')] + pending[pending.index('GPU: 1'):]
    result = health.check_bad_pages({'status': 'ok', 'entries': amd_smi.read_entries(pending)}, WANT)
    assert statuses(result) == ['pass', 'fail'] and result[1]['gpu'] == 1


def test_amd_smi_tool_error_fails_closed():
    binary = sys.executable
    failed = health_run.amd_smi_result(binary, ['metric', '--json'], 5,
                                       run=lambda argv, timeout: (255, '', 'ERROR: amdsmi init failed'))
    assert failed == {'status': 'fail', 'argv': ['amd-smi', 'metric', '--json'],
                      'message': 'exit status 255: ERROR: amdsmi init failed'}
    assert statuses(health.check_ecc(failed, WANT)) == ['fail']
    garbage = health_run.amd_smi_result(binary, ['bad-pages'], 5, run=lambda argv, timeout: (0, 'hello', ''))
    assert statuses(health.check_bad_pages(garbage, WANT)) == ['fail']


def test_verdicts():
    passed = health.entry('gpu_count', 'pass', 'x')
    assert health.verdict([passed, health.entry('pcie_link', 'warn', 'x')]) == 'healthy'
    assert health.verdict([passed, health.entry('health_data', 'error', 'x')]) == 'error'
    assert health.verdict([health.entry('health_data', 'error', 'x'), health.entry('rocminfo', 'fail', 'x')]) == \
        'unhealthy'


def test_the_recorded_gpu_count_is_read_only_from_roots_regular_file(tmp_path):
    data = tmp_path / 'health.json'
    assert health_run.read_recorded_count(str(data)) is None  # no data file yet: the first provisioning
    data.write_text(json.dumps({'gpu_count': 8, 'link_policy': 'fail'}))
    assert health_run.read_recorded_count(str(data)) == 8
    link = tmp_path / 'link.json'
    link.symlink_to(data)
    assert health_run.read_recorded_count(str(link)) is None  # never followed
    os.chown(str(data), 1000, 1000)
    assert health_run.read_recorded_count(str(data)) is None  # not root's: not trusted
    os.chown(str(data), 0, 0)
    for text in ('[8]', '{"gpu_count": true}', '{"gpu_count": "8"}', 'not json'):
        data.write_text(text)
        assert health_run.read_recorded_count(str(data)) is None, text


# --- the kernel log, end to end (its rules and readers: test_kernel_log.py) -----------------------------------------

# A line of kernel-log/dmesg-grep-amdgpu-2x-mi210-... (asserted below)
PROBE_LINE = '[    8.841500] amdgpu: probe of 0000:c3:00.0 failed with error -12\n'


def with_data(path, **values):
    with open(path) as handle:
        data = json.load(handle)
    data.update(values)
    with open(path, 'w') as handle:
        json.dump(data, handle)
    return path


@needs_root
def test_a_fatal_kernel_line_in_a_shipped_log_fails_until_acknowledged(tmp_path):
    """The Slurm scenario's steps (docs/health.md): the data file points the check at a log file, a real capture's
    probe failure line is appended, the check fails with KLOG_PROBE_FAILED (gpulab-slurm-health drains with it),
    keeps failing, and passes again once acknowledged (gpulab-slurm-health resumes)."""
    from ansible_collections.gpulab.rocm.plugins.module_utils.node import health_slurm
    assert PROBE_LINE in fixture('kernel-log/dmesg-grep-amdgpu-2x-mi210-rocm7.1-amdgpu6.16.13-fatal-gpu-init-probe-'
                                 'failed-error-12.txt')
    log = tmp_path / 'gpulab-fixture-kern.log'
    log.write_text('')
    data = with_data(build_node(tmp_path), kernel_log_source=str(log))
    state = str(tmp_path / 'state')
    first = run_node(tmp_path, data)
    assert first['verdict'] == 'healthy'
    assert [item['reason'] for item in first['checks'] if item['check'] == 'kernel_log'] == [
        '0 line(s), 0 bytes read from the file %s: no finding' % log]
    with open(str(log), 'a') as handle:
        handle.write(PROBE_LINE)
    failed = run_node(tmp_path, data)
    found = [item for item in failed['checks'] if item['check'] == 'kernel_log']
    assert failed['verdict'] == 'unhealthy' and [(item['code'], item['status'], item['gpu']) for item in found] == [
        ('KLOG_PROBE_FAILED', 'fail', None)]
    assert found[0]['reason'].startswith('0000:c3:00.0: amdgpu failed to probe the GPU')
    assert failed['kernel_log'] == {
        'source': 'file', 'bytes': len(PROBE_LINE), 'lines': 1, 'truncated': False,
        'run': dict((code, int(code == 'KLOG_PROBE_FAILED')) for code in failed['kernel_log']['severity']),
        'totals': dict((code, int(code == 'KLOG_PROBE_FAILED')) for code in failed['kernel_log']['severity']),
        'severity': dict(kernel_log_rules.severities())}
    info = os.stat(os.path.join(state, 'kernel-log.json'))
    assert stat.S_IMODE(info.st_mode) == 0o644 and info.st_uid == 0
    action, reason, _why = health_slurm.decide(failed, 'IDLE', '', [], 0, 3, 24)
    assert action == 'drain' and reason.startswith('gpulab: health: KLOG_PROBE_FAILED: 0000:c3:00.0: amdgpu failed')
    again = run_node(tmp_path, data)  # nothing new in the log: the finding is held
    assert again['verdict'] == 'unhealthy' and again['kernel_log']['lines'] == 0
    held = health_slurm.health_reason(again)  # the held finding's reason: the same on every later run
    assert held.startswith('gpulab: health: KLOG_PROBE_FAILED: 0000:c3:00.0:') and 'last seen' in held
    assert health_slurm.decide(again, 'IDLE+DRAIN', held, [], 0, 3, 24)[0] == 'none'
    assert health_slurm.health_reason(run_node(tmp_path, data)) == held
    reason = held
    assert health_run.main(['--ack-kernel-log', 'KLOG_PROBE_FAILED', '--state-dir', state]) == 0
    resumed = run_node(tmp_path, data)
    assert resumed['verdict'] == 'healthy' and resumed['kernel_log']['totals']['KLOG_PROBE_FAILED'] == 1
    assert health_slurm.decide(resumed, 'IDLE+DRAIN', reason, [], 0, 3, 24)[0] == 'resume'
    assert health_run.main(['--ack-kernel-log', 'KLOG_PROBE_FAILED', '--state-dir', state]) == 1  # nothing held
    assert health_run.main(['--ack-kernel-log', 'bad code', '--state-dir', state]) == 2


@needs_root
def test_a_kernel_log_that_another_check_holds_reports_the_held_findings(tmp_path):
    log = tmp_path / 'kern.log'
    log.write_text(PROBE_LINE)
    data = with_data(build_node(tmp_path), kernel_log_source=str(log))
    assert run_node(tmp_path, data)['verdict'] == 'unhealthy'
    lock = health_run.lock_kernel_log(str(tmp_path / 'state'))
    original = health_run.LOCK_WAIT
    try:
        health_run.LOCK_WAIT = 0.2
        busy = run_node(tmp_path, data)
    finally:
        health_run.LOCK_WAIT = original
        os.close(lock)
    assert busy['verdict'] == 'unhealthy'
    assert [item['code'] for item in busy['checks'] if item['check'] == 'kernel_log'] == ['KLOG_PROBE_FAILED']


@needs_root
def test_an_explicit_log_file_that_is_missing_is_a_warning(tmp_path):
    data = with_data(build_node(tmp_path), kernel_log_source=str(tmp_path / 'no.log'))
    result = run_node(tmp_path, data)
    entry = [item for item in result['checks'] if item['check'] == 'kernel_log'][0]
    assert result['verdict'] == 'healthy' and entry['status'] == 'warn' and 'No such file' in entry['reason']


# --- AMDGPU_MODULE, PCIE_REPLAY, the link's pp_dpm_pcie fallback -------------------------------------------------

def modules_root(tmp_path, release, capture):
    folder = tmp_path / 'root' / 'lib' / 'modules' / release
    folder.mkdir(parents=True)
    if capture:
        (folder / 'modules.dep').write_text(fixture(capture))
    return str(tmp_path / 'root')


@needs_root
def test_a_kernel_without_an_amdgpu_module_fails_with_the_fix(tmp_path):
    data = build_node(tmp_path)
    os.rmdir(str(tmp_path / 'sys' / 'module' / 'amdgpu'))
    release = '6.8.0-90-generic'
    find, run = tools(GOOD)
    root = modules_root(tmp_path, release, 'health/modules.dep-ubuntu-5.x-u-root-testdata-spi-net-phy-lines-no-amdgpu-'
                                           'cut.txt')
    result = health_run.run(data, str(tmp_path / 'state'), find, run, root=root, release=release)
    module = [item for item in result['checks'] if item['check'] == 'amdgpu_module']
    assert module == [{'check': 'amdgpu_module', 'code': 'AMDGPU_MODULE', 'status': 'fail', 'gpu': None, 'reason': (
        'kernel 6.8.0-90-generic has no amdgpu module (/lib/modules/6.8.0-90-generic/modules.dep lists no amdgpu.ko): '
        'install linux-headers-6.8.0-90-generic and amdgpu-dkms for it (role rocm_driver), or '
        "linux-modules-extra-6.8.0-90-generic for the kernel's own driver, or boot the previous kernel")}]
    other = tmp_path / 'other'
    root = modules_root(other, release, 'health/modules.dep-ubuntu-5.x-u-root-testdata-gpu-drm-lines-with-amdgpu-'
                                        'cut.txt')
    result = health_run.run(data, str(tmp_path / 'state'), find, run, root=root, release=release)
    module = [item for item in result['checks'] if item['check'] == 'amdgpu_module'][0]
    assert module['status'] == 'pass' and 'kernel/drivers/gpu/drm/amd/amdgpu/amdgpu.ko' in module['reason']
    result = health_run.run(data, str(tmp_path / 'state'), find, run, root=str(tmp_path / 'none'), release=release)
    assert [item['status'] for item in result['checks'] if item['check'] == 'amdgpu_module'] == ['warn']


def test_amdgpu_module_when_loaded_and_a_release_that_is_no_path():
    assert health.check_amdgpu_module(True, {'release': '6.8.0-90-generic'})[0]['reason'] == \
        'amdgpu is loaded (kernel 6.8.0-90-generic)'
    assert health_run.amdgpu_module('/', '../../etc')['status'] == 'error'


@needs_root
def test_pcie_replays_that_rise_are_a_warning(tmp_path):
    data = build_node(tmp_path)
    device = str(tmp_path / 'sys' / 'bus' / 'pci' / 'devices' / BDF)
    vega = tmp_path / 'vega'
    ttar.extract(os.path.join(os.path.dirname(__file__), 'fixtures', VEGA64), str(vega), strip='fixtures/')
    captured = (vega / 'sys' / 'class' / 'drm' / 'card0' / 'device' / 'pcie_replay_count').read_text()
    assert captured.strip() == '0'
    replay = os.path.join(device, 'pcie_replay_count')

    def status():
        found = [item for item in run_node(tmp_path, data)['checks'] if item['check'] == 'pcie_replay']
        return found[0]['status'], found[0]['reason']
    assert status() == ('pass', '%s: no pcie_replay_count (not amdgpu, or not supported): not checked' % BDF)
    with open(replay, 'w') as handle:
        handle.write(captured)
    assert status() == ('pass', '%s: PCIe replay count 0 recorded; the next run compares' % BDF)
    with open(replay, 'w') as handle:  # the capture's count, three replays later (no capture shows a rise)
        handle.write('3\n')
    assert status() == ('warn', '%s: PCIe replays since the last run: +3 (3 now): the link retransmits (check the '
                                'slot, riser or cable)' % BDF)
    assert status() == ('pass', '%s: no new PCIe replays (3)' % BDF)
    with open(replay, 'w') as handle:
        handle.write(captured)
    assert status() == ('pass', '%s: no new PCIe replays (0, a new baseline)' % BDF)


def test_a_gpu_without_link_files_is_held_to_its_pp_dpm_pcie_level(tmp_path):
    vega = tmp_path / 'vega'
    ttar.extract(os.path.join(os.path.dirname(__file__), 'fixtures', VEGA64), str(vega), strip='fixtures/')
    dpm = (vega / 'sys' / 'class' / 'drm' / 'card0' / 'device' / 'pp_dpm_pcie').read_text()
    device = add_function(str(tmp_path / 'sys'), ['pci0000:00', '0000:00:03.1', '0000:09:00.0'], cls='0x030000',
                          vendor='0x1002', device='0x687f', extra={'pp_dpm_pcie': dpm})
    gpus = [{'bdf': '0000:09:00.0', 'gpu': 0, 'device_id': '0x687f', 'link': pci.link_facts(device)}]
    passed = health.check_links(gpus, WANT)
    assert statuses(passed) == ['pass'] and passed[0]['reason'] == (
        "0000:09:00.0 link x16 at 8.0 GT/s (amdgpu's current PCIe DPM level, pp_dpm_pcie: the function has no link "
        'files); no floor for 0x687f in gpu_models: not compared')
    floor = dict(WANT, gpu_models={'0x687f': {'link_width': 16, 'link_speed_gts': 16.0}})
    assert statuses(health.check_links(gpus, floor)) == ['fail']
    bare = add_function(str(tmp_path / 'sys2'), ['pci0000:00', '0000:00:03.1', '0000:09:00.0'], cls='0x030000',
                        vendor='0x1002', device='0x687f')
    nothing = health.check_links([dict(gpus[0], link=pci.link_facts(bare))], WANT)
    assert nothing[0]['reason'] == '0000:09:00.0 reports no link information (no link files and no pp_dpm_pcie): not ' \
                                   'checked'


@needs_root
def test_a_fault_of_the_kernel_log_reader_is_a_warning_not_a_crash(tmp_path, monkeypatch):
    from ansible_collections.gpulab.rocm.plugins.module_utils.node import kernel_log

    def broken(*args, **kwargs):
        raise ValueError('no test foresaw this')
    monkeypatch.setattr(kernel_log, 'collect', broken)
    result = run_node(tmp_path, with_data(build_node(tmp_path), kernel_log_source='auto'))
    entry = [item for item in result['checks'] if item['check'] == 'kernel_log']
    assert [(item['code'], item['status']) for item in entry] == [('KERNEL_LOG', 'warn')]
    assert entry[0]['reason'] == ('kernel log not checked: the kernel log reader failed (ValueError: no test foresaw '
                                  'this)')
    assert result['verdict'] == 'healthy' and result['kernel_log']['source'] == 'none'
