# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The metrics textfile over real captures and fixture sysfs trees (an Instinct MI308X in CPX partitions, a
Radeon, an APU, the real Vega 64 sysfs capture), each output checked by `promtool check metrics`.

promtool comes from Debian's prometheus package (tests/harness/host-setup.sh installs it): a missing promtool
fails these tests, it never skips them.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re
import shutil
import subprocess

import pytest

from ansible_collections.gpulab.rocm.plugins.module_utils.node import health, health_run
from ansible_collections.gpulab.rocm.plugins.module_utils.node import metrics_textfile as mt
from ansible_collections.gpulab.rocm.plugins.module_utils.parsers import firmware
from ansible_collections.gpulab.rocm.tests.unit import ttar
from ansible_collections.gpulab.rocm.tests.unit.gpu_facts_helpers import fixture
from ansible_collections.gpulab.rocm.tests.unit.sysfs_tree import add_function, add_kfd_node

FIXTURES = os.path.join(os.path.dirname(__file__), 'fixtures')
VEGA64 = os.path.join(FIXTURES, 'health', 'sysfs-drm-card0-device-vega64-rocm-na-procfs-ttar-snapshot-aer-link-vram'
                      '-busy.txt')
LACT = 'health/sysfs-grep-link-attrs-rx7800xt-rocm-na-card0-16gts-x16.txt'
RX7900XTX_JSON = 'rocm-smi/json-raw-oneline-showtemp-showuse-showpower-meminfo-vram-rx7900xtx.json'
NOW = 1764619260.0


def promtool():
    path = shutil.which('promtool')
    assert path, ('promtool is missing: install Debian\'s prometheus package (tests/harness/host-setup.sh does); '
                  'these tests do not skip without it')
    return path


def promtool_check(text):
    """`promtool check metrics` on the text: (rc, its complaints)."""
    run = subprocess.run([promtool(), 'check', 'metrics'], input=text.encode(), stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, check=False)
    return run.returncode, run.stdout.decode()


def samples(text):
    """{(name, frozenset(labels)): value} of the text (the text format as render() writes it)."""
    found = {}
    for line in text.splitlines():
        if line.startswith('#'):
            continue
        match = re.match(r'^([a-z_]+)(?:\{(.*)\})? (\S+)$', line)
        assert match, line
        labels = frozenset(re.findall(r'([a-z_]+)="((?:[^"\\]|\\.)*)"', match.group(2) or ''))
        found[(match.group(1), labels)] = float(match.group(3))
    return found


def series(text, name, **labels):
    """The values of one family whose labels include the given ones."""
    wanted = set(labels.items())
    return [value for (family, have), value in samples(text).items() if family == name and wanted <= have]


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as handle:
        handle.write(text)


def lact_link():
    """The RX 7800 XT's link files as the LACT capture prints them (path:value per line)."""
    pairs = [line.split(':', 1) for line in fixture(LACT).splitlines()]
    values = dict((os.path.basename(path), value) for path, value in pairs)
    return (values['current_link_speed'], values['current_link_width'], values['max_link_speed'],
            values['max_link_width'])


@pytest.fixture
def roots(tmp_path):
    sysfs, root = str(tmp_path / 'sys'), str(tmp_path / 'root')
    os.makedirs(os.path.join(sysfs, 'bus', 'pci', 'devices'))
    os.makedirs(root)
    return sysfs, root


