# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The kernel log of the health check over real captures (fixtures/kernel-log/, SOURCES.md gives each one's source).

Every rule with a capture matches a line of it and none of the captures of other classes; a finding is tied to its
GPU by the PCI address in the line, also through the ports above the GPU; repeated lines count once a run; a reset
loop is counted once per window; fatal findings are held until acknowledged or aged out.

Where a test needs a record format that no capture shows with GPU lines (the journal's JSON objects, /dev/kmsg
records), it builds one from a capture's real lines with the functions named `*_built_from_*` below, in the format
systemd's Journal JSON Format and the kernel's Documentation/ABI/testing/dev-kmsg describe; the two real format
captures (a journal's JSON lines, this build machine's /dev/kmsg records) fix what those formats look like. The 8 MB
log of the bound test repeats a real capture.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import json
import os
import sys
import time

import pytest

from ansible_collections.gpulab.rocm.plugins.module_utils.node import health, health_run, kernel_log, kernel_log_rules
from ansible_collections.gpulab.rocm.tests.unit.gpu_facts_helpers import fixture, fixture_names

KL = 'kernel-log/'
CAPTURES = [name for name in fixture_names('kernel-log') if name.endswith('.txt')]
MI210 = KL + 'dmesg-grep-amdgpu-2x-mi210-rocm7.1-amdgpu6.16.13-fatal-gpu-init-probe-failed-error-12.txt'
MI300X_PROBE = KL + 'dmesg-mi300x-rocm6.2.0-invalid-ip-discovery-signature-fatal-init-probe-failed-error-22.txt'
MI50_PROBE = KL + 'dmesg-mi50-kernel6.12.1-fatal-gpu-init-probe-with-driver-amdgpu-failed-error-12-fragment.txt'
RDNA3_AER = KL + 'dmesg-rdna3-gfx11-dgpu-tigerlake-aer-corrected-navi-switch-port-kcq-hw-init-failed-fragment.txt'
MI300X_UE = KL + 'dmesg-8x-mi300x-rocm6.2.3-athub-uncorrectable-aca-xgmi-correctable-gpu-reset-mode1.txt'
MI300X_UE2 = KL + 'dmesg-8x-mi300x-rocm6.2.3-athub-uncorrectable-aca-gpu-reset-second-hang.txt'
MI300X_FAULT = KL + 'dmesg-mi300x-rocm6.2.3-mmhub-retry-page-fault-sdma1-no-reset-cut.txt'
MI50_UE = KL + 'dmesg-T-mi50-athub-uncorrectable-gpu-reset-smu-send-message-failed-powerplay-fragment.txt'
LOOP_6018 = KL + 'dmesg-780m-7840hs-rocm7.2.0-mes-remove-queue-five-gpu-resets-in-14-minutes-cut.txt'
LOOP_4444 = KL + 'dmesg-780m-8845hs-rocm6.3.3-mes-remove-queue-five-gpu-resets-wifi-lines-removed.txt'
RESET_FAILED = KL + 'dmesg-rdna2-two-gpus-psp-resume-failed-gpu-reset-1-failed-qcm-fence-timeout-fragment.txt'
MODE1_FAILED = KL + 'dmesg-rdna-laptop-nixos-suspend-smu-dpm-disable-failed-gpu-mode1-reset-failed-fragment.txt'
YOGA = KL + 'dmesg-notime-ryzen-apu-yoga-ring-sdma0-timeout-mode2-reset-fragment.txt'
RX6800_LINK = KL + 'dmesg-rx6800-b450-gen3-board-pcie-bandwidth-limited-by-8gts-x16-one-line.txt'
VEGA56_LINK = KL + 'dmesg-vega56-raspberry-pi-brcm-pcie-x1-bandwidth-limited-switch-port-fragment.txt'
NON_GPU_LINK = KL + 'dmesg-non-gpu-devices-behind-chipset-pcie-bandwidth-limited-by-x4-link-fragment.txt'
FURY_AER = KL + 'dmesg-fury-nano-rocm1.2-root-port-aer-uncorrected-fatal-malformed-tlp-device-recovery-failed.txt'
NVIDIA_AER = KL + 'journal-short-nvidia-host-amd-root-port-aer-correctable-data-link-fragment.txt'
POLARIS_AER = KL + 'dmesg-2x-polaris-x99-root-port-aer-correctable-data-link-timeout-fragment.txt'
NO_GPU_AER = KL + 'journal-short-no-gpu-host-root-port-aer-uncorrectable-non-fatal-acs-violation-fragment.txt'
MI100_GHES = KL + 'kernel-log-mi100-am4-rocm6.0.0-aer-apei-ghes-corrected-pcie-error-root-port-fragment.txt'
KMSG_REAL = KL + 'kmsg-records-build-machine-vm-kernel6.18-pci-bus-enumeration-seq197-208.txt'
JOURNAL_REAL = KL + 'journal-json-oneline-kernel-ext4-errors-systemd-2020-walle-testdata.txt'
NOW = 1767225600.0  # 2026-01-01T00:00:00Z
WANT = health.expected({})


def records_of(name):
    return [kernel_log.parse_line(line) for line in fixture(name).splitlines()]


def codes_in(name, where=None):
    """{code: {key: count}} that the rules find in a capture, on a node whose AMD GPUs are where's (default: every
    address the capture names is taken as a GPU of the node: the tests of the classes, not of the mapping)."""
    records = records_of(name)
    if where is None:
        addresses = sorted(set(match.group(1).lower() for record in records
                               for match in [kernel_log._BDF.search(record['text'])] if match))
        where = {'gpus': dict((address, number) for number, address in enumerate(addresses)), 'ports': {}}
    found = kernel_log.match(records, kernel_log_rules.compiled(), where, NOW, NOW - 10 ** 6)
    result = {}
    for (code, key), finding in found.items():
        result.setdefault(code, {})[key] = len(finding['lines'])
    return result


