# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gather_pci over sysfs trees built from the lspci/ and kfd-topology/ captures.

Each tree holds the values a capture shows (ids, classes, revisions, drivers, link speeds and widths, KFD
properties); where a test needs a value the capture lacks, the comment beside it says where it comes from.
The trees are built by tests/unit/sysfs_tree.py, the project's one sysfs builder, as the kernel lays them out.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

import pytest

from ansible_collections.gpulab.rocm.plugins.module_utils.parsers import pci
from ansible_collections.gpulab.rocm.tests.unit.gpu_facts_helpers import fixture, fixture_names
from ansible_collections.gpulab.rocm.tests.unit.sysfs_tree import add_function, add_kfd_node, lspci_links, sysfs_speed

# --- values from the captures ----------------------------------------------------------------------------------


def sysfs_tail(name):
    """{file: value} from a capture of `tail -v -n +1 /sys/bus/pci/devices/<bdf>/*_link_*`."""
    values = {}
    for match in re.finditer(r'==> \S+/(\w+) <==\n(.*)\n', fixture(name)):
        values[match.group(1)] = match.group(2)
    return values


def lspci_n(name):
    """{address: (class, vendor, device, revision)} from a capture of `lspci -n`."""
    functions = {}
    for line in fixture(name).splitlines():
        match = re.match(r'^(\S+) ([0-9a-f]{4}): ([0-9a-f]{4}):([0-9a-f]{4})(?: \(rev ([0-9a-f]{2})\))?', line)
        if match:
            functions['0000:' + match.group(1)] = match.groups()[1:]
    return functions


@pytest.fixture
def roots(tmp_path):
    """(sysfs root, filesystem root, proc root) of an empty host outside any container."""
    sysfs, root, proc = tmp_path / 'sys', tmp_path / 'root', tmp_path / 'proc'
    for folder in (sysfs / 'bus' / 'pci' / 'devices', root, proc / '1'):
        folder.mkdir(parents=True)
    (proc / '1' / 'cgroup').write_text('0::/init.scope\n')
    (proc / '1' / 'environ').write_bytes(b'HOME=/\0TERM=linux\0')
    return str(sysfs), str(root), str(proc)


def gather(roots):
    return pci.gather_pci(*roots)


def test_every_capture_is_used():
    with open(__file__) as handle:
        source = handle.read()
    for tool in ('lspci', 'kfd-topology', 'sysfs'):
        for name in fixture_names(tool):
            assert '{0}/{1}'.format(tool, name) in source


# --- the captures ---------------------------------------------------------------------------------------------

def test_link_behind_an_on_package_switch_is_the_slot_link(roots):
    # lspci/sysfs-tail-link-attrs-*: a PCIe 5.0 Radeon whose endpoint 03:00.0 reports the internal link while its
    # upstream switch port 01:00.0 reports the slot link; sysfs-pp_dpm_pcie-*: the same card's amdgpu DPM levels.
    # Not in the captures: the root port's address (00:01.1 here), the downstream port 02:00.0's files, and the
    # model (the comment names none), so the endpoint has no `device` file.
    sysfs = roots[0]
    endpoint, upstream = (sysfs_tail('lspci/sysfs-tail-link-attrs-gpu-endpoint-03-00.0-reports-full.txt'),
                          sysfs_tail('lspci/sysfs-tail-link-attrs-upstream-port-01-00.0-x8-degraded.txt'))
    base = ['pci0000:00', '0000:00:01.1']
    add_function(sysfs, base, cls='0x060400', vendor='0x1022')
    add_function(sysfs, base + ['0000:01:00.0'], cls='0x060400', vendor='0x1002', extra=upstream)
    add_function(sysfs, base + ['0000:01:00.0', '0000:02:00.0'], cls='0x060400', vendor='0x1002')
    add_function(sysfs, base + ['0000:01:00.0', '0000:02:00.0', '0000:03:00.0'], cls='0x030000', vendor='0x1002',
                 driver='amdgpu', extra=dict(endpoint, pp_dpm_pcie=fixture(
                     'lspci/sysfs-pp_dpm_pcie-rdna4-x8-upstream-link.txt').rstrip('\n')))
    facts = gather(roots)
    assert [device['bdf'] for device in facts['devices']] == ['0000:03:00.0']
    link = facts['devices'][0]['link']
    assert (link['current_speed_gts'], link['current_width'], link['max_speed_gts'], link['max_width']) == (
        32.0, 16, 32.0, 16)
    assert (link['upstream_bdf'], link['upstream_current_speed_gts'], link['upstream_current_width'],
            link['upstream_max_speed_gts'], link['upstream_max_width']) == ('0000:01:00.0', 16.0, 8, 32.0, 16)
    assert (link['effective_speed_gts'], link['effective_width'], link['narrowest_bdf']) == (16.0, 8, '0000:01:00.0')
    assert link['degraded'] is True and link['degraded_links'] == ['0000:01:00.0']
    assert (link['dpm_speed_gts'], link['dpm_width']) == (16.0, 8)
    assert facts['degraded'] == ['0000:03:00.0']
    assert facts['devices'][0]['driver'] == 'amdgpu'
    assert (facts['devices'][0]['device_id'], facts['devices'][0]['name']) == (None, None)