def instinct_cpx(sysfs, root):
    """TEST FIXTURE: one MI308X (0x74a2) in CPX mode, its first two partitions from the real KFD capture (same
    unique_id, locations 0a:00.0 and 0a:00.1), a Gen5 x16 link; the partition modes and RAS counts are fixture
    values in amdgpu's formats, the ROCm version file is the fixture mirror's."""
    device = add_function(sysfs, ['pci0000:00', '0000:00:01.1', '0000:0a:00.0'], cls='0x120000', vendor='0x1002',
                          device='0x74a2', driver='amdgpu', drm=['card1', 'renderD128'],
                          link=('32.0 GT/s PCIe', 16, '32.0 GT/s PCIe', 16),
                          extra={'current_compute_partition': 'CPX', 'current_memory_partition': 'NPS1',
                                 'vbios_version': '113-M3080202-100'})
    write(os.path.join(device, 'ras', 'umc_err_count'), 'ue: 0\nce: 2\nde: 0\n')
    write(os.path.join(device, 'ras', 'gfx_err_count'), 'ue: 0\nce: 0\n')
    add_kfd_node(sysfs, 0, fixture('kfd-topology/mi308x-cpx-partition-node0-cpu-properties.txt'))
    add_kfd_node(sysfs, 1, fixture('kfd-topology/mi308x-cpx-partition-node2-gpu-properties.txt'))
    add_kfd_node(sysfs, 2, fixture('kfd-topology/mi308x-cpx-partition-node3-gpu-properties.txt'))
    write(os.path.join(root, 'opt', 'rocm', '.info', 'version'), '6.2.4-120\n')
    write(os.path.join(sysfs, 'module', 'amdgpu', 'version'), '6.8.5\n')
    return device


def radeon(sysfs):
    """TEST FIXTURE: an RX 7900 XTX (0x744c) with the sensors of the real rocm-smi capture of one (converted to
    sysfs units) and the link files of the real RX 7800 XT capture (the same RDNA 3 endpoint behind its switch)."""
    card = json.loads(fixture(RX7900XTX_JSON))['card0']
    device = add_function(sysfs, ['pci0000:00', '0000:00:03.1', '0000:03:00.0'], cls='0x030000', vendor='0x1002',
                          device='0x744c', driver='amdgpu', drm=['card0', 'renderD129'], link=lact_link(),
                          extra={'mem_info_vram_total': card['VRAM Total Memory (B)'],
                                 'mem_info_vram_used': card['VRAM Total Used Memory (B)'],
                                 'gpu_busy_percent': card['GPU use (%)']})
    hwmon = os.path.join(device, 'hwmon', 'hwmon2')
    write(os.path.join(hwmon, 'temp1_input'), '%d\n' % (float(card['Temperature (Sensor edge) (C)']) * 1000))
    write(os.path.join(hwmon, 'power1_average'), '%d\n' % (float(card['Average Graphics Package Power (W)']) * 1e6))
    return device


def apu(sysfs):
    """TEST FIXTURE: a Radeon 780M (Phoenix, 0x15bf) at 0000:c3:00.0 with the values of the real `rocm-smi -a`
    capture of one (VBIOS, edge temperature, power, busy); it has no link files and no VRAM values there."""
    device = add_function(sysfs, ['pci0000:00', '0000:00:08.1', '0000:c3:00.0'], cls='0x030000', vendor='0x1002',
                          device='0x15bf', driver='amdgpu', drm=['card0', 'renderD128'],
                          extra={'vbios_version': '113-PHXGENERIC-001', 'gpu_busy_percent': '99'})
    write(os.path.join(device, 'hwmon', 'hwmon4', 'temp1_input'), '55000\n')
    write(os.path.join(device, 'hwmon', 'hwmon4', 'power1_input'), '15171000\n')
    return device


def health_file(root, result):
    path = os.path.join(root, 'var', 'lib', 'gpulab', 'health', 'last.json')
    write(path, json.dumps(result))
    os.chmod(path, 0o644)
    return path


def render(sysfs, root, **config):
    return mt.render(mt.collect(sysfs, root, config, now=NOW, trusted_uid=os.getuid()))


