# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""TEST FIXTURE builder: sysfs trees of PCI functions and the KFD topology, laid out as the kernel lays them out.

The one builder for every test that needs a /sys. It lives in the collection's tests so that the unit tests import
it as ansible_collections.gpulab.rocm.tests.unit.sysfs_tree, under pytest and under `ansible-test units` alike.
The tests under tests/ import it the same way (pytest.ini puts collections/ on the path). The `hardware` Molecule
scenario and tests/runner copy this one file and run it, so it needs only the standard library:

    python3 sysfs_tree.py SPEC.json ROOT      # ROOT is replaced; SPEC: see build()

Layout, as the fixtures' captures show it (fixtures/sysfs/h200-*, fixtures/kfd-topology/):

    ROOT/devices/pciDDDD:BB/<root port>/.../<function>/{class,vendor,device,...}     one value per file
    ROOT/bus/pci/devices/<address> -> ../../../devices/pciDDDD:BB/.../<address>
    ROOT/devices/.../<function>/driver -> ../../../bus/pci/drivers/<name>          (relative, as the kernel's)
    ROOT/class/kfd/kfd/topology/nodes/N/{properties,gpu_id,io_links/M/properties}
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re
import shutil
import sys

LINK_FILES = ('current_link_speed', 'current_link_width', 'max_link_speed', 'max_link_width')


def _write(path, value):
    with open(path, 'w') as handle:
        handle.write('{0}\n'.format(value))


def add_function(sysfs, path, cls=None, vendor=None, device=None, revision=None, subsystem=None, numa_node=None,
                 link=None, driver=None, extra=None, drm=None):
    """One PCI function at sysfs/devices/<path...> and its bus/pci/devices link; returns its folder.

    path: the folders from the host bridge down, e.g. ['pci0000:00', '0000:00:01.1', '0000:01:00.0'].
    Values are written as sysfs prints them, one per file; None writes no file (a value the capture lacks).
    subsystem: (subsystem_vendor, subsystem_device). link: (current speed, current width, max speed, max width),
    e.g. ('16.0 GT/s PCIe', 8, '16.0 GT/s PCIe', 16). driver: the name the `driver` link points to.
    extra: {file name: value} for any other file (a capture's `*_link_*` files, pp_dpm_pcie).
    drm: the DRM devices the driver made for it, e.g. ['card0', 'renderD128']: folders drm/<name> with the `dev`
    file the kernel writes (major 226, the minor from the name: card N is N, renderD N is N).
    """
    device_dir = os.path.join(sysfs, 'devices', *path)
    os.makedirs(device_dir, exist_ok=True)
    files = {'class': cls, 'vendor': vendor, 'device': device, 'revision': revision, 'numa_node': numa_node}
    if subsystem:
        files['subsystem_vendor'], files['subsystem_device'] = subsystem
    files.update(zip(LINK_FILES, link or ()))
    files.update(extra or {})
    for name, value in files.items():
        if value is not None:
            _write(os.path.join(device_dir, name), value)
    bus = os.path.join(sysfs, 'bus', 'pci', 'devices')
    os.makedirs(bus, exist_ok=True)
    os.symlink(os.path.relpath(device_dir, bus), os.path.join(bus, path[-1]))
    for name in drm or ():
        os.makedirs(os.path.join(device_dir, 'drm', name))
        _write(os.path.join(device_dir, 'drm', name, 'dev'), '226:{0}'.format(int(re.sub(r'^\D+', '', name))))
    if driver:
        drivers = os.path.join(sysfs, 'bus', 'pci', 'drivers', driver)
        os.makedirs(drivers, exist_ok=True)
        os.symlink(os.path.relpath(drivers, device_dir), os.path.join(device_dir, 'driver'))
    return device_dir


def _properties(value):
    """A properties file: captured text as it is, or a mapping as the kernel prints it ('key value' lines)."""
    if isinstance(value, dict):
        return ''.join('{0} {1}\n'.format(key, number) for key, number in value.items())
    return value


def add_kfd_node(sysfs, number, properties, gpu_id=None, io_links=()):
    """KFD topology node N: its properties file and each io_links/M/properties; returns its folder.

    properties and each io link: the text of a captured properties file, or a {key: value} mapping.
    gpu_id: the node's gpu_id file (the kernel writes 0 on CPU nodes); None writes none (no capture holds one).
    """
    node_dir = os.path.join(sysfs, 'class', 'kfd', 'kfd', 'topology', 'nodes', str(number))
    os.makedirs(node_dir)
    with open(os.path.join(node_dir, 'properties'), 'w') as handle:
        handle.write(_properties(properties))
    if gpu_id is not None:
        _write(os.path.join(node_dir, 'gpu_id'), gpu_id)
    for index, link in enumerate(io_links):
        link_dir = os.path.join(node_dir, 'io_links', str(index))
        os.makedirs(link_dir)
        with open(os.path.join(link_dir, 'properties'), 'w') as handle:
            handle.write(_properties(link))
    return node_dir


def build(sysfs, spec):
    """A whole tree from a spec, the JSON of molecule/hardware/sysfs/*.json and tests/report/sysfs/*.json:

        {"description": "...", "sources": {what each value comes from},
         "functions": [add_function's arguments, with "class" for cls],
         "kfd_nodes": [{"node": N, "properties": {...}, "gpu_id": ..., "io_links": [{...}]}],
         "files": {"devices/system/node/node0/cpulist": "0-1", ...}}    (any other file, path under ROOT)

    bus/pci/devices is made even with no function (a host with no GPU has one); ROOT/GPULAB-FIXTURE says what the
    tree is.
    """
    os.makedirs(os.path.join(sysfs, 'bus', 'pci', 'devices'), exist_ok=True)
    for function in spec.get('functions', ()):
        arguments = dict(function)
        add_function(sysfs, cls=arguments.pop('class', None), **arguments)
    for node in spec.get('kfd_nodes', ()):
        add_kfd_node(sysfs, node['node'], node['properties'], node.get('gpu_id'), node.get('io_links', ()))
    for relative, value in sorted(spec.get('files', {}).items()):
        path = os.path.normpath(os.path.join(sysfs, relative))
        if not path.startswith(os.path.join(os.path.normpath(sysfs), '')):
            raise ValueError('files: {0} is outside the tree'.format(relative))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        _write(path, value)
    _write(os.path.join(sysfs, 'GPULAB-FIXTURE'), 'gpulab.rocm TEST FIXTURE: sysfs tree built by sysfs_tree.py: '
           + spec.get('description', ''))


# --- values from captures ---------------------------------------------------------------------------------------

_LNK = re.compile(r'^(\S+)\n\s+LnkCap:.*?Speed ([\d.]+)GT/s, Width x(\d+).*\n\s+LnkSta: Speed ([\d.]+)GT/s'
                  r'.*?, Width x(\d+)', re.M)


def lspci_links(text):
    """[(address, cap speed, cap width, sta speed, sta width)] from `lspci -vv | grep -E 'LnkCap|LnkSta'` run per
    address (each address on its own line, then its LnkCap and LnkSta lines)."""
    return [('0000:' + match.group(1),) + match.groups()[1:] for match in _LNK.finditer(text)]


def sysfs_speed(lspci_speed):
    """lspci prints '16GT/s', sysfs '16.0 GT/s PCIe'."""
    return '{0:.1f} GT/s PCIe'.format(float(lspci_speed))


def main(argv):
    if len(argv) != 3:
        raise SystemExit('usage: sysfs_tree.py SPEC.json ROOT   (ROOT is replaced)')
    with open(argv[1]) as handle:
        spec = json.load(handle)
    shutil.rmtree(argv[2], ignore_errors=True)
    build(argv[2], spec)


if __name__ == '__main__':
    main(sys.argv)