# --- the line formats ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize('name, first', [
    (MI210, 'amdgpu 0000:c3:00.0: amdgpu: Fatal error during GPU init'),
    (MI50_UE, 'amdgpu 0000:e3:00.0: amdgpu: uncorrectable hardware error(ERREVENT_ATHUB_INTERRUPT) detected!'),
    (KL + 'syslog-rdna2-gfx10-popos21.10-ring-gfx-timeout-kiq-test-failed-mode1-reset-fragment.txt',
     '[drm:amdgpu_job_timedout [amdgpu]] *ERROR* ring gfx_0.0.0 timeout, signaled seq=228661, emitted seq=228662'),
    (KL + 'rsyslog-iso-gfx1103-7840u-gpu-reset-mode2-fragment.txt', 'amdgpu 0000:c3:00.0: amdgpu: GPU reset begin!'),
    (KL + 'journal-short-rx550-loongson-ring-gfx-timeout-baco-reset-fragment.txt',
     'amdgpu 0000:07:00.0: amdgpu: GPU reset begin!'),
    (MI100_GHES, 'pcieport 0000:00:01.1: AER: aer_layer=Data Link Layer, aer_agent=Receiver ID'),
    (YOGA, 'amdgpu 0000:33:00.0: amdgpu: GPU reset begin!'),
])
def test_prefixes_are_cut_and_times_kept(name, first):
    """dmesg, dmesg -T, syslog with the kernel's seconds, rsyslog ISO, journalctl short, 'kernel:' and no time."""
    records = records_of(name)
    texts = [record['text'] for record in records]
    assert first in texts
    record = records[texts.index(first)]
    if name == YOGA:
        assert record['mono'] is None and record['wall'] is None
    elif name in (MI50_UE, KL + 'rsyslog-iso-gfx1103-7840u-gpu-reset-mode2-fragment.txt'):
        assert record['wall'] is not None
    elif 'loongson' not in name:
        assert record['mono'] is not None
    iso = records_of(KL + 'rsyslog-iso-gfx1103-7840u-gpu-reset-mode2-fragment.txt')[0]
    assert iso['wall'] == pytest.approx(1723943971.351160)  # 2024-08-18T01:19:31.351160+00:00


def test_a_line_cut_in_the_middle_or_no_line_at_all_never_fails():
    for line in ('[  942.18', '[Sat Jan  7 14:25', 'amdgpu 0000:c3:0', '', '\x00\xff', '2024-08-18T01:19:31.3',
                 '[99999999999999999999.1] x', 'Feb  2 08:03:20 kernel: [3'):
        record = kernel_log.parse_line(line)
        assert isinstance(record['text'], str)
    for data in (b'', b'6,1', b'x;y', b'6,a,b,-;text', b'6,1,2,-;\xff\xfe\n DEVICE=+pci:zz'):
        kernel_log.parse_kmsg_record(data)
    for data in (b'', b'{', b'[1]', b'{"MESSAGE": [1, "x"]}', b'{"MESSAGE": null}', b'\xff'):
        kernel_log.parse_journal_line(data)


# --- every class: a failing and a passing case over captures -------------------------------------------------------

EXPECTED = {
    MI210: {'KLOG_PROBE_FAILED'},
    MI300X_PROBE: {'KLOG_PROBE_FAILED'},
    MI50_PROBE: {'KLOG_PROBE_FAILED'},
    RDNA3_AER: {'KLOG_PROBE_FAILED', 'KLOG_PCIE_AER_CORRECTED'},
    MI300X_UE: {'KLOG_RAS_UNCORRECTABLE', 'KLOG_GPU_RESET'},
    MI300X_UE2: {'KLOG_RAS_UNCORRECTABLE', 'KLOG_GPU_RESET'},
    MI300X_FAULT: set(),
    MI50_UE: {'KLOG_RAS_UNCORRECTABLE', 'KLOG_GPU_RESET', 'KLOG_SMU_FAILURE'},
    LOOP_6018: {'KLOG_GPU_RESET', 'KLOG_RING_TIMEOUT'},
    LOOP_4444: {'KLOG_GPU_RESET', 'KLOG_RING_TIMEOUT'},
    RESET_FAILED: {'KLOG_RESET_FAILED', 'KLOG_RING_TIMEOUT'},
    MODE1_FAILED: {'KLOG_RESET_FAILED', 'KLOG_SMU_FAILURE'},
    YOGA: {'KLOG_RING_TIMEOUT', 'KLOG_GPU_RESET'},
    KL + 'dmesg-rx5700xt-kernel7.0.11-ring-gfx-timeout-ring-reset-failed-gpu-reset-baco-fragment.txt':
        {'KLOG_RING_TIMEOUT', 'KLOG_GPU_RESET'},
    KL + 'dmesg-gfx11-apu-c5-ring-gfx-timeout-mes-remove-queue-mode2-reset-fragment.txt':
        {'KLOG_RING_TIMEOUT', 'KLOG_GPU_RESET'},
    KL + 'dmesg-strix-halo-mes-remove-queue-unrecoverable-gpu-reset-source-3-fragment.txt':
        {'KLOG_RING_TIMEOUT', 'KLOG_GPU_RESET'},
    KL + 'journal-short-rx7900xtx-fedora-rocm6.1-mes-failed-to-response-msg3-gpu-reset-page-fault-fragment.txt':
        {'KLOG_RING_TIMEOUT', 'KLOG_GPU_RESET'},
    KL + 'syslog-rdna2-gfx10-popos21.10-ring-gfx-timeout-kiq-test-failed-mode1-reset-fragment.txt':
        {'KLOG_RING_TIMEOUT', 'KLOG_GPU_RESET'},
    KL + 'journal-short-rx550-loongson-ring-gfx-timeout-baco-reset-fragment.txt':
        {'KLOG_RING_TIMEOUT', 'KLOG_GPU_RESET'},
    KL + 'journal-short-ryzen5-apu-qcm-fence-timeout-gpu-reset-mode2-fragment.txt':
        {'KLOG_RING_TIMEOUT', 'KLOG_GPU_RESET'},
    KL + 'rsyslog-iso-gfx1103-7840u-gpu-reset-mode2-fragment.txt': {'KLOG_GPU_RESET'},
    KL + 'dmesg-rdna-0d-smu-not-done-with-previous-command-ring-gfx-timeout-fragment.txt':
        {'KLOG_SMU_FAILURE', 'KLOG_RING_TIMEOUT'},
    KL + 'dmesg-T-rdna2-gfx10-nixos-gpu-reset-kiq-failed-smu-not-done-fragment.txt':
        {'KLOG_SMU_FAILURE', 'KLOG_GPU_RESET'},
    RX6800_LINK: {'KLOG_PCIE_LINK_LIMITED'},
    VEGA56_LINK: {'KLOG_PCIE_LINK_LIMITED'},
    NON_GPU_LINK: {'KLOG_PCIE_LINK_LIMITED'},  # (only because this test takes every address as a GPU: see below)
    FURY_AER: {'KLOG_PCIE_AER_UNCORRECTED'},
    NVIDIA_AER: {'KLOG_PCIE_AER_CORRECTED'},  # (likewise)
    POLARIS_AER: {'KLOG_PCIE_AER_CORRECTED'},
    NO_GPU_AER: {'KLOG_PCIE_AER_UNCORRECTED'},  # (likewise: the newer "Uncorrectable (Non-Fatal)" spelling)
    MI100_GHES: set(),
    KMSG_REAL: set(),
    JOURNAL_REAL: set(),
}


def test_every_capture_has_its_expectation():
    assert sorted(KL + name for name in CAPTURES) == sorted(EXPECTED)