def test_instinct_in_cpx_partitions(roots):
    sysfs, root = roots
    instinct_cpx(sysfs, root)
    text = render(sysfs, root, expected_pci=1, expected_kfd=2, rocm_source='amd', node_class='mi300_nodes')
    assert promtool_check(text) == (0, '')
    assert series(text, 'gpulab_gpus_found', source='pci') == [1]
    assert series(text, 'gpulab_gpus_found', source='kfd') == [2]
    assert series(text, 'gpulab_gpus_expected', source='kfd') == [2]
    info = [labels for (name, labels), _v in samples(text).items() if name == 'gpulab_gpu_info']
    assert sorted(dict(labels)['partition'] for labels in info) == ['0', '1']
    assert set(dict(labels)['pci_bdf'] for labels in info) == {'0000:0a:00.0'}
    assert sorted(dict(labels)['render_node'] for labels in info) == ['/dev/dri/renderD128', '/dev/dri/renderD129']
    first = dict(gpu='0', pci_bdf='0000:0a:00.0', model='AMD Instinct MI308X', gfx='gfx942', partition='0')
    assert series(text, 'gpulab_gpu_info', compute_partition='CPX', memory_partition='NPS1', **first) == [1]
    # One link and one set of counters per GPU: on its first partition only.
    assert series(text, 'gpulab_gpu_pcie_link_width') == [16]
    assert series(text, 'gpulab_gpu_pcie_link_speed_transfers_per_second', **first) == [32e9]
    assert series(text, 'gpulab_gpu_pcie_link_degraded', **first) == [0]
    assert series(text, 'gpulab_gpu_ecc_errors_total', block='umc', kind='correctable') == [2]
    assert series(text, 'gpulab_gpu_ecc_errors_total', block='umc', kind='deferred') == [0]
    assert series(text, 'gpulab_gpu_ecc_errors_total', block='gfx', kind='uncorrectable') == [0]
    assert series(text, 'gpulab_rocm_info', version='6.2.4-120', source='amd', node_class='mi300_nodes') == [1]
    assert series(text, 'gpulab_amdgpu_driver_info', version='6.8.5', source='dkms') == [1]
    assert series(text, 'gpulab_gpu_vbios_info', vbios_version='113-M3080202-100', node_class='mi300_nodes') == [1]
    assert series(text, 'gpulab_reboot_required') == [0]
    assert series(text, 'gpulab_textfile_timestamp_seconds') == [NOW]
    # No health result on this node: no health series at all.
    assert not [key for key in samples(text) if key[0].startswith('gpulab_health_')]


def test_radeon_sensors_and_link(roots):
    sysfs, root = roots
    radeon(sysfs)
    text = render(sysfs, root)
    assert promtool_check(text) == (0, '')
    gpu = dict(gpu='', pci_bdf='0000:03:00.0', gfx='gfx1100', render_node='/dev/dri/renderD129', partition='')
    assert series(text, 'gpulab_gpu_vram_total_bytes', **gpu) == [25753026560]
    assert series(text, 'gpulab_gpu_vram_used_bytes', **gpu) == [794341376]
    assert series(text, 'gpulab_gpu_temperature_celsius', **gpu) == [49.0]
    assert series(text, 'gpulab_gpu_power_watts', **gpu) == [19.0]
    assert series(text, 'gpulab_gpu_busy_ratio', **gpu) == [0.0]
    assert series(text, 'gpulab_gpu_pcie_link_width', **gpu) == [16]
    assert series(text, 'gpulab_gpu_pcie_link_max_speed_transfers_per_second', **gpu) == [16e9]
    # No KFD on this tree, no expected counts configured, no ROCm: those series are absent, not zero.
    assert series(text, 'gpulab_gpus_found', source='kfd') == [0]
    assert not series(text, 'gpulab_gpus_expected')
    assert not series(text, 'gpulab_rocm_info')


def test_a_rocm_core_sdk_node_s_release_comes_from_opt_rocm_core(roots):
    # TEST FIXTURE: the Core layout (rocm-reference.md 13): /opt/rocm holds no .info of its own, /opt/rocm/core links
    # to the newest release; the version string is the brief's example of 10.1's file.
    sysfs, root = roots
    radeon(sysfs)
    write(os.path.join(root, 'opt', 'rocm', 'core-10.1', '.info', 'version'), '10.1.0-2\n')
    os.symlink('core-10.1', os.path.join(root, 'opt', 'rocm', 'core'))
    text = render(sysfs, root, rocm_source='amd')
    assert series(text, 'gpulab_rocm_info', version='10.1.0-2', source='amd') == [1]


