#!/usr/bin/env python3
"""TEST FIXTURE: a sysfs tree (bus/pci/devices -> devices/...) holding the four downtrained MI50s of a real capture.

Source: collections/ansible_collections/gpulab/rocm/tests/unit/plugins/module_utils/fixtures/lspci/
mi50-4x-lnkcap-lnksta-gen1-2.5gts-x8-downgraded.txt (provenance in that folder's SOURCES.md): four MI50 endpoints,
LnkCap 16GT/s x16, LnkSta 2.5GT/s x8. Not in the capture, so chosen here as test_pci.py chooses them: device id
0x66a1 (MI50), class 0x038000, one root port per card. No driver is bound: the host it is copied into plays a node
whose amdgpu did not load (fixture profile no-gpu). gpulab.rocm.gpu_pci_facts reads it through sysfs_root
(role variable rocm_report_sysfs_root).

    python3 tests/report/fixture_sysfs.py OUT_DIR      # writes OUT_DIR/{bus,devices,GPULAB-FIXTURE}
"""

import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CAPTURE = os.path.join(HERE, '..', '..', 'collections', 'ansible_collections', 'gpulab', 'rocm', 'tests', 'unit',
                       'plugins', 'module_utils', 'fixtures', 'lspci',
                       'mi50-4x-lnkcap-lnksta-gen1-2.5gts-x8-downgraded.txt')
LNK = re.compile(r'^(\S+)\n\s+LnkCap:.*?Speed ([\d.]+)GT/s, Width x(\d+).*\n\s+LnkSta: Speed ([\d.]+)GT/s'
                 r'.*?, Width x(\d+)', re.M)


def links(text):
    """[(address, cap speed, cap width, sta speed, sta width)] from `lspci -vv | grep -E 'LnkCap|LnkSta'`."""
    return [('0000:' + match.group(1),) + match.groups()[1:] for match in LNK.finditer(text)]


def sysfs_speed(lspci_speed):
    """lspci prints '16GT/s', sysfs '16.0 GT/s PCIe'."""
    return '{0:.1f} GT/s PCIe'.format(float(lspci_speed))


def build(out_dir, capture=CAPTURE):
    with open(capture) as handle:
        found = links(handle.read())
    if not found:
        raise SystemExit('fixture_sysfs.py: no LnkCap/LnkSta pairs in %s' % capture)
    bus = os.path.join(out_dir, 'bus', 'pci', 'devices')
    os.makedirs(bus, exist_ok=True)
    for number, (bdf, cap_speed, cap_width, sta_speed, sta_width) in enumerate(found):
        device = os.path.join(out_dir, 'devices', 'pci0000:00', '0000:00:0{0}.1'.format(number + 1), bdf)
        os.makedirs(device, exist_ok=True)
        files = {'class': '0x038000', 'vendor': '0x1002', 'device': '0x66a1',
                 'current_link_speed': sysfs_speed(sta_speed), 'current_link_width': sta_width,
                 'max_link_speed': sysfs_speed(cap_speed), 'max_link_width': cap_width}
        for name, value in files.items():
            with open(os.path.join(device, name), 'w') as handle:
                handle.write(value + '\n')
        link = os.path.join(bus, bdf)
        if not os.path.islink(link):
            os.symlink(os.path.relpath(device, bus), link)
    with open(os.path.join(out_dir, 'GPULAB-FIXTURE'), 'w') as handle:
        handle.write('gpulab.rocm TEST FIXTURE: sysfs tree built by tests/report/fixture_sysfs.py from %s\n'
                     % os.path.basename(capture))
    return [item[0] for item in found]


if __name__ == '__main__':
    if len(sys.argv) != 2:
        raise SystemExit('usage: fixture_sysfs.py OUT_DIR')
    print(' '.join(build(sys.argv[1])))