@pytest.mark.parametrize('name', sorted(EXPECTED))
def test_the_classes_each_capture_shows_and_no_other(name):
    if name == KMSG_REAL:
        records = [kernel_log.parse_kmsg_record(data) for data in kmsg_records(fixture(name))]
        found = kernel_log.match(records, kernel_log_rules.compiled(), {'gpus': {}, 'ports': {}}, NOW, None)
        assert not found
        return
    if name == JOURNAL_REAL:
        records = [kernel_log.parse_journal_line(line) for line in fixture(name).splitlines()]
        assert not kernel_log.match(records, kernel_log_rules.compiled(), {'gpus': {}, 'ports': {}}, NOW, None)
        return
    assert set(codes_in(name)) == EXPECTED[name]


def test_every_rule_with_a_capture_matches_one_and_the_others_are_named():
    """A rule whose source names captures matches a line of one; the rules from the kernel's format strings alone
    (no public capture found) are these, and they match no capture line (docs/health.md says so)."""
    lines = [record['text'] for name in EXPECTED if name not in (KMSG_REAL, JOURNAL_REAL)
             for record in records_of(name)]
    format_only = []
    for rule in kernel_log_rules.compiled():
        hits = [line for line in lines if rule['regex'].search(line)]
        if 'kernel format only' in rule['source']:
            format_only.append(rule['pattern'])
            assert not hits, (rule['pattern'], hits[:2])
        else:
            assert hits, rule['pattern']
    assert len(format_only) == 4  # RAS count and deferred forms, poison consumption, GPU Recovery/ASIC reset failed


def test_the_correctable_twin_of_the_ras_count_line_does_not_match():
    """The MI300X capture's "1533 new correctable hardware errors detected in xgmi_wafl block": the same printk as the
    uncorrectable count, which must not match it (a correctable error is no fault)."""
    found = codes_in(MI300X_UE)
    assert found['KLOG_RAS_UNCORRECTABLE'] == {'0000:dd:00.0': 1}  # the ATHUB line only, not 0000:9d:00.0's count


def test_codes_are_stable_upper_snake_and_severities_known():
    for rule in kernel_log_rules.RULES + kernel_log_rules.DERIVED:
        assert kernel_log_rules._CODE.match(rule['code']) and rule['severity'] in ('fatal', 'warn')
        assert rule['scope'] in ('any', 'gpu') and rule['description'] and rule['source']
    assert kernel_log_rules.BUILTIN_CODES == (
        'KLOG_GPU_RESET', 'KLOG_PCIE_AER_CORRECTED', 'KLOG_PCIE_AER_UNCORRECTED', 'KLOG_PCIE_LINK_LIMITED',
        'KLOG_PROBE_FAILED', 'KLOG_RAS_UNCORRECTABLE', 'KLOG_RESET_FAILED', 'KLOG_RESET_LOOP', 'KLOG_RING_TIMEOUT',
        'KLOG_SMU_FAILURE')


# --- findings tied to GPUs -----------------------------------------------------------------------------------------

def test_a_probe_failure_is_tied_to_each_gpu_by_its_address():
    where = kernel_log.topology([{'bdf': '0000:83:00.0', 'gpu': None}, {'bdf': '0000:c3:00.0', 'gpu': None}], {})
    found = codes_in(MI210, where)
    # "Fatal error during GPU init" and "probe of ... failed" for each GPU: two distinct lines each
    assert found == {'KLOG_PROBE_FAILED': {'0000:83:00.0': 2, '0000:c3:00.0': 2}}


def test_the_gpu_index_is_the_kfd_one():
    gpus = [{'bdf': bdf, 'gpu': number} for number, bdf in enumerate(
        ['0000:1b:00.0', '0000:3d:00.0', '0000:4e:00.0', '0000:5f:00.0', '0000:9d:00.0', '0000:bd:00.0', '0000:cd:00.0',
         '0000:dd:00.0'])]
    found = kernel_log.match(records_of(MI300X_UE), kernel_log_rules.compiled(), kernel_log.topology(gpus, {}), NOW,
                             NOW - 10 ** 6)
    assert found[('KLOG_RAS_UNCORRECTABLE', '0000:dd:00.0')]['gpu'] == 7
    assert list(found) == [('KLOG_RAS_UNCORRECTABLE', '0000:dd:00.0'), ('KLOG_GPU_RESET', '0000:dd:00.0')]


def test_aer_of_the_ports_above_a_gpu_counts_for_that_gpu_and_of_other_devices_not():
    # The RDNA3 card: GPU 0000:03:00.0 behind its switch (0000:01:00.0 upstream, 0000:02:00.0) on root port 00:01.0.
    where = kernel_log.topology([{'bdf': '0000:03:00.0', 'gpu': 0}],
                                {'0000:03:00.0': ['0000:00:01.0', '0000:01:00.0', '0000:02:00.0']})
    found = kernel_log.match(records_of(RDNA3_AER), kernel_log_rules.compiled(), where, NOW, NOW - 10 ** 6)
    aer = found[('KLOG_PCIE_AER_CORRECTED', '0000:03:00.0')]
    assert len(aer['lines']) == 2 and aer['gpu'] == 0 and aer['via'] == '0000:00:01.0'  # the newest of the two
    # The Fury Nano: uncorrected (fatal) on the root port above amdgpu 0000:06:00.0.
    where = kernel_log.topology([{'bdf': '0000:06:00.0', 'gpu': 0}], {'0000:06:00.0': ['0000:00:1c.4']})
    assert set(kernel_log.match(records_of(FURY_AER), kernel_log_rules.compiled(), where, NOW, None)) == {
        ('KLOG_PCIE_AER_UNCORRECTED', '0000:06:00.0')}
    # An AMD GPU elsewhere: the NVIDIA host's root port errors and the chipset devices' slow links are not its.
    where = kernel_log.topology([{'bdf': '0000:0b:00.0', 'gpu': 0}],
                                {'0000:0b:00.0': ['0000:00:03.1', '0000:09:00.0', '0000:0a:00.0']})
    nvidia_host = {'gpus': {'0000:43:00.0': 0}, 'ports': {}}
    assert kernel_log.match(records_of(NVIDIA_AER), kernel_log_rules.compiled(), nvidia_host, NOW, None) == {}
    assert kernel_log.match(records_of(NON_GPU_LINK), kernel_log_rules.compiled(), where, NOW, None) == {}
    # No GPU below the Minisforum's root port: its uncorrectable (non-fatal) error is not a GPU's.
    minisforum = {'gpus': {'0000:03:00.0': 0}, 'ports': {}}
    assert kernel_log.match(records_of(NO_GPU_AER), kernel_log_rules.compiled(), minisforum, NOW, None) == {}
    # Two Polaris GPUs on an X99 host: the excerpt does not say which slot is which; placed below the root port
    # 0000:00:03.0 (the first x16 root port of Haswell-E), the first GPU gets the three correctable errors.
    where = kernel_log.topology([{'bdf': '0000:04:00.0', 'gpu': 0}, {'bdf': '0000:05:00.0', 'gpu': 1}],
                                {'0000:04:00.0': ['0000:00:03.0'], '0000:05:00.0': ['0000:00:02.0']})
    found = kernel_log.match(records_of(POLARIS_AER), kernel_log_rules.compiled(), where, NOW, None)
    assert list(found) == [('KLOG_PCIE_AER_CORRECTED', '0000:04:00.0')]
    assert len(found[('KLOG_PCIE_AER_CORRECTED', '0000:04:00.0')]['lines']) == 1  # one message, three times
    # The APEI/GHES record of the MI100 host is not read (docs/health.md): nothing.
    assert codes_in(MI100_GHES) == {}