def test_apu_without_link_or_vram(roots):
    sysfs, root = roots
    apu(sysfs)
    write(os.path.join(root, 'run', 'reboot-required'), '*** System restart required ***\n')
    text = render(sysfs, root, node_class='apu_nodes')
    assert promtool_check(text) == (0, '')
    gpu = dict(pci_bdf='0000:c3:00.0', model='AMD Radeon 780M / 760M (Phoenix)', gfx='gfx1103')
    assert series(text, 'gpulab_gpu_temperature_celsius', **gpu) == [55.0]
    assert series(text, 'gpulab_gpu_power_watts', **gpu) == [15.171]
    assert series(text, 'gpulab_gpu_busy_ratio', **gpu) == [0.99]
    assert series(text, 'gpulab_gpu_vbios_info', vbios_version='113-PHXGENERIC-001', **gpu) == [1]
    for family in ('gpulab_gpu_pcie_link_width', 'gpulab_gpu_vram_total_bytes', 'gpulab_gpu_pcie_aer_errors_total'):
        assert not series(text, family)
    assert series(text, 'gpulab_reboot_required') == [1]


def test_the_real_vega64_capture(roots, tmp_path):
    """The procfs fixture's card0/device (a real Vega 64), placed at its bus address."""
    sysfs, root = roots
    ttar.extract(VEGA64, str(tmp_path / 'capture'), strip='fixtures/')
    target = os.path.join(sysfs, 'devices', 'pci0000:00', '0000:09:00.0')
    os.makedirs(os.path.dirname(target))
    shutil.move(str(tmp_path / 'capture' / 'sys' / 'class' / 'drm' / 'card0' / 'device'), target)
    os.symlink(os.path.relpath(target, os.path.join(sysfs, 'bus', 'pci', 'devices')),
               os.path.join(sysfs, 'bus', 'pci', 'devices', '0000:09:00.0'))
    text = render(sysfs, root)
    assert promtool_check(text) == (0, '')
    gpu = dict(pci_bdf='0000:09:00.0', gfx='gfx900')
    assert series(text, 'gpulab_gpu_vram_total_bytes', **gpu) == [8573157376]
    assert series(text, 'gpulab_gpu_vram_used_bytes', **gpu) == [1490378752]
    assert series(text, 'gpulab_gpu_busy_ratio', **gpu) == [0.04]
    assert sorted(series(text, 'gpulab_gpu_pcie_aer_errors_total', **gpu)) == [0, 0, 0]
    assert series(text, 'gpulab_gpu_pcie_aer_errors_total', kind='fatal', **gpu) == [0]
    assert series(text, 'gpulab_gpu_pcie_link_width', **gpu) == [16]
    # pcie_replay_count of the capture (0); its vbios_version; no fw_version folder in the capture: no firmware series.
    assert series(text, 'gpulab_gpu_pcie_replays_total', **gpu) == [0]
    assert series(text, 'gpulab_gpu_vbios_info', vbios_version='115-D050PIL-100', **gpu) == [1]
    assert series(text, 'gpulab_gpu_firmware_info', **gpu) == []


R9700 = 'firmware/debugfs-amdgpu_firmware_info-3x-r9700-kernel6.17-one-vbios-each-issue6155-second-host.txt'


