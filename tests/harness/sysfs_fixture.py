#!/usr/bin/env python3
"""Build a fixture sysfs tree from a JSON description, laid out as the kernel lays it out:
/sys/devices/pciDDDD:BB/<root port>/.../<function> with /sys/bus/pci/devices/<address> symlinks, `driver` symlinks
to /sys/bus/pci/drivers/<name>, and optionally /sys/class/kfd/kfd/topology/nodes/N/properties.

Runs inside the test containers (stdlib only). The JSON files name the capture each value comes from.
Usage: sysfs_fixture.py SPEC.json ROOT   (ROOT is replaced)
"""

import json
import os
import shutil
import sys

LINK_FILES = ('current_link_speed', 'current_link_width', 'max_link_speed', 'max_link_width')


def write(path, value):
    with open(path, 'w') as handle:
        handle.write('%s\n' % value)


def add_function(root, fn):
    device_dir = os.path.join(root, 'devices', *fn['path'])
    os.makedirs(device_dir, exist_ok=True)
    for name in ('class', 'vendor', 'device', 'revision', 'numa_node'):
        if name in fn:
            write(os.path.join(device_dir, name), fn[name])
    if 'subsystem' in fn:
        write(os.path.join(device_dir, 'subsystem_vendor'), fn['subsystem'][0])
        write(os.path.join(device_dir, 'subsystem_device'), fn['subsystem'][1])
    for name, value in zip(LINK_FILES, fn.get('link', ())):
        write(os.path.join(device_dir, name), value)
    bus = os.path.join(root, 'bus', 'pci', 'devices')
    os.makedirs(bus, exist_ok=True)
    os.symlink(os.path.relpath(device_dir, bus), os.path.join(bus, fn['path'][-1]))
    if fn.get('driver'):
        drivers = os.path.join(root, 'bus', 'pci', 'drivers', fn['driver'])
        os.makedirs(drivers, exist_ok=True)
        os.symlink(os.path.relpath(drivers, device_dir), os.path.join(device_dir, 'driver'))


def add_kfd_node(root, node):
    node_dir = os.path.join(root, 'class', 'kfd', 'kfd', 'topology', 'nodes', str(node['node']))
    os.makedirs(node_dir, exist_ok=True)
    write(os.path.join(node_dir, 'properties'), '\n'.join('%s %s' % kv for kv in node['properties'].items()))
    write(os.path.join(node_dir, 'gpu_id'), node.get('gpu_id', 0))


def main():
    spec_file, root = sys.argv[1], sys.argv[2]
    with open(spec_file) as handle:
        spec = json.load(handle)
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(os.path.join(root, 'bus', 'pci', 'devices'))
    for fn in spec.get('functions', []):
        add_function(root, fn)
    for node in spec.get('kfd_nodes', []):
        add_kfd_node(root, node)
    return 0


if __name__ == '__main__':
    sys.exit(main())