def test_a_limited_link_named_on_the_switch_above_the_gpu():
    # RX 6800: the line names the card's upstream switch port 0000:0b:00.0; the GPU is 0000:0d:00.0 below it.
    where = kernel_log.topology([{'bdf': '0000:0d:00.0', 'gpu': 0}],
                                {'0000:0d:00.0': ['0000:00:03.1', '0000:0b:00.0', '0000:0c:00.0']})
    found = kernel_log.match(records_of(RX6800_LINK), kernel_log_rules.compiled(), where, NOW, None)
    assert list(found) == [('KLOG_PCIE_LINK_LIMITED', '0000:0d:00.0')]
    assert found[('KLOG_PCIE_LINK_LIMITED', '0000:0d:00.0')]['via'] == '0000:0b:00.0'
    # Vega 56 on a Pi: 0000:01:00.0 is the switch above GPU 0000:03:00.0.
    where = kernel_log.topology([{'bdf': '0000:03:00.0', 'gpu': 0}],
                                {'0000:03:00.0': ['0000:00:00.0', '0000:01:00.0', '0000:02:00.0']})
    assert list(kernel_log.match(records_of(VEGA56_LINK), kernel_log_rules.compiled(), where, NOW, None)) == [
        ('KLOG_PCIE_LINK_LIMITED', '0000:03:00.0')]


def test_a_port_above_two_gpus_and_a_line_without_an_address():
    where = kernel_log.topology([{'bdf': '0000:03:00.0', 'gpu': 0}, {'bdf': '0000:04:00.0', 'gpu': 1}],
                                {'0000:03:00.0': ['0000:00:1c.4'], '0000:04:00.0': ['0000:00:1c.4']})
    found = kernel_log.match(records_of(FURY_AER), kernel_log_rules.compiled(), where, NOW, None)
    assert list(found) == [('KLOG_PCIE_AER_UNCORRECTED', '0000:00:1c.4')]
    assert found[('KLOG_PCIE_AER_UNCORRECTED', '0000:00:1c.4')]['gpu'] is None
    # "ring sdma0 timeout" names no device: the one GPU of a node, else the node ('').
    one = kernel_log.match(records_of(YOGA), kernel_log_rules.compiled(), kernel_log.topology(
        [{'bdf': '0000:33:00.0', 'gpu': 0}], {}), NOW, None)
    assert ('KLOG_RING_TIMEOUT', '0000:33:00.0') in one
    two = kernel_log.match(records_of(YOGA), kernel_log_rules.compiled(), where, NOW, None)
    assert ('KLOG_RING_TIMEOUT', '') in two


def test_repeated_lines_count_once_a_run():
    """The 780M's five resets print the same "GPU reset begin!. Source:  3": one distinct line this run, five events
    for the reset loop. The SMU's "I'm not done" line three times (three timestamps): once."""
    where = {'gpus': {'0000:c5:00.0': 0}, 'ports': {}}
    found = kernel_log.match(records_of(LOOP_6018), kernel_log_rules.compiled(), where, NOW, NOW - 80000)
    reset = found[('KLOG_GPU_RESET', '0000:c5:00.0')]
    assert len(reset['lines']) == 1 and len(reset['events']) == 5
    assert codes_in(KL + 'dmesg-rdna-0d-smu-not-done-with-previous-command-ring-gfx-timeout-fragment.txt')[
        'KLOG_SMU_FAILURE'] == {'0000:0d:00.0': 1}


# --- the reset loop ------------------------------------------------------------------------------------------------

def loop_events(name, bdf):
    found = kernel_log.match(records_of(name), kernel_log_rules.compiled(), {'gpus': {bdf: 0}, 'ports': {}}, NOW,
                             NOW - 80000)
    return {bdf: [moment for moment, _text in found[('KLOG_GPU_RESET', bdf)]['events']]}


def test_a_reset_loop_is_counted_once_per_window():
    events = loop_events(LOOP_6018, '0000:c5:00.0')  # resets at 73314, 73327, 73819, 73838, 74121 s
    loops, kept, last = kernel_log.reset_loops({}, {}, events, 3, 3600)
    assert loops == {'0000:c5:00.0': 1} and len(kept['0000:c5:00.0']) == 5
    # Two resets in five minutes is a loop: at 73327 and again at 73838 (a window after), not at 74121.
    loops, _kept, _last = kernel_log.reset_loops({}, {}, events, 2, 300)
    assert loops == {'0000:c5:00.0': 2}
    # The 8845HS: five resets in 25 minutes, one loop in the hour; none with 6 resets needed.
    events = loop_events(LOOP_4444, '0000:c6:00.0')
    assert kernel_log.reset_loops({}, {}, events, 3, 3600)[0] == {'0000:c6:00.0': 1}
    assert kernel_log.reset_loops({}, {}, events, 6, 3600)[0] == {}


def test_a_reset_loop_across_runs_and_not_again_within_its_window():
    events = sorted(loop_events(LOOP_4444, '0000:c6:00.0')['0000:c6:00.0'])
    first = {'0000:c6:00.0': events[:2]}
    loops, kept, last = kernel_log.reset_loops({}, {}, first, 3, 3600)
    assert loops == {} and kept == first
    loops, kept, last = kernel_log.reset_loops(kept, last, {'0000:c6:00.0': events[2:3]}, 3, 3600)
    assert loops == {'0000:c6:00.0': 1}
    loops, kept, last = kernel_log.reset_loops(kept, last, {'0000:c6:00.0': events[3:]}, 3, 3600)
    assert loops == {}  # the same window: counted once


# --- readers: a file ----------------------------------------------------------------------------------------------

def test_a_file_is_read_from_where_the_last_run_stopped_and_again_after_rotation(tmp_path):
    log = tmp_path / 'kern.log'
    lines = fixture(LOOP_6018).splitlines(True)
    log.write_text(''.join(lines[:10]))
    first = kernel_log.read_file(str(log), None, 1 << 20)
    assert first['lines'] == 10 and not first['truncated'] and first['position']['offset'] == log.stat().st_size
    with open(str(log), 'a') as handle:
        handle.write(''.join(lines[10:15]))
    second = kernel_log.read_file(str(log), first['position'], 1 << 20)
    assert [record['text'] for record in second['records']] == [
        kernel_log.parse_line(line)['text'] for line in lines[10:15]]
    # truncated in place (copytruncate): from 0 again
    log.write_text(''.join(lines[:3]))
    third = kernel_log.read_file(str(log), second['position'], 1 << 20)
    assert third['lines'] == 3
    # replaced (rotated): a new inode, from 0
    os.rename(str(log), str(tmp_path / 'kern.log.1'))
    log.write_text(''.join(lines[20:22]))
    fourth = kernel_log.read_file(str(log), third['position'], 1 << 20)
    assert fourth['lines'] == 2 and fourth['position']['ino'] != third['position']['ino']