def test_downtrained_mi50s(roots):
    # lspci/mi50-4x-lnkcap-lnksta-*: LnkCap 16GT/s x16, LnkSta 2.5GT/s x8 on four MI50 endpoints (no switch).
    # Not in the capture: device id (0x66a1, MI50, reference section 7; SOURCES.md names the cards), class
    # (0x038000, display controller), root ports (one per card here).
    sysfs = roots[0]
    links = lspci_links(fixture('lspci/mi50-4x-lnkcap-lnksta-gen1-2.5gts-x8-downgraded.txt'))
    assert len(links) == 4
    for number, (bdf, cap_speed, cap_width, sta_speed, sta_width) in enumerate(links):
        add_function(sysfs, ['pci0000:00', '0000:00:0{0}.1'.format(number + 1), bdf], cls='0x038000',
                     vendor='0x1002', device='0x66a1', driver='amdgpu',
                     link=(sysfs_speed(sta_speed), sta_width, sysfs_speed(cap_speed), cap_width))
    facts = gather(roots)
    assert facts['degraded'] == ['0000:31:00.0', '0000:34:00.0', '0000:4b:00.0', '0000:4e:00.0']
    for device in facts['devices']:
        link = device['link']
        assert (link['current_speed_gts'], link['current_width'], link['max_speed_gts'], link['max_width']) == (
            2.5, 8, 16.0, 16)
        assert link['upstream_bdf'] is None and link['narrowest_bdf'] == device['bdf']
        assert device['gfx_target'] == 'gfx906' and device['name'] == 'AMD Instinct MI50 / MI60 / Radeon Pro VII'
    assert facts['gfx_targets'] == ['gfx906']


def test_rx9070xt_endpoint_alone_looks_healthy(roots):
    # lspci/navi48-rx9070xt-*: VGA function 2f:00.0 "Navi 48 [RX 9070/9070 XT] (rev c0)", LnkCap = LnkSta =
    # 32GT/s x16 (the internal link). Device id 0x7550: the RX 9070 family in reference section 7.
    sysfs = roots[0]
    line = fixture('lspci/navi48-rx9070xt-lspci-grep-vga.txt')
    bdf = '0000:' + line.split()[0]
    cap, sta = re.findall(r'Speed (\d+)GT/s, Width x(\d+)', fixture('lspci/navi48-rx9070xt-lspci-vv-lnkcap-lnksta-grep.txt'))
    add_function(sysfs, ['pci0000:00', '0000:00:01.1', bdf], cls='0x030000', vendor='0x1002', device='0x7550',
                 revision='0x' + re.search(r'\(rev (\w+)\)', line).group(1), driver='amdgpu',
                 link=(sysfs_speed(sta[0]), sta[1], sysfs_speed(cap[0]), cap[1]))
    device = gather(roots)['devices'][0]
    assert (device['bdf'], device['revision'], device['gfx_target']) == ('0000:2f:00.0', '0xc0', 'gfx1201')
    assert device['link']['degraded'] is False and device['link']['current_speed_gts'] == 32.0


