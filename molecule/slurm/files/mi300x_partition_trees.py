#!/usr/bin/python3
"""TEST FIXTURE, not part of the product: an 8x MI300X node's GPUs in each partition profile the Slurm scenario
moves through, for the fixture amd-smi (tests/harness/mirror/tools/amd-smi), which points the link STATE/sysfs at the
tree of the pair it set (STATE/sysfs-<compute>-<memory>). Each tree is built by the collection's sysfs_tree.py:
8 PCI functions (device 0x74a1, buses as AMD's 8x MI300X captures, current_compute_partition and
current_memory_partition as amdgpu writes them), and one KFD node per logical GPU whose properties are the real CPX
partition capture kfd-topology/mi308x-cpx-partition-node2-gpu-properties.txt with its location_id (a partition
counts up its GPU's function number), device_id and render minor set: SPX 8 nodes (renderD128..135), CPX 64
(renderD128..191). The render nodes of every profile are made with mknod (Slurm only stats them).
    mi300x_partition_trees.py STATE CAPTURE SPX-NPS1 CPX-NPS1 CPX-NPS4 ...
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sysfs_tree  # noqa: E402  (the fixture folder's copy of the collection's sysfs builder)

BUSES = ['05', '26', '46', '65', '85', 'a6', 'c6', 'e5']
# Logical GPUs per MI300X in each compute partition (gpu_partitions.MODELS).
PARTS = {'SPX': 1, 'DPX': 2, 'QPX': 4, 'CPX': 8}
# The Slurm node's CPUs: the 2-core machines the tests run on (as the scenario's other specs).
CPUS = {"devices/system/cpu/online": "0-1", "devices/system/node/node0/cpulist": "0-1",
        "devices/system/cpu/cpu0/topology/physical_package_id": 0, "devices/system/cpu/cpu0/topology/core_id": 0,
        "devices/system/cpu/cpu1/topology/physical_package_id": 0, "devices/system/cpu/cpu1/topology/core_id": 1}


def properties(capture, bus, part, minor, xcc):
    """The captured properties with this partition's location, device id, render minor and XCC count."""
    values = {}
    with open(capture) as handle:
        for line in handle:
            key, _sep, value = line.strip().partition(' ')
            if key:
                values[key] = value
    values.update(device_id=0x74a1, location_id=(int(bus, 16) << 8) + part, drm_render_minor=minor, num_xcc=xcc)
    return values


def spec(capture, compute, memory):
    parts = PARTS[compute]
    functions, kfd = [], []
    for index, bus in enumerate(BUSES):
        functions.append({"path": ["pci0000:00", "0000:00:01.%d" % index, "0000:%s:00.0" % bus],
                          "class": "0x120000", "vendor": "0x1002", "device": "0x74a1", "revision": "0x00",
                          "driver": "amdgpu", "numa_node": 0, "drm": ["card%d" % index],
                          "extra": {"current_compute_partition": compute, "current_memory_partition": memory}})
        for part in range(parts):
            minor = 128 + index * parts + part
            kfd.append({"node": 1 + index * parts + part,
                        "properties": properties(capture, bus, part, minor, 8 // parts)})
    return {"functions": functions, "files": CPUS, "kfd_nodes": kfd}


def main(state, capture, pairs):
    for pair in pairs:
        compute, memory = pair.split('-')
        root = os.path.join(state, 'sysfs-' + pair)
        if not os.path.isdir(root):
            sysfs_tree.build(root, spec(capture, compute, memory))
    os.makedirs('/dev/dri', exist_ok=True)
    for minor in range(128, 192):
        path = '/dev/dri/renderD%d' % minor
        if not os.path.exists(path):
            os.mknod(path, 0o20660, os.makedev(226, minor))


if __name__ == '__main__':
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