def test_a_fragment_cut_mid_line_waits_for_its_end(tmp_path):
    log = tmp_path / 'kern.log'
    text = fixture(MI210)
    cut = text.index('failed with error -12') + 6  # inside the 4th line
    log.write_text(text[:cut])
    first = kernel_log.read_file(str(log), None, 1 << 20)
    assert first['lines'] == text[:cut].count('\n') == 7  # the probe line is the 8th
    assert first['position']['offset'] == text.rindex('\n', 0, cut) + 1  # the cut line is left for the next run
    with open(str(log), 'a') as handle:
        handle.write(text[cut:])
    second = kernel_log.read_file(str(log), first['position'], 1 << 20)
    assert second['records'][0]['text'] == 'amdgpu: probe of 0000:c3:00.0 failed with error -12'


def test_an_8_mb_log_is_read_within_the_bound(tmp_path):
    """8 MB of a real capture repeated: each run reads at most max_bytes (4 MiB), ends on a whole line, says it is
    truncated, and the next run goes on; a first run on a file larger than the bound reads its last 4 MiB."""
    capture = fixture(LOOP_4444).encode('utf-8')
    log = tmp_path / 'kern.log'
    with open(str(log), 'wb') as handle:
        while handle.tell() < 8 * 1000 * 1000:
            handle.write(capture)
    size = log.stat().st_size
    started = time.time()
    first = kernel_log.read_file(str(log), None, 4 << 20)
    assert first['truncated'] and first['bytes'] <= 4 << 20 and first['position']['offset'] == size
    assert all(record['text'] for record in first['records'][:1])
    start = {'path': str(log), 'dev': first['position']['dev'], 'ino': first['position']['ino'], 'offset': 0}
    reads, position, total = 0, start, 0
    while position['offset'] < size:
        got = kernel_log.read_file(str(log), position, 4 << 20)
        assert got['bytes'] <= 4 << 20 and got['lines'] > 0
        total += got['lines']
        position, reads = got['position'], reads + 1
    assert reads == 2 and total == capture.count(b'\n') * (size // len(capture))
    where = {'gpus': {'0000:c6:00.0': 0}, 'ports': {}}
    found = kernel_log.match(first['records'], kernel_log_rules.compiled(), where, NOW, NOW - 10 ** 5)
    assert set(code for code, _key in found) == {'KLOG_GPU_RESET', 'KLOG_RING_TIMEOUT'}
    assert time.time() - started < 30


def test_a_file_the_check_must_not_trust(tmp_path):
    log = tmp_path / 'kern.log'
    log.write_text(fixture(MI210))
    link = tmp_path / 'link.log'
    link.symlink_to(log)
    assert 'a link (not followed)' in kernel_log.read_file(str(link), None, 1 << 20)['problem']
    os.chmod(str(log), 0o666)
    assert 'writable by every user' in kernel_log.read_file(str(log), None, 1 << 20)['problem']
    assert 'not a regular file' in kernel_log.read_file(str(tmp_path), None, 1 << 20)['problem']
    assert 'cannot be read' in kernel_log.read_file(str(tmp_path / 'none'), None, 1 << 20)['problem']


# --- readers: /dev/kmsg --------------------------------------------------------------------------------------------

def kmsg_records(text):
    """The records of a /dev/kmsg capture (each 'prio,seq,...;' line and its ' KEY=' lines), as read() returns them."""
    records, current = [], []
    for line in text.splitlines(True):
        if current and not line.startswith(' '):
            records.append(''.join(current).encode('utf-8'))
            current = []
        current.append(line)
    if current:
        records.append(''.join(current).encode('utf-8'))
    return records


def kmsg_built_from_dmesg(name, first_seq=1000, prio=3):
    """/dev/kmsg records built from a dmesg capture's real lines: 'prio,seq,usec,-;text' with the line's own
    [seconds] as usec, and the PCI device a dev_printk line names as its DEVICE=+pci: dictionary line."""
    records = []
    for number, line in enumerate(fixture(name).splitlines()):
        record = kernel_log.parse_line(line)
        usec = int(round((record['mono'] or 0) * 1e6))
        text = '%d,%d,%d,-;%s\n' % (prio, first_seq + number, usec, record['text'])
        match = kernel_log._BDF.match(record['text'].split(' ', 1)[-1])
        if match:
            text += ' SUBSYSTEM=pci\n DEVICE=+pci:%s\n' % match.group(1)
        records.append(text.encode('utf-8'))
    return records


class FakeKmsg(object):
    """os.open/os.read/os.close over a list of records: one record a read(), EAGAIN at the end; an item that is an
    errno number raises that error once (EPIPE: the reader's position was overwritten)."""

    def __init__(self, records):
        self.items = list(records)
        self.opened = self.closed = 0

    def open(self, path, flags):
        assert flags & os.O_NONBLOCK
        self.opened += 1
        self.at = 0
        return 99

    def read(self, fd, size):
        assert size >= kernel_log.KMSG_READ
        if self.at >= len(self.items):
            raise OSError(errno.EAGAIN, 'Resource temporarily unavailable')
        item = self.items[self.at]
        self.at += 1
        if isinstance(item, int):
            raise OSError(item, os.strerror(item))
        return item

    def close(self, fd):
        self.closed += 1


def test_the_real_kmsg_records_parse():
    records = [kernel_log.parse_kmsg_record(data) for data in kmsg_records(fixture(KMSG_REAL))]
    assert [record['seq'] for record in records] == list(range(197, 209))
    assert records[6]['text'].startswith('pci 0000:00:00.0: [8086:0d57] type 00 class 0x060000')
    assert records[6]['device'] == '0000:00:00.0' and records[0]['device'] is None  # pci_bus:0000:00 is no function
    assert records[0]['mono'] == pytest.approx(0.303993) and records[0]['facility'] == 0


def test_kmsg_reads_after_the_saved_sequence_number_and_sees_lost_records():
    fake = FakeKmsg(kmsg_records(fixture(KMSG_REAL)))
    got = kernel_log.read_kmsg(200, 1 << 20, '/dev/kmsg', fake.open, fake.read, fake.close)
    assert [record['seq'] for record in got['records']] == list(range(201, 209)) and got['position'] == {'seq': 208}
    assert not got['lost'] and fake.closed == 1
    # EPIPE (overwritten while reading) and a saved number older than the oldest record: lost
    fake = FakeKmsg([errno.EPIPE] + kmsg_records(fixture(KMSG_REAL)))
    got = kernel_log.read_kmsg(150, 1 << 20, '/dev/kmsg', fake.open, fake.read, fake.close)
    assert got['lost'] and got['lines'] == 12
    # bounded: records stop before the byte bound and the next run goes on from the last one read
    records = kmsg_records(fixture(KMSG_REAL))
    fake = FakeKmsg(records)
    got = kernel_log.read_kmsg(None, len(records[0]) + len(records[1]), '/dev/kmsg', fake.open, fake.read, fake.close)
    assert got['truncated'] and got['lines'] == 2 and got['position'] == {'seq': 198}


def test_kmsg_records_built_from_a_gpu_capture_and_user_space_records():
    records = kmsg_built_from_dmesg(MI210)
    fake = FakeKmsg(records)
    got = kernel_log.read_kmsg(None, 1 << 20, '/dev/kmsg', fake.open, fake.read, fake.close)
    assert got['records'][4]['device'] == '0000:c3:00.0'
    where = {'gpus': {'0000:83:00.0': 1, '0000:c3:00.0': 0}, 'ports': {}}
    found = kernel_log.match(got['records'], kernel_log_rules.compiled(), where, NOW, NOW - 100)
    assert set(found) == {('KLOG_PROBE_FAILED', '0000:83:00.0'), ('KLOG_PROBE_FAILED', '0000:c3:00.0')}
    # What user space writes into /dev/kmsg (facility 1, user) is no kernel message: not read.
    fake = FakeKmsg(kmsg_built_from_dmesg(MI210, prio=14))
    assert kernel_log.read_kmsg(None, 1 << 20, '/dev/kmsg', fake.open, fake.read, fake.close)['records'] == []


def test_kmsg_that_cannot_be_opened():
    def refuse(path, flags):
        raise OSError(errno.EPERM, 'Operation not permitted')
    got = kernel_log.read_kmsg(None, 1 << 20, '/dev/kmsg', refuse)
    assert got['problem'] == '/dev/kmsg cannot be read: Operation not permitted'


# --- readers: the journal ------------------------------------------------------------------------------------------

def test_the_real_journal_json_lines_parse():
    records = [kernel_log.parse_journal_line(line) for line in fixture(JOURNAL_REAL).splitlines()]
    assert records[0]['text'].startswith('EXT4-fs error (device sdc2)')
    assert records[0]['wall'] == pytest.approx(1599541804.928338) and records[0]['mono'] == pytest.approx(108101.422325)
    assert records[1]['cursor'].startswith('s=2c2f7f3d64d844aa9bc1844a48026313;i=1f346;')


def journal_built_from_dmesg(name, boot='61c0e40c739f4f009c785cef13b46e17', start=1599541804.0):
    """`journalctl -k -o json` lines built from a dmesg capture's real lines (systemd's Journal JSON Format: one
    object a line, values as strings; MESSAGE the line without its [seconds]; _KERNEL_DEVICE +pci:<bdf> where the
    line is a PCI device's)."""
    out = []
    for number, line in enumerate(fixture(name).splitlines()):
        record = kernel_log.parse_line(line)
        mono = int(round((record['mono'] or 0) * 1e6))
        item = {'__CURSOR': 's=ab;i=%x;b=%s;m=%x;t=0;x=0' % (number + 1, boot, mono),
                '__REALTIME_TIMESTAMP': str(int(start * 1e6) + mono), '__MONOTONIC_TIMESTAMP': str(mono),
                '_BOOT_ID': boot, 'MESSAGE': record['text']}
        match = kernel_log._BDF.match(record['text'].split(' ', 1)[-1])
        if match:
            item['_KERNEL_DEVICE'] = '+pci:' + match.group(1)
        out.append(json.dumps(item))
    return ('\n'.join(out) + '\n').encode('utf-8')


class FakeJournalctl(object):
    """A runner for read_journal: records the argv; answers with (rc, out, err, stopped), cutting out at limit."""

    def __init__(self, *answers):
        self.answers = list(answers)
        self.calls = []

    def __call__(self, argv, timeout, limit):
        self.calls.append(argv)
        rc, out, err, stopped = self.answers.pop(0)
        if len(out) > limit:
            out, stopped = out[:limit], 'output_cut'
        return rc, out, err, stopped


def test_the_journal_is_read_after_its_cursor_and_cut_output_is_used_to_its_last_entry():
    out = journal_built_from_dmesg(LOOP_6018)
    fake = FakeJournalctl((0, out, b'', None))
    got = kernel_log.read_journal('/usr/bin/journalctl', None, 1 << 20, fake)
    assert fake.calls[0][:5] == ['/usr/bin/journalctl', '-k', '-b', '-o', 'json'] and '--after-cursor' not in \
        ' '.join(fake.calls[0])
    assert got['lines'] == len(fixture(LOOP_6018).splitlines()) and not got['truncated']
    assert got['position']['cursor'].startswith('s=ab;i=%x;' % got['lines'])
    # the output cut inside an entry (the byte bound): up to the last complete one; the next run goes on after it
    limit = len(out) // 2
    fake = FakeJournalctl((0, out, b'', None))
    cut = kernel_log.read_journal('/usr/bin/journalctl', None, limit, fake)
    assert cut['truncated'] and 0 < cut['lines'] < got['lines'] and cut['bytes'] <= limit
    fake = FakeJournalctl((0, out, b'', None))
    kernel_log.read_journal('/usr/bin/journalctl', cut['position']['cursor'], 1 << 20, fake)
    assert fake.calls[0][-1] == '--after-cursor=' + cut['position']['cursor']


def test_a_refused_cursor_an_old_journalctl_a_failing_one_and_a_hung_one():
    out = journal_built_from_dmesg(MI210)
    fake = FakeJournalctl((1, b'', b'Failed to seek to cursor: Invalid argument\n', None), (0, out, b'', None))
    got = kernel_log.read_journal('journalctl', 's=old', 1 << 20, fake)
    assert got['lines'] == 12 and 'refused' in got['note'] and '--after-cursor' not in ' '.join(fake.calls[1])
    fake = FakeJournalctl((1, b'', b"journalctl: unrecognized option '--output-fields=MESSAGE'\n", None),
                          (0, out, b'', None))
    assert kernel_log.read_journal('journalctl', None, 1 << 20, fake)['lines'] == 12
    assert not [arg for arg in fake.calls[1] if arg.startswith('--output-fields')]
    fake = FakeJournalctl((1, b'', b'No journal files were found.\n', None))
    assert kernel_log.read_journal('journalctl', None, 1 << 20, fake)['problem'] == \
        'journalctl exit status 1: No journal files were found.'
    fake = FakeJournalctl((None, b'', b'', 'timeout'))
    assert 'did not answer within 5 s' in kernel_log.read_journal('journalctl', None, 1 << 20, fake)['problem']


def test_a_journal_message_of_bytes():
    line = json.dumps({'MESSAGE': [ord(char) for char in 'amdgpu 0000:83:00.0: amdgpu: GPU reset begin!'],
                       '__CURSOR': 's=1'})
    assert kernel_log.parse_journal_line(line.encode())['text'] == 'amdgpu 0000:83:00.0: amdgpu: GPU reset begin!'


def test_run_bounded_cuts_a_tool_that_prints_too_much_and_stops_a_hung_one():
    rc, out, err, stopped = health_run.run_bounded([sys.executable, '-c', 'print("x" * 100000)'], 10, 1000)
    assert stopped == 'output_cut' and len(out) == 1000
    rc, out, err, stopped = health_run.run_bounded([sys.executable, '-c', 'import time; time.sleep(30)'], 0.5, 1000)
    assert stopped == 'timeout' and out == b''


# --- choosing the source -------------------------------------------------------------------------------------------

def io_with(journal=None, kmsg=None):
    fake = kmsg or FakeKmsg([])
    return {'find': lambda name: '/usr/bin/journalctl' if journal is not None else None,
            'run': journal or FakeJournalctl(), 'kmsg_open': fake.open, 'kmsg_read': fake.read,
            'kmsg_close': fake.close}


def test_auto_reads_the_journal_else_kmsg_else_says_there_is_none():
    want = dict(WANT)
    got = kernel_log.read_source(want, kernel_log.new_state(NOW), 'b1', io_with(
        FakeJournalctl((0, journal_built_from_dmesg(MI210), b'', None))))
    assert got['source'] == 'journal' and got['choice'] == 'journal' and got['lines'] == 12
    # no journalctl: /dev/kmsg
    got = kernel_log.read_source(want, kernel_log.new_state(NOW), 'b1', io_with(
        kmsg=FakeKmsg(kmsg_built_from_dmesg(MI210))))
    assert got['source'] == 'kmsg' and got['choice'] == 'kmsg' and got['lines'] == 12
    # a journal with no kernel message of this boot (a container): /dev/kmsg
    got = kernel_log.read_source(want, kernel_log.new_state(NOW), 'b1', io_with(
        FakeJournalctl((0, b'', b'', None)), FakeKmsg(kmsg_built_from_dmesg(MI210))))
    assert got['source'] == 'kmsg'

    def refuse(path, flags):
        raise OSError(errno.EACCES, 'Permission denied')
    io = io_with(FakeJournalctl((1, b'', b'No journal files were found.\n', None)))
    io['kmsg_open'] = refuse
    got = kernel_log.read_source(want, kernel_log.new_state(NOW), 'b1', io)
    assert got['source'] == 'none' and not got['explicit']
    assert got['problem'] == ('no journal (journalctl exit status 1: No journal files were found.) and no readable '
                              '/dev/kmsg (/dev/kmsg cannot be read: Permission denied)')


def test_the_saved_position_is_used_only_on_the_same_boot():
    state = dict(kernel_log.new_state(NOW), boot_id='b1', auto='kmsg', kmsg={'seq': 1005})
    fake = FakeKmsg(kmsg_built_from_dmesg(MI210))
    got = kernel_log.read_source(WANT, state, 'b1', io_with(kmsg=fake))
    assert got['lines'] == 6  # after record 1005
    fake = FakeKmsg(kmsg_built_from_dmesg(MI210))
    got = kernel_log.read_source(WANT, state, 'b2', io_with(kmsg=fake))
    assert got['lines'] == 12  # a new boot: the whole ring buffer


# --- holds, acknowledgement, ageing, totals ------------------------------------------------------------------------

def run_collect(name, state, now, want=None, where=None):
    want = dict(WANT, kernel_log_source='/nonexistent', **(want or {}))
    io = {'find': lambda name: None}
    records = records_of(name)
    kernel_log.anchor_file_times(records, now)
    got = dict(kernel_log._result('file', records=records, lines=len(records), bytes=100),
               explicit=True, choice=None, position={'path': '/x', 'dev': 1, 'ino': 1, 'offset': 100})
    original = kernel_log.read_source
    kernel_log.read_source = lambda want, state, boot, io: got
    try:
        return kernel_log.collect(want, state, now, 'b1', now - 10 ** 6, where or {'gpus': {}, 'ports': {}}, io)
    finally:
        kernel_log.read_source = original


def test_a_fatal_finding_is_held_until_acknowledged_or_aged():
    where = {'gpus': {'0000:83:00.0': None, '0000:c3:00.0': None}, 'ports': {}}
    result, state = run_collect(MI210, None, NOW, where=where)
    entries = health.check_kernel_log(result)
    assert [(item['code'], item['status']) for item in entries] == [('KLOG_PROBE_FAILED', 'fail')] * 2
    assert entries[0]['reason'].startswith('0000:83:00.0: amdgpu failed to probe the GPU (it has no driver until a '
                                           'reboot): 2 line(s) this run, last 2026-01-01T00:00:00Z: amdgpu: probe of '
                                           '0000:83:00.0 failed with error -12; held')
    assert 'held until acknowledged (gpulab-gpu-health --ack-kernel-log KLOG_PROBE_FAILED) or 72 h' in \
        entries[0]['reason']
    assert result['summary']['run']['KLOG_PROBE_FAILED'] == 4 and result['summary']['severity'][
        'KLOG_PROBE_FAILED'] == 'fatal'
    # an hour later, nothing new: still failing (the lines are gone from the window)
    result, state = run_collect(MI300X_FAULT, state, NOW + 3600, where=where)
    held = health.check_kernel_log(result)
    assert [(item['code'], item['status']) for item in held] == [('KLOG_PROBE_FAILED', 'fail')] * 2
    assert 'last seen 2026-01-01T00:00:00Z' in held[0]['reason']
    assert result['summary']['totals']['KLOG_PROBE_FAILED'] == 4 and result['summary']['run'][
        'KLOG_PROBE_FAILED'] == 0
    # acknowledged: a pass
    state, removed = kernel_log.acknowledge(state, ['KLOG_PROBE_FAILED'], NOW + 3700, 'admin')
    assert len(removed) == 2 and state['acks'][-1]['codes'] == ['KLOG_PROBE_FAILED']
    result, state = run_collect(MI300X_FAULT, state, NOW + 3800, where=where)
    assert [item['status'] for item in health.check_kernel_log(result)] == ['pass']
    # aged out: 72 h after its last line
    result, state = run_collect(MI210, None, NOW, where=where)
    result, state = run_collect(MI300X_FAULT, state, NOW + 72 * 3600, where=where)
    assert [item['status'] for item in health.check_kernel_log(result)] == ['pass']
    # hold_hours 0: never ages
    result, state = run_collect(MI210, None, NOW, {'kernel_log_hold_hours': 0}, where)
    result, state = run_collect(MI300X_FAULT, state, NOW + 1000 * 3600, {'kernel_log_hold_hours': 0}, where)
    assert set(item['status'] for item in health.check_kernel_log(result)) == {'fail'}


def test_acknowledging_only_some_codes_and_bad_codes():
    where = {'gpus': {'0000:dd:00.0': 7}, 'ports': {}}
    result, state = run_collect(MI300X_UE, None, NOW, where=where)
    assert [(item['code'], item['status']) for item in health.check_kernel_log(result)] == [
        ('KLOG_GPU_RESET', 'warn'), ('KLOG_RAS_UNCORRECTABLE', 'fail')]
    state, removed = kernel_log.acknowledge(state, ['KLOG_RESET_LOOP'], NOW, 'admin')
    assert removed == [] and list(state['holds']) == ['KLOG_RAS_UNCORRECTABLE 0000:dd:00.0']
    with pytest.raises(ValueError, match='not a kernel-log code'):
        kernel_log.acknowledge(state, ['rm -rf'], NOW, 'admin')


def test_a_fatal_line_older_than_the_hold_is_a_warning():
    """The journal gives a line's real time: a probe failure logged four days before the first run (the check was
    installed on a node that runs since) is reported, not held."""
    records = [kernel_log.parse_journal_line(line) for line in journal_built_from_dmesg(
        MI210, start=NOW - 4 * 86400).splitlines()]
    found = kernel_log.match(records, kernel_log_rules.compiled(), {'gpus': {'0000:c3:00.0': 0, '0000:83:00.0': 1},
                                                                    'ports': {}}, NOW, None)
    listed = list(found.values())
    for finding in listed:
        finding['count'] = len(finding['lines'])
    holds, fresh, stale = kernel_log.holds_after({}, listed, NOW, 72)
    assert holds == {} and fresh == {} and len(stale) == 2


def test_a_reset_loop_fails_and_is_held_with_its_gpu():
    where = {'gpus': {'0000:c5:00.0': 0}, 'ports': {}}
    result, state = run_collect(LOOP_6018, None, NOW, where=where)
    entries = health.check_kernel_log(result)
    assert [(item['code'], item['status'], item['gpu']) for item in entries] == [
        ('KLOG_GPU_RESET', 'warn', 0), ('KLOG_RESET_LOOP', 'fail', 0), ('KLOG_RING_TIMEOUT', 'warn', 0)]
    loop = entries[1]['reason']
    assert loop.startswith('0000:c5:00.0: the GPU reset 3 times within 60 min (5 reset(s) within the window)')
    assert result['summary']['run']['KLOG_RESET_LOOP'] == 1 and result['summary']['run']['KLOG_GPU_RESET'] == 1
    # acknowledging the loop forgets the resets behind it: one more reset is no loop again
    state, removed = kernel_log.acknowledge(state, ['KLOG_RESET_LOOP'], NOW + 60, 'admin')
    assert removed and '0000:c5:00.0' not in state['resets']


def test_site_rules_from_the_data_file():
    rules = [{'code': 'KLOG_SITE_PPT_LIMIT', 'severity': 'warn', 'pattern': r"Couldn't get PPT limit",
              'description': 'the SMU did not give the power limit'}]
    checked = kernel_log_rules.validate_extra(rules)
    assert checked[0]['scope'] == 'any' and checked[0]['class'] == 'site'
    result, _state = run_collect(MI300X_UE2, None, NOW, {'kernel_log_extra_rules': rules},
                                 {'gpus': dict(('0000:%s:00.0' % bus, n) for n, bus in enumerate(
                                     ('1b', '3d', '4e', '5f', '9d', 'bd', 'cd', 'dd'))), 'ports': {}})
    site = [item for item in health.check_kernel_log(result) if item['code'] == 'KLOG_SITE_PPT_LIMIT']
    assert len(site) == 7 and result['summary']['severity']['KLOG_SITE_PPT_LIMIT'] == 'warn'
    for bad, words in (([{'code': 'ppt', 'severity': 'warn', 'pattern': 'x'}], 'UPPER_SNAKE starting KLOG_'),
                       ([{'code': 'KLOG_GPU_RESET', 'severity': 'warn', 'pattern': 'x'}], 'is a built-in code'),
                       ([{'code': 'KLOG_X', 'severity': 'fatal!', 'pattern': 'x'}], 'severity must be fatal or warn'),
                       ([{'code': 'KLOG_X', 'severity': 'warn', 'pattern': '('}], 'not a regular expression'),
                       ([{'code': 'KLOG_X', 'severity': 'warn', 'pattern': 'x' * 501}], '1 to 500 characters'),
                       ([{'code': 'KLOG_X', 'severity': 'warn', 'pattern': 'x', 'colour': 1}], 'cannot have'),
                       ([{'code': 'KLOG_X', 'severity': 'warn', 'pattern': 'x'},
                         {'code': 'KLOG_X', 'severity': 'fatal', 'pattern': 'y'}], 'one code has one severity'),
                       ('KLOG_X', 'must be a list'), ([{}] * 51, 'at most 50')):
        with pytest.raises(ValueError, match=words):
            kernel_log_rules.validate_extra(bad)
    with pytest.raises(health.DataError, match='kernel_log_extra_rules\\[0\\]: severity'):
        health.expected({'kernel_log_extra_rules': [{'code': 'KLOG_X', 'severity': 'x', 'pattern': 'x'}]})


def test_the_data_file_keys_are_checked():
    for data, words in (({'kernel_log_source': 'syslog'}, 'kernel_log_source must be auto, journal, kmsg, none'),
                        ({'kernel_log_source': 'var/log/kern.log'}, 'kernel_log_source must be'),
                        ({'kernel_log_max_bytes': 10}, 'kernel_log_max_bytes must be a whole number from 65536'),
                        ({'kernel_log_hold_hours': -1}, 'kernel_log_hold_hours must be a whole number from 0'),
                        ({'kernel_log_reset_loop_count': 1}, 'kernel_log_reset_loop_count must be'),
                        ({'kernel_log_reset_loop_minutes': True}, 'kernel_log_reset_loop_minutes must be')):
        with pytest.raises(health.DataError, match=words):
            health.expected(data)
    assert health.expected({'kernel_log_source': '/var/log/gpulab-fixture-kern.log'})['kernel_log_max_bytes'] == \
        4 << 20


def test_a_source_the_data_names_that_cannot_be_read_is_a_warning_and_none_asked_is_a_pass():
    base = {'findings': [], 'held': [], 'bytes': 0, 'lines': 0, 'truncated': False, 'lost': False, 'note': None,
            'read': True, 'want': dict((key, WANT[key]) for key in (
                'kernel_log_hold_hours', 'kernel_log_reset_loop_count', 'kernel_log_reset_loop_minutes'))}
    missing = dict(base, source='file', problem='/var/log/x cannot be read: No such file or directory',
                   explicit=True)
    missing['want']['kernel_log_source'] = '/var/log/x'
    assert [(item['code'], item['status']) for item in health.check_kernel_log(missing)] == [('KERNEL_LOG', 'warn')]
    none = dict(base, source='none', problem='no journal (...) and no readable /dev/kmsg (...)', explicit=False)
    assert health.check_kernel_log(none)[0]['status'] == 'pass'
    assert 'kernel log not checked: no journal' in health.check_kernel_log(none)[0]['reason']