def test_vega64_host_from_lspci_n(roots):
    # lspci/vega64-lspci-n-full-host.txt (every function: class, vendor, device, revision) and
    # lspci/vega64-lspci-vvv-nonroot-*.txt (drivers, subsystem 1002:6b76, bridges 01:00.0 -> bus 02 -> bus 03).
    # Not in the captures: which root port 01:00.0 hangs off (00:01.0, the only x16 PCIe root port 8086:0c01
    # here) and every link (lspci -vvv ran without root: "Capabilities: <access denied>").
    sysfs = roots[0]
    functions = lspci_n('lspci/vega64-lspci-n-full-host.txt')
    drivers = dict(re.findall(r'^(\S+) .*?(?:\n\t.*)*?\n\tKernel driver in use: (\S+)',
                              fixture('lspci/vega64-lspci-vvv-nonroot-access-denied-amd-devices-only.txt'), re.M))
    parents = {'0000:01:00.0': ['0000:00:01.0'], '0000:02:00.0': ['0000:00:01.0', '0000:01:00.0'],
               '0000:03:00.0': ['0000:00:01.0', '0000:01:00.0', '0000:02:00.0'],
               '0000:03:00.1': ['0000:00:01.0', '0000:01:00.0', '0000:02:00.0']}
    for bdf in sorted(functions, key=lambda address: len(parents.get(address, []))):
        cls, vendor, device, revision = functions[bdf]
        add_function(sysfs, ['pci0000:00'] + parents.get(bdf, []) + [bdf], cls='0x' + cls + '00',
                     vendor='0x' + vendor, device='0x' + device, revision='0x' + revision if revision else None,
                     driver=drivers.get(bdf[5:]), numa_node=-1,
                     subsystem=('0x1002', '0x6b76') if bdf == '0000:03:00.0' else None)
    facts = gather(roots)
    # The Intel iGPU (00:02.0, class 0300, 8086:0412) and the HDMI audio function 03:00.1 (class 0403) are no GPUs.
    assert [device['bdf'] for device in facts['devices']] == ['0000:03:00.0']
    gpu = facts['devices'][0]
    assert (gpu['vendor'], gpu['device_id'], gpu['revision'], gpu['class'], gpu['class_name']) == (
        'AMD', '0x687f', '0xc1', '0x030000', 'VGA compatible controller')
    assert (gpu['name'], gpu['gfx_target'], gpu['family']) == ('AMD Radeon RX Vega 56/64', 'gfx900', 'Vega 10')
    assert (gpu['subsystem_vendor_id'], gpu['subsystem_device_id'], gpu['driver']) == ('0x1002', '0x6b76', 'amdgpu')
    assert gpu['numa_node'] is None  # sysfs -1
    # The on-package switch (1022:1470 upstream, 1022:1471 downstream) sits between the root port and the GPU.
    assert gpu['link']['upstream_bdf'] == '0000:01:00.0'
    assert gpu['link']['degraded'] is None and gpu['link']['current_width'] is None
    # The same host's `lspci | grep VGA` lists exactly these two display functions.
    vga = re.findall(r'^(\S+) VGA', fixture('lspci/vega64-old-pciids-device-687f-lspci-grep-vga.txt'), re.M)
    assert sorted('0000:' + bdf for bdf in vga) == ['0000:00:02.0', '0000:03:00.0']
    assert facts['nvidia_present'] is False and facts['amd_count'] == 1 and facts['unbound'] == []


def test_mi300x_with_amdgpu_not_bound(roots):
    # lspci/mi300x-8x-aqua-vanjaram-lspci-k-*: eight "Processing accelerators" functions named "Aqua Vanjaram
    # [Instinct MI300X]" (pci.ids name of 1002:74a1, reference section 7), each behind AMD bridges 1500 (vendor
    # [AMD] = 0x1022) and 1501 ([AMD/ATI] = 0x1002), with "Kernel modules: amdgpu" but no "Kernel driver in use".
    # Not in the capture: class code digits (0x120000: class 12, subclass 00) and the root ports above bus 1500.
    sysfs = roots[0]
    text = fixture('lspci/mi300x-8x-aqua-vanjaram-lspci-k-grep-amd-driver-not-bound.txt')
    upstream = downstream = None
    for number, (bdf, kind, device) in enumerate(re.findall(r'^(\S+) ([^:]+): .*?(Device 150[01]|Aqua Vanjaram)',
                                                            text, re.M)):
        bdf = '0000:' + bdf
        if device == 'Device 1500':
            root_bus = '{0:02x}'.format(int(bdf[5:7], 16) - 1)
            upstream = ['pci0000:' + root_bus, '0000:{0}:01.1'.format(root_bus), bdf]
            add_function(sysfs, upstream[:2], cls='0x060400', vendor='0x1022')
            add_function(sysfs, upstream, cls='0x060400', vendor='0x1022', device='0x1500')
        elif device == 'Device 1501':
            downstream = upstream + [bdf]
            add_function(sysfs, downstream, cls='0x060400', vendor='0x1002', device='0x1501')
        else:
            assert kind == 'Processing accelerators'
            add_function(sysfs, downstream + [bdf], cls='0x120000', vendor='0x1002', device='0x74a1')
    facts = gather(roots)
    assert facts['amd_count'] == 8 and len(facts['unbound']) == 8
    assert facts['unbound'][0] == '0000:1b:00.0' and facts['unbound'][-1] == '0000:dd:00.0'
    assert facts['gfx_targets'] == ['gfx942']
    for device in facts['amd']:
        assert (device['class_name'], device['name'], device['driver']) == (
            'Processing accelerators', 'AMD Instinct MI300X', None)
        assert device['link']['upstream_bdf'][-7:-5] == format(int(device['bdf'][5:7], 16) - 2, '02x')


