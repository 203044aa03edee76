# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpu_sysfs over a real sysfs capture (an RX Vega 64's card0/device, fixtures/health/ SOURCES.md)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import os

import pytest

from ansible_collections.gpulab.rocm.plugins.module_utils.parsers import gpu_sysfs
from ansible_collections.gpulab.rocm.tests.unit import ttar

FIXTURES = os.path.join(os.path.dirname(__file__), 'fixtures', 'health')
VEGA64 = os.path.join(FIXTURES, 'sysfs-drm-card0-device-vega64-rocm-na-procfs-ttar-snapshot-aer-link-vram-busy.txt')


@pytest.fixture
def vega64(tmp_path):
    ttar.extract(VEGA64, str(tmp_path), strip='fixtures/')
    return str(tmp_path / 'sys' / 'class' / 'drm' / 'card0' / 'device')


def test_aer_counters_of_the_capture(vega64):
    counters = gpu_sysfs.read_aer(vega64)
    assert sorted(counters) == ['correctable', 'fatal', 'nonfatal']
    assert counters['correctable']['BadTLP'] == 0
    assert counters['correctable']['TOTAL_ERR_COR'] == 0
    assert len(counters['fatal']) == 19  # the capture's 19 lines: 18 error types and TOTAL_ERR_FATAL
    assert counters['fatal']['TOTAL_ERR_FATAL'] == 0
    assert gpu_sysfs.aer_totals(counters) == {'correctable': 0, 'nonfatal': 0, 'fatal': 0}


def test_rising_counters_are_read_as_written(vega64):
    path = os.path.join(vega64, 'aer_dev_correctable')
    with open(path) as handle:
        text = handle.read()
    with open(path, 'w') as handle:
        handle.write(text.replace('BadTLP 0', 'BadTLP 3').replace('TOTAL_ERR_COR 0', 'TOTAL_ERR_COR 3'))
    assert gpu_sysfs.aer_totals(gpu_sysfs.read_aer(vega64))['correctable'] == 3


def test_totals_are_summed_where_the_kernel_prints_no_total():
    assert gpu_sysfs.aer_totals({'fatal': gpu_sysfs.parse_aer('DLP 1\nSDES 2\nnot a counter\n')}) == {'fatal': 3}


def test_sensors_of_the_capture(vega64):
    sensors = gpu_sysfs.read_sensors(vega64)
    assert sensors['vram_total_bytes'] == 8573157376
    assert sensors['vram_used_bytes'] == 1490378752
    assert sensors['busy_percent'] == 4
    # The capture has no hwmon folder: the values it does not show are None, not zero.
    assert sensors['temperature_celsius'] is None and sensors['power_watts'] is None


def test_hwmon_units(vega64):
    hwmon = os.path.join(vega64, 'hwmon', 'hwmon3')
    os.makedirs(hwmon)
    for name, value in (('temp1_input', '41000'), ('power1_average', '17125000')):
        with open(os.path.join(hwmon, name), 'w') as handle:
            handle.write(value + '\n')
    sensors = gpu_sysfs.read_sensors(vega64)
    assert sensors['temperature_celsius'] == 41.0
    assert sensors['power_watts'] == 17.125


def test_a_device_without_aer_stats(tmp_path):
    assert gpu_sysfs.read_aer(str(tmp_path)) == {}


def test_reads_are_bounded_and_do_not_follow_links(tmp_path):
    big = tmp_path / 'mem_info_vram_used'
    big.write_text('1' * (gpu_sysfs.MAX_ATTR_BYTES + 10))
    assert gpu_sysfs.read_int(str(big)) is None
    (tmp_path / 'real').write_text('5\n')
    os.symlink(str(tmp_path / 'real'), str(tmp_path / 'gpu_busy_percent'))
    assert gpu_sysfs.read_int(str(tmp_path / 'gpu_busy_percent')) is None
    (tmp_path / 'temp').write_bytes(b'\xff\n')
    assert gpu_sysfs.read_attr(str(tmp_path / 'temp')) is None


# --- attributes the GPU has but does not support ----------------------------------------------------------------

@pytest.mark.parametrize('name, code, state', [
    # What amdgpu answers at read(): pcie_bw ENODATA on a GPU without PCIe usage counters, xgmi_error EINVAL on one
    # without XGMI; any other error is "unreadable".
    ('pcie_bw', errno.ENODATA, 'unsupported'), ('xgmi_error', errno.EINVAL, 'unsupported'),
    ('pcie_bw', errno.EOPNOTSUPP, 'unsupported'), ('pcie_bw', errno.EIO, 'unreadable'),
])
def test_an_errno_of_not_supported_is_no_value_and_no_error(vega64, monkeypatch, name, code, state):
    """The capture's own pcie_bw (and an xgmi_error file beside it) read through an os.read that fails the way the
    driver does for that file: the failure is simulated (os.read replaced for the file's descriptor only), the file
    and the rest of the tree are the capture's."""
    path = os.path.join(vega64, name)
    if not os.path.exists(path):
        with open(path, 'w') as handle:
            handle.write('0\n')
    real_open, real_read, failing = os.open, os.read, set()

    def fake_open(file, flags, *args):
        fd = real_open(file, flags, *args)
        if file == path:
            failing.add(fd)
        return fd

    def fake_read(fd, size):
        if fd in failing:
            failing.discard(fd)  # the number is reused for the next file once this one is closed
            raise OSError(code, os.strerror(code))
        return real_read(fd, size)

    monkeypatch.setattr(os, 'open', fake_open)
    monkeypatch.setattr(os, 'read', fake_read)
    assert gpu_sysfs.read_attr_state(path) == (None, state)
    assert gpu_sysfs.read_attr(path) is None
    # The other files still read: the capture's pcie_replay_count (0) and its AER counters.
    assert gpu_sysfs.read_pcie_replay_count(vega64) == 0
    assert gpu_sysfs.aer_totals(gpu_sysfs.read_aer(vega64)) == {'correctable': 0, 'nonfatal': 0, 'fatal': 0}


def test_states_of_the_capture(vega64, tmp_path):
    assert gpu_sysfs.read_attr_state(os.path.join(vega64, 'pcie_bw')) == ('6641 815 256', 'ok')
    assert gpu_sysfs.read_attr_state(os.path.join(vega64, 'no_such_file')) == (None, 'absent')
    os.symlink(os.path.join(vega64, 'pcie_bw'), str(tmp_path / 'link'))
    assert gpu_sysfs.read_attr_state(str(tmp_path / 'link')) == (None, 'unreadable')  # a link is not followed
    assert gpu_sysfs.read_pcie_replay_count(str(tmp_path)) is None  # no such file: no value