def test_firmware_series_from_sysfs_fw_version(roots):
    """An R9700 whose fw_version/ files hold the versions of the real debugfs capture of one (issue 6155), in the
    form amdgpu prints them ("0x%08x"; TEST FIXTURE layout: no capture of the folder was found): one series per
    block, the class label beside it; a block at 0 (dmcu) is none; a GPU without the folder (the APU) has none."""
    sysfs, root = roots
    text = fixture(R9700).split('GPU BDF: 0000:0d:00.0')[0]
    parsed = firmware.parse_debugfs(text[text.index('VCE feature'):])
    files = dict(('fw_version/%s_fw_version' % {'sdma0': 'sdma', 'sdma1': 'sdma2'}.get(block, block), version)
                 for block, version in parsed['firmware'].items())
    files.update({'fw_version/dmcu_fw_version': '0x00000000', 'vbios_version': parsed['vbios'],
                  'pcie_replay_count': '3'})
    device = add_function(sysfs, ['pci0000:00', '0000:00:01.1', '0000:0a:00.0'], cls='0x030000', vendor='0x1002',
                          device='0x7551', driver='amdgpu', drm=['card1', 'renderD128'])
    for name, value in files.items():
        write(os.path.join(device, name), value + '\n')
    apu(sysfs)
    text = render(sysfs, root, node_class='r9700_nodes')
    assert promtool_check(text) == (0, '')
    gpu = dict(pci_bdf='0000:0a:00.0', model='AMD Radeon AI PRO R9700', node_class='r9700_nodes')
    found = dict((dict(labels)['firmware'], dict(labels)['version']) for (name, labels), _v in samples(text).items()
                 if name == 'gpulab_gpu_firmware_info')
    assert found == parsed['firmware'] and 'dmcu' not in found and len(found) == 17
    assert series(text, 'gpulab_gpu_firmware_info', firmware='mes', version='0x0000008b', **gpu) == [1]
    assert series(text, 'gpulab_gpu_pcie_replays_total', pci_bdf='0000:0a:00.0') == [3]
    assert series(text, 'gpulab_gpu_pcie_replays_total', pci_bdf='0000:c3:00.0') == []  # the APU has no such file
    assert series(text, 'gpulab_gpu_firmware_info', pci_bdf='0000:c3:00.0') == []


def kernel_log_result(kernel_log):
    """A health result as health.py writes it (schema 1), with a "kernel_log" key BUILT TO THE DOCUMENTED SCHEMA
    (docs/health.md: source, bytes, lines, truncated, run, totals, severity per code); no capture of one exists."""
    result = {'schema': 1, 'time': 1764619200.5, 'host': 'node01', 'verdict': 'healthy',
              'checks': [health.entry('gpu_count', 'pass', '1 GPU(s) in KFD and 1 on the PCI bus, 1 expected')]}
    if kernel_log is not None:
        result['kernel_log'] = kernel_log
    return result


def test_kernel_log_counts_from_the_health_result(roots):
    sysfs, root = roots
    radeon(sysfs)
    health_file(root, kernel_log_result({
        'source': 'journal', 'bytes': 183422, 'lines': 2051, 'truncated': False,
        'run': {'KLOG_GPU_RESET': 1},
        'totals': {'KLOG_GPU_RESET': 3, 'KLOG_RAS_UNCORRECTABLE': 1, 'KLOG_RING_TIMEOUT': 2},
        'severity': {'KLOG_GPU_RESET': 'fatal', 'KLOG_RAS_UNCORRECTABLE': 'fatal', 'KLOG_RING_TIMEOUT': 'warn',
                     'KLOG_PCIE_AER_CORRECTED': 'warn'}}))
    text = render(sysfs, root)
    assert promtool_check(text) == (0, '')
    assert series(text, 'gpulab_kernel_log_events_total', code='KLOG_GPU_RESET', severity='fatal') == [3]
    assert series(text, 'gpulab_kernel_log_events_total', code='KLOG_RAS_UNCORRECTABLE', severity='fatal') == [1]
    assert series(text, 'gpulab_kernel_log_events_total', code='KLOG_RING_TIMEOUT', severity='warn') == [2]
    # A code the rules know and the log has not shown yet: 0, so that its first event is an increase.
    assert series(text, 'gpulab_kernel_log_events_total', code='KLOG_PCIE_AER_CORRECTED', severity='warn') == [0]
    # The last run's counts: the reset it saw, 0 for the other codes.
    assert series(text, 'gpulab_kernel_log_events_last_run', code='KLOG_GPU_RESET', severity='fatal') == [1]
    assert sorted(series(text, 'gpulab_kernel_log_events_last_run')) == [0, 0, 0, 1]
    assert series(text, 'gpulab_kernel_log_source_info', source='journal') == [1]
    assert series(text, 'gpulab_kernel_log_truncated') == [0]