@pytest.mark.parametrize('capture, bdf, cls, device, revision, name, gfx_target, vf', [
    # "0002:00:00.0 Display controller [0380]: ... Navi 21 [Radeon Pro V620 MxGPU] [1002:73ae]": a VF in a VM,
    # PCI domain 0002, directly on the host bridge.
    ('lspci/navi21-radeon-pro-v620-mxgpu-lspci-nn-grep-amd.txt', '0002:00:00.0', '0x038000', '0x73ae', None,
     'AMD Radeon PRO V620 MxGPU', 'gfx1030', True),
    # "3a:00.0 Display controller [0380]: ... Lexa XT [Radeon PRO WX 3200] [1002:6981] (rev 01)".
    ('lspci/lexa-xt-radeon-pro-wx3200-lspci-nn-grep-amd-ati.txt', '0000:3a:00.0', '0x038000', '0x6981', '0x01',
     'AMD Radeon Pro WX 3200', 'gfx803', False),
])
def test_lspci_nn_captures(roots, capture, bdf, cls, device, revision, name, gfx_target, vf):
    line = fixture(capture).strip()
    match = re.match(r'^(\S+) .*\[(\w{2})(\w{2})\]: .*\[(\w{4}):(\w{4})\](?: \(rev (\w+)\))?$', line)
    address = match.group(1) if match.group(1).count(':') == 2 else '0000:' + match.group(1)
    add_function(roots[0], ['pci{0}:00'.format(address[:4]), address], cls='0x{0}{1}00'.format(*match.groups()[1:3]),
                 vendor='0x' + match.group(4), device='0x' + match.group(5),
                 revision='0x' + match.group(6) if match.group(6) else None, driver='amdgpu')
    found = gather(roots)['devices'][0]
    assert (found['bdf'], found['class'], found['device_id'], found['revision']) == (bdf, cls, device, revision)
    assert (found['name'], found['gfx_target'], found['sriov_vf']) == (name, gfx_target, vf)
    assert found['link']['upstream_bdf'] is None


def test_six_rx470_mining_rig(roots):
    # lspci/ellesmere-6x-rx470-*: six "Ellesmere [Radeon RX 470/480] (rev ef)" VGA functions. Device id 0x67df:
    # the same host's rocminfo (rocminfo/gfx803-rx470-rocm1.9-*, ROCm issue 589) prints Chip ID 26591 = 0x67df.
    for line in fixture('lspci/ellesmere-6x-rx470-mining-rig-lspci-grep.txt').splitlines():
        bdf = '0000:' + line.split()[0]
        add_function(roots[0], ['pci0000:00', '0000:00:1c.{0}'.format(len(os.listdir(os.path.join(
            roots[0], 'bus', 'pci', 'devices'))) // 2), bdf], cls='0x030000', vendor='0x1002', device='0x67df',
            revision='0xef', driver='amdgpu')
    facts = gather(roots)
    assert facts['amd_count'] == 6 and facts['gfx_targets'] == ['gfx803']
    assert [device['bdf'][5:] for device in facts['amd']] == ['01:00.0', '03:00.0', '05:00.0', '06:00.0', '07:00.0',
                                                              '08:00.0']


def test_nvidia_h200_in_a_vm_container(roots, tmp_path):
    # sysfs/h200-vm-container-sysfs-gpu-functions.txt: every file gpu_pci_facts reads, captured on the lent H200
    # machine, where the module itself reported the same facts (docs/facts.md shows that run).
    text = fixture('sysfs/h200-vm-container-sysfs-gpu-functions.txt')
    path = re.search(r'^== (\S+) -> /sys/devices/(\S+)$', text, re.M)
    values = dict(re.findall(r'^(\w+): (.*)$', text.split('\ntop:')[0], re.M))
    driver = values.pop('driver')
    device_dir = add_function(roots[0], path.group(2).split('/'), driver=driver.rsplit('/', 1)[1], extra=values)
    # The builder links as the kernel does: the capture's own relative `driver` link.
    assert os.readlink(os.path.join(device_dir, 'driver')) == driver
    (tmp_path / 'root' / '.dockerenv').write_text('')  # "-rwxr-xr-x 1 root root 0 ... /.dockerenv"
    (tmp_path / 'proc' / '1' / 'cgroup').write_text(re.search(r'/proc/1/cgroup:\n(.*)\n', text).group(1) + '\n')
    (tmp_path / 'proc' / '1' / 'environ').unlink()  # not readable there
    facts = gather(roots)
    assert (facts['nvidia_present'], facts['nvidia_count'], facts['amd_count']) == (True, 1, 0)
    gpu = facts['nvidia'][0]
    assert (gpu['bdf'], gpu['device_id'], gpu['name'], gpu['class_name'], gpu['driver']) == (
        '0000:00:06.0', '0x2335', 'NVIDIA H200', '3D controller', 'nvidia')
    assert (gpu['subsystem_vendor_id'], gpu['subsystem_device_id'], gpu['revision']) == ('0x10de', '0x18bf', '0xa1')
    assert gpu['numa_node'] is None and gpu['gfx_target'] is None
    link = gpu['link']
    assert (link['current_speed_gts'], link['current_width'], link['max_speed_gts'], link['max_width']) == (
        32.0, 16, 32.0, 16)
    assert link['degraded'] is False and link['upstream_bdf'] is None  # directly on the VM's host bridge
    assert (facts['in_container'], facts['container_type']) == (True, 'docker')
    assert facts['container_hints'] == ['/.dockerenv']
    assert facts['kfd_present'] is False


# --- KFD topology ---------------------------------------------------------------------------------------------

def test_kfd_mi210_xgmi_node(roots):
    # kfd-topology/mi210-xgmi-8gpu-*: CPU node 0 and GPU node 2 with its PCIe and XGMI io_links (node 1 and the
    # gpu_id files were not captured).
    sysfs = roots[0]
    add_kfd_node(sysfs, 0, fixture('kfd-topology/mi210-xgmi-8gpu-node0-cpu-properties.txt'))
    add_kfd_node(sysfs, 2, fixture('kfd-topology/mi210-xgmi-8gpu-node2-gpu-properties.txt'),
                 io_links=[fixture('kfd-topology/mi210-xgmi-8gpu-node2-io_link0-pcie-properties.txt'),
                           fixture('kfd-topology/mi210-xgmi-8gpu-node2-io_link1-xgmi-properties.txt')])
    facts = gather(roots)
    assert facts['kfd_present'] is True and (facts['kfd_gpu_nodes'], facts['kfd_physical_gpus']) == (1, 1)
    cpu, gpu = facts['kfd_nodes']
    assert (cpu['node'], cpu['type'], cpu['cpu_cores_count'], cpu['gfx_target']) == (0, 'cpu', 64, None)
    assert (gpu['node'], gpu['type'], gpu['gfx_target_version'], gpu['gfx_target']) == (2, 'gpu', 90010, 'gfx90a')
    assert (gpu['vendor_id'], gpu['device_id'], gpu['bdf']) == ('0x1002', '0x740f', '0000:63:00.0')
    assert (gpu['simd_count'], gpu['simd_per_cu'], gpu['compute_units']) == (416, 4, 104)
    assert (gpu['wavefront_size'], gpu['max_engine_clk_mhz'], gpu['drm_render_minor'], gpu['num_xcc']) == (
        64, 1700, 128, 1)
    assert gpu['memory_bytes'] is None  # local_mem_size 0 and no mem_banks captured
    assert gpu['hive_id'] == '0x{0:016x}'.format(12609507387757274807)
    assert gpu['io_links'] == [
        {'type': 'pcie', 'node_to': 0, 'weight': 20, 'min_bandwidth_mbs': 312, 'max_bandwidth_mbs': 32000},
        {'type': 'xgmi', 'node_to': 3, 'weight': 15, 'min_bandwidth_mbs': 50000, 'max_bandwidth_mbs': 50000}]
    assert facts['kfd_gfx_targets'] == ['gfx90a']


def test_kfd_old_kernel_without_gfx_target_version(roots):
    # kfd-topology/vega10-old-kernel-*: no gfx_target_version, domain or hive_id; device_id 26720 = 0x6860.
    sysfs = roots[0]
    add_kfd_node(sysfs, 0, fixture('kfd-topology/vega10-old-kernel-node0-cpu-properties.txt'))
    add_kfd_node(sysfs, 1, fixture('kfd-topology/vega10-old-kernel-node1-gpu-properties.txt'))
    gpu = gather(roots)['kfd_nodes'][1]
    assert (gpu['gfx_target_version'], gpu['gfx_target'], gpu['device_id']) == (None, 'gfx900', '0x6860')
    assert (gpu['compute_units'], gpu['memory_bytes'], gpu['bdf']) == (64, 17163091968, '0000:19:00.0')


def test_kfd_cpu_node_of_a_cpx_partitioned_host(roots):
    add_kfd_node(roots[0], 0, fixture('kfd-topology/mi308x-cpx-partition-node0-cpu-properties.txt'))
    facts = gather(roots)
    assert facts['kfd_nodes'][0]['cpu_cores_count'] == 112 and facts['kfd_gpu_nodes'] == 0


def test_kfd_gpu_nodes_of_two_cpx_partitions(roots):
    # Two CPX partitions of one MI308X: the GPU's unique_id twice, the location counting up the function number.
    for number, name in ((2, 'kfd-topology/mi308x-cpx-partition-node2-gpu-properties.txt'),
                         (3, 'kfd-topology/mi308x-cpx-partition-node3-gpu-properties.txt')):
        add_kfd_node(roots[0], number, fixture(name))
    facts = gather(roots)
    nodes = facts['kfd_nodes']
    assert [(n['bdf'], n['gfx_target'], n['drm_render_minor'], n['compute_units']) for n in nodes] == [
        ('0000:0a:00.0', 'gfx942', 128, 20), ('0000:0a:00.1', 'gfx942', 129, 20)]
    assert nodes[0]['unique_id'] == nodes[1]['unique_id']
    # One physical GPU: the health check compares it with the functions on the bus.
    assert facts['kfd_gpu_nodes'] == 2 and facts['kfd_physical_gpus'] == 1


def test_kfd_mem_banks_give_the_memory_when_local_mem_size_is_zero():
    props = pci.parse_kfd_properties(fixture('kfd-topology/mi210-xgmi-8gpu-node2-gpu-properties.txt'))
    banks = [{'heap_type': 1, 'size_in_bytes': 68702699520}, {'heap_type': 0, 'size_in_bytes': 4096}]
    assert pci.kfd_node(2, props, mem_banks=banks)['memory_bytes'] == 68702699520


def test_no_kfd(roots):
    facts = gather(roots)
    assert (facts['kfd_present'], facts['kfd_nodes'], facts['devices']) == (False, [], [])


# --- containers and small parsers -----------------------------------------------------------------------------

def test_not_in_a_container(roots):
    assert gather(roots)['in_container'] is False


@pytest.mark.parametrize('where, content, kind', [
    ('root/.dockerenv', '', 'docker'),
    ('root/run/.containerenv', '', 'podman'),
    ('proc/1/environ', 'container=lxc\0HOME=/\0', 'lxc'),
    ('proc/1/cgroup', '12:pids:/kubepods/burstable/pod1/abc\n', 'kubernetes'),
    ('proc/1/cgroup', '0::/system.slice/docker-3f2a.scope\n', 'docker'),
])
def test_container_hints(tmp_path, roots, where, content, kind):
    path = tmp_path / where
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content)
    facts = gather(roots)
    assert (facts['in_container'], facts['container_type']) == (True, kind)
    assert facts['container_hints']


@pytest.mark.parametrize('text, speed', [('16.0 GT/s PCIe', 16.0), ('2.5 GT/s PCIe', 2.5), ('32.0 GT/s PCIe\n', 32.0),
                                         ('8 GT/s', 8.0), ('Unknown', None), ('', None), (None, None)])
def test_parse_link_speed(text, speed):
    assert pci.parse_link_speed(text) == speed


def test_parse_pp_dpm_pcie():
    assert pci.parse_pp_dpm_pcie(fixture('lspci/sysfs-pp_dpm_pcie-rdna4-x8-upstream-link.txt')) == (16.0, 8)
    assert pci.parse_pp_dpm_pcie('0: 2.5GT/s, x8 250Mhz\n') == (None, None)


def test_missing_sysfs_is_an_error(tmp_path):
    with pytest.raises(IOError, match='sysfs is not mounted there'):
        pci.gather_pci(str(tmp_path / 'nowhere'), str(tmp_path), str(tmp_path))