@pytest.mark.parametrize('kernel_log', [
    None,  # node code older than the kernel log check: no key at all
    'journal', {'source': 'syslog', 'truncated': 'no', 'totals': [], 'severity': 'fatal'},
    {'source': 'kmsg', 'totals': {'klog_lower': 1, 'KLOG_X': -1, 'KLOG_Y': True, 'KLOG_Z': 2 ** 70, 'KLOG_N\n': 1},
     'severity': {'KLOG_X': 'fatal'}},
])
def test_a_result_without_kernel_log_counts_or_with_bad_ones_gives_no_such_series(roots, kernel_log):
    sysfs, root = roots
    radeon(sysfs)
    health_file(root, kernel_log_result(kernel_log))
    text = render(sysfs, root)
    assert promtool_check(text) == (0, '')
    assert series(text, 'gpulab_health_healthy') == [1]
    assert series(text, 'gpulab_kernel_log_events_total') == []
    assert series(text, 'gpulab_kernel_log_truncated') == []
    assert series(text, 'gpulab_kernel_log_source_info') == ([1] if isinstance(kernel_log, dict) and
                                                             kernel_log.get('source') == 'kmsg' else [])


def test_health_verdicts(roots):
    sysfs, root = roots
    radeon(sysfs)
    # The entries as health.py writes them (its codes, its reasons); the last one is a forged entry, for escaping.
    health_file(root, {'schema': 1, 'time': 1764619200.5, 'host': 'node01', 'verdict': 'unhealthy', 'checks': [
        health.entry('gpu_count', 'pass', '1 GPU(s) in KFD and 1 on the PCI bus, 1 expected'),
        health.entry('pcie_link', 'fail', '0000:03:00.0 link x8 at 16.0 GT/s is below its maximum (0000:03:00.0)', 0),
        health.entry('aer_errors', 'warn', '0000:03:00.0: AER errors since the last run: correctable +2', 0),
        {'check': 'odd "name"\\', 'code': 'X', 'status': 'error', 'reason': 'could not run', 'gpu': None}]})
    text = render(sysfs, root)
    assert promtool_check(text) == (0, '')
    assert series(text, 'gpulab_health_healthy') == [0]
    assert series(text, 'gpulab_health_result_valid') == [1]
    assert series(text, 'gpulab_health_last_run_timestamp_seconds') == [1764619200.5]
    assert series(text, 'gpulab_health_check_ok', check='gpu_count', code='GPU_COUNT', gpu='', pci_bdf='') == [1]
    assert series(text, 'gpulab_health_check_ok', check='pcie_link', code='PCIE_LINK', gpu='0', pci_bdf='') == [0]
    assert series(text, 'gpulab_health_check_ok', check='aer_errors', code='AER_ERRORS', gpu='0') == [1]
    # Label values are escaped as the text format requires.
    assert 'check="odd \\"name\\"\\\\",code="X",gpu="",pci_bdf=""} 0' in text


def label_sets(text):
    """[(name, sorted label pairs)] of every sample, repeats kept (samples() would fold them)."""
    found = []
    for line in text.splitlines():
        if not line.startswith('#'):
            match = re.match(r'^([a-z_]+)(?:\{(.*)\})? (\S+)$', line)
            assert match, line
            found.append((match.group(1), tuple(sorted(re.findall(r'([a-z_]+)="((?:[^"\\]|\\.)*)"',
                                                                  match.group(2) or '')))))
    return found


def test_two_gpus_outside_kfd_give_series_of_their_own(roots, tmp_path):
    # Issue 38: two AMD GPUs with no driver bound (so outside KFD: gpu="") gave the health check's per-GPU entries
    # the same labels; node_exporter drops a repeated label set silently, and the failing GPU's entry could hide
    # behind the passing one's. The check runs for real (health_run over the tree), the writer reads its last.json.
    sysfs, root = roots
    for bdf, port, driver in (('0000:03:00.0', '0000:00:01.1', None), ('0000:43:00.0', '0000:40:01.1', 'vfio-pci')):
        add_function(sysfs, ['pci0000:00', port, bdf], cls='0x038000', vendor='0x1002', device='0x740f',
                     driver=driver, link=('16.0 GT/s PCIe', 16, '16.0 GT/s PCIe', 16))
    data = tmp_path / 'health.json'
    data.write_text(json.dumps({'sysfs_root': sysfs, 'dev_root': str(tmp_path / 'dev'), 'gpu_count': 2}))
    state = os.path.join(root, 'var', 'lib', 'gpulab', 'health')
    result = health_run.run(str(data), state, lambda name: None)
    bound = [item for item in result['checks'] if item['check'] == 'amdgpu_bound']
    assert [(item['gpu'], item['status']) for item in bound] == [(None, 'fail'), (None, 'fail')]
    text = render(sysfs, root)
    found = label_sets(text)
    assert len(found) == len(set(found)), [item for item in found if found.count(item) > 1]
    assert promtool_check(text) == (0, '')
    for bdf in ('0000:03:00.0', '0000:43:00.0'):
        assert series(text, 'gpulab_health_check_ok', check='amdgpu_bound', gpu='', pci_bdf=bdf) == [0]
        assert series(text, 'gpulab_health_check_ok', check='pcie_link', gpu='', pci_bdf=bdf) == [1]
        assert series(text, 'gpulab_gpu_info', gpu='', pci_bdf=bdf) == [1]


def test_entries_that_share_every_label_give_the_worst_status(roots):
    # A GPU outside KFD whose reason names no address (a render node that is missing): one series, and a failing
    # entry is never hidden behind a passing one, in either order.
    sysfs, root = roots
    for order in ((('pass', '/dev/dri/renderD128 is there'), ('fail', '/dev/dri/renderD129 is missing')),
                  (('fail', '/dev/dri/renderD129 is missing'), ('pass', '/dev/dri/renderD128 is there'))):
        health_file(root, {'schema': 1, 'time': 1.0, 'verdict': 'unhealthy', 'checks': [
            health.entry('render_node', status, reason) for status, reason in order]})
        text = render(sysfs, root)
        assert series(text, 'gpulab_health_check_ok', check='render_node') == [0]
        assert promtool_check(text) == (0, '')


@pytest.mark.parametrize('spoil, why', [
    (lambda path: os.chmod(path, 0o666), 'writable by group or others'),
    (lambda path: os.chown(path, os.getuid() + 1, -1), 'owned by uid'),
    (lambda path: (os.rename(path, path + '.real'), os.symlink(path + '.real', path)), 'a link is refused'),
    (lambda path: open(path, 'w').write('{"schema": 2}'), 'not a schema 1'),
    (lambda path: open(path, 'w').write(' ' * (mt.HEALTH_MAX_BYTES + 1)), 'larger than'),
])
def test_a_health_file_that_cannot_be_trusted_is_refused(roots, spoil, why):
    sysfs, root = roots
    path = health_file(root, {'schema': 1, 'time': 1.0, 'verdict': 'healthy', 'checks': []})
    if why == 'owned by uid' and os.getuid() != 0:
        pytest.fail('this case needs root to give the file to another user; the suite runs as root')
    spoil(path)
    snapshot = mt.collect(sysfs, root, {}, now=NOW, trusted_uid=os.getuid())
    assert snapshot['health'] is None and why in snapshot['health_problem']
    text = mt.render(snapshot)
    assert series(text, 'gpulab_health_result_valid') == [0]
    assert not series(text, 'gpulab_health_healthy')


def test_every_family_has_a_help_and_a_valid_name():
    for name, (kind, help_text) in mt.METRICS.items():
        assert re.match(r'^gpulab_[a-z0-9_]+$', name) and kind in ('gauge', 'counter') and help_text
        assert name.endswith('_total') == (kind == 'counter'), name


def test_the_cli_writes_the_file_atomically(roots, tmp_path, capsys):
    sysfs, root = roots
    instinct_cpx(sysfs, root)
    out = tmp_path / 'textfile'
    out.mkdir()
    (out / 'gpulab.prom').write_text('old\n')
    config = tmp_path / 'metrics.json'
    config.write_text(json.dumps({'textfile_dir': str(out), 'sysfs_root': sysfs, 'root': root, 'expected_pci': 1,
                                  'expected_kfd': 2}))
    assert mt.main(['--config', str(config)]) == 0
    assert os.listdir(str(out)) == ['gpulab.prom']  # no temporary file left behind
    text = (out / 'gpulab.prom').read_text()
    assert promtool_check(text) == (0, '')
    assert series(text, 'gpulab_gpus_expected', source='pci') == [1]
    assert oct(os.stat(str(out / 'gpulab.prom')).st_mode & 0o777) == '0o644'


@pytest.mark.parametrize('config, message', [
    ({'textfile_dir': 'relative'}, 'textfile_dir must be an absolute path'),
    ({'textfile_dir': '/x', 'textfile_name': '../gpulab.prom'}, 'textfile_name must be a file name'),
    ({'textfile_dir': '/x', 'expected_pci': -1}, 'expected_pci must be a count'),
])
def test_a_bad_config_is_named(tmp_path, capsys, config, message):
    path = tmp_path / 'metrics.json'
    path.write_text(json.dumps(config))
    assert mt.main(['--config', str(path)]) == 2
    assert message in capsys.readouterr().err


def test_a_missing_gpu_leaves_the_pci_count_short(roots):
    """What the "fell off the bus" alert sees: the function gone from the bus, the expected count still there."""
    sysfs, root = roots
    instinct_cpx(sysfs, root)
    os.unlink(os.path.join(sysfs, 'bus', 'pci', 'devices', '0000:0a:00.0'))
    text = render(sysfs, root, expected_pci=1, expected_kfd=2)
    assert series(text, 'gpulab_gpus_found', source='pci') == [0]
    assert series(text, 'gpulab_gpus_expected', source='pci') == [1]


def test_the_writer_makes_a_missing_textfile_folder_and_leaves_one_that_is_there(roots, tmp_path):
    # Issue 38: the textfile folder is the lab's where it is there (Debian's package makes it, for its own
    # collectors too): the writer never changes its owner or mode; where it is missing, it makes it (0755).
    sysfs, root = roots
    instinct_cpx(sysfs, root)
    lab = tmp_path / 'lab-textfiles'
    lab.mkdir()
    os.chmod(str(lab), 0o2775)
    before = os.stat(str(lab))
    config = tmp_path / 'metrics.json'
    config.write_text(json.dumps({'textfile_dir': str(lab), 'sysfs_root': sysfs, 'root': root}))
    assert mt.main(['--config', str(config)]) == 0
    after = os.stat(str(lab))
    assert (after.st_mode, after.st_uid, after.st_gid) == (before.st_mode, before.st_uid, before.st_gid)
    made = tmp_path / 'var' / 'lib' / 'gpulab-textfiles'
    config.write_text(json.dumps({'textfile_dir': str(made), 'sysfs_root': sysfs, 'root': root}))
    assert mt.main(['--config', str(config)]) == 0
    assert (made / 'gpulab.prom').is_file()
    assert oct(os.stat(str(made)).st_mode & 0o7777) == '0o755'
    assert oct(os.stat(str(made.parent)).st_mode & 0o7777) == '0o755'


def test_the_writer_refuses_a_folder_it_should_not_make(roots, tmp_path, capsys):
    sysfs, root = roots
    shared = tmp_path / 'shared'
    shared.mkdir()
    os.chmod(str(shared), 0o777)
    (tmp_path / 'a-file').write_text('x')
    config = tmp_path / 'metrics.json'
    for directory, message in ((shared / 'textfiles', 'is writable by others or owned by a login user'),
                               (tmp_path / 'a-file', 'is there but is not a folder')):
        config.write_text(json.dumps({'textfile_dir': str(directory), 'sysfs_root': sysfs, 'root': root}))
        assert mt.main(['--config', str(config)]) == 2
        assert message in capsys.readouterr().err
    assert not (shared / 'textfiles').exists()
