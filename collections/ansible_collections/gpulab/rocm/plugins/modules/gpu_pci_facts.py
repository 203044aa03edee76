#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: gpu_pci_facts
short_description: Read AMD and NVIDIA GPUs, their PCIe links and the KFD topology from sysfs
version_added: 0.1.0
description:
  - Lists every display, 3D and processing-accelerator PCI function of AMD (C(0x1002)) and NVIDIA (C(0x10de)) from
    C(/sys/bus/pci/devices), with ids, product name and gfx target from the collection's id table, bound driver,
    NUMA node and PCIe link state, under C(ansible_facts.gpu_pci).
  - Needs no ROCm and no GPU driver, so it runs before anything is installed (role rocm_preflight).
  - Reads the KFD topology (C(/sys/class/kfd/kfd/topology/nodes)) when the amdgpu driver provides it, decoding
    C(gfx_target_version) (90010 is gfx90a, 90402 is gfx942).
  - Tells whether it runs in a container (C(/.dockerenv), C(/run/.containerenv), C(container=) in the environment
    of PID 1, or container names in its cgroup).
  - Reads each AMD GPU's firmware versions where the driver shows them - amdgpu's C(fw_version/) and
    C(vbios_version) in sysfs, and as root C(amdgpu_firmware_info) in debugfs (C(<sysfs_root>/kernel/debug)).
author:
  - gpulab.rocm contributors (@gpulab)
extends_documentation_fragment:
  - gpulab.rocm.gpu_facts
options:
  sysfs_root:
    description: Where sysfs is mounted (tests point it at a prepared tree).
    type: path
    default: /sys
  root:
    description: The filesystem root under which C(/.dockerenv) and C(/run/.containerenv) are looked for.
    type: path
    default: /
  proc_root:
    description: Where procfs is mounted, for C(/proc/1/environ) and C(/proc/1/cgroup).
    type: path
    default: /proc
notes:
  - >-
    GPUs with an on-package PCIe switch (Vega 10, Navi, MI300) report the internal switch link on the GPU function,
    for example 32 GT/s x16 on an RX 9070 XT in an x8 slot. The module therefore reads every PCI function between
    the root port and the GPU: C(link.upstream_*) is the topmost one (the slot link), C(link.effective_*) and
    C(link.narrowest_bdf) the narrowest link (lowest speed times width) on that path, and C(link.degraded) tells
    whether that narrowest link runs below its own maximum width or speed. C(link.degraded_links) lists every
    function on the path whose link is below its maximum.
  - An idle GPU may train its link down to a lower speed to save power, so a speed-only degradation seen at rest
    is not always a fault; width degradation is.
seealso:
  - module: gpulab.rocm.rocminfo_facts
'''

EXAMPLES = r'''
- name: Read GPU PCI facts
  gpulab.rocm.gpu_pci_facts:

- name: Warn about degraded PCIe links
  ansible.builtin.debug:
    msg: "Degraded PCIe link on {{ ansible_facts.gpu_pci.degraded | join(', ') }}"
  when: ansible_facts.gpu_pci.degraded | length > 0

- name: Require an AMD GPU
  ansible.builtin.assert:
    that: ansible_facts.gpu_pci.amd_count > 0
    fail_msg: No AMD GPU on the PCI bus of {{ inventory_hostname }}.
'''

RETURN = r'''
ansible_facts:
  description: Facts under the key C(gpu_pci).
  returned: always
  type: dict
  contains:
    gpu_pci:
      description: GPUs on the PCI bus, KFD topology and container hints.
      returned: always
      type: dict
      contains:
        devices:
          description: Every AMD and NVIDIA GPU function, sorted by address.
          type: list
          elements: dict
          contains:
            bdf:
              description: PCI address.
              type: str
              sample: '0000:03:00.0'
            vendor:
              description: C(AMD) or C(NVIDIA).
              type: str
            vendor_id:
              description: PCI vendor id.
              type: str
              sample: '0x1002'
            device_id:
              description: PCI device id.
              type: str
              sample: '0x740f'
            subsystem_vendor_id:
              description: PCI subsystem vendor id.
              type: str
            subsystem_device_id:
              description: PCI subsystem device id.
              type: str
            revision:
              description: PCI revision.
              type: str
            class:
              description: PCI class code.
              type: str
              sample: '0x030000'
            class_name:
              description:
                - C(VGA compatible controller), C(3D controller), C(Display controller) or C(Processing accelerators).
              type: str
            name:
              description: Product name from the id table; null for ids the table does not know.
              type: str
              sample: AMD Instinct MI210
            gfx_target:
              description: gfx target from the id table (AMD only); null when unknown.
              type: str
              sample: gfx90a
            family:
              description: Chip family from the id table (C(Aldebaran), C(Navi 31)...).
              type: str
            sriov_vf:
              description: An SR-IOV virtual function (C(physfn) link, or the id table); null when unknown.
              type: bool
            driver:
              description: The bound kernel driver (C(amdgpu), C(nvidia), C(vfio-pci)); null when none is bound.
              type: str
            numa_node:
              description: NUMA node; null when the kernel reports -1 (no affinity).
              type: int
            drm:
              description: The DRM nodes the driver made for the function (its C(drm/) folder), cards first.
              type: list
              elements: str
              sample: [card1, renderD128]
              version_added: 0.3.0
            render_node:
              description: The DRM render node, C(/dev/dri/renderDN), the first render node of C(drm); null when it
                has none (no driver bound, or not a DRM device).
              type: str
              version_added: 0.3.0
            compute_partition:
              description: The compute partition mode amdgpu reports (C(current_compute_partition)) on a partitionable
                GPU (MI300 series and later), V(SPX) to V(CPX); null elsewhere.
              type: str
              version_added: 0.3.0
            memory_partition:
              description: The memory partition mode amdgpu reports (C(current_memory_partition)), V(NPS1) to
                V(NPS8); null elsewhere.
              type: str
              version_added: 0.3.0
            link:
              description: PCIe link state, speeds in GT/s.
              type: dict
              contains:
                current_speed_gts:
                  description: The function's own current link speed.
                  type: float
                current_width:
                  description: The function's own current link width.
                  type: int
                max_speed_gts:
                  description: The function's own maximum link speed.
                  type: float
                max_width:
                  description: The function's own maximum link width.
                  type: int
                upstream_bdf:
                  description:
                    - The topmost PCI function below the root port, when it is not the GPU itself (the upstream port
                      of an on-package switch); its link is the slot link.
                  type: str
                upstream_current_speed_gts:
                  description: Current speed of the slot link, as that function reports it.
                  type: float
                upstream_current_width:
                  description: Current width of the slot link.
                  type: int
                upstream_max_speed_gts:
                  description: Maximum speed of the slot link.
                  type: float
                upstream_max_width:
                  description: Maximum width of the slot link.
                  type: int
                effective_speed_gts:
                  description: Current speed of the narrowest link on the path.
                  type: float
                effective_width:
                  description: Current width of the narrowest link on the path.
                  type: int
                narrowest_bdf:
                  description: The function that reports the narrowest link.
                  type: str
                degraded:
                  description: The narrowest link runs below its maximum width or speed; null when no link is reported.
                  type: bool
                degraded_links:
                  description: Every function on the path whose link runs below its maximum.
                  type: list
                  elements: str
                dpm_speed_gts:
                  description: Speed of the current level in amdgpu's C(pp_dpm_pcie) (AMD with amdgpu bound), else null.
                  type: float
                dpm_width:
                  description: Width of the current level in amdgpu's C(pp_dpm_pcie), else null.
                  type: int
            vbios_version:
              description: The VBIOS part number amdgpu shows in C(vbios_version) (C(113-D65201-046)); AMD GPUs only,
                null where the file is not there.
              type: str
            firmware:
              description:
                - The microcode versions of amdgpu's C(fw_version/<block>_fw_version) files, by block id (C(mec),
                  C(sos), C(smc), C(ta_ras), C(sdma0), ...), each C(0x%08x) as the driver prints it; blocks at 0 (no
                  firmware loaded) are left out. AMD GPUs only; C({}) where the driver has no such folder.
                - The shape of docs/hardware.md's firmware inventory, as M(gpulab.rocm.rocm_smi_facts) and
                  M(gpulab.rocm.amd_smi_facts) return it.
              type: dict
            firmware_debugfs:
              description:
                - The GPU's C(amdgpu_firmware_info) in debugfs (every block the driver knows, the newer ones too -
                  C(mes), C(mes_kiq), C(imu), C(vpe), C(dmcub), ...), C({firmware, vbios}) in the same shape; null where
                  it cannot be read (not root, debugfs not mounted). AMD GPUs only.
              type: dict
        amd:
          description: The AMD entries of C(devices).
          type: list
          elements: dict
        nvidia:
          description: The NVIDIA entries of C(devices).
          type: list
          elements: dict
        amd_count:
          description: Number of AMD GPU functions.
          type: int
        nvidia_count:
          description: Number of NVIDIA GPU functions.
          type: int
        nvidia_present:
          description: At least one NVIDIA GPU.
          type: bool
        gfx_targets:
          description: Unique gfx targets of the AMD GPUs (from the id table), sorted.
          type: list
          elements: str
        degraded:
          description: Addresses of the GPUs whose link is degraded.
          type: list
          elements: str
        unbound:
          description: Addresses of the AMD GPUs with no driver bound (amdgpu failed, or is not installed).
          type: list
          elements: str
        in_container:
          description: The module runs in a container.
          type: bool
        container_type:
          description: C(docker), C(podman), C(lxc), C(kubernetes) or the C(container=) value; null outside containers.
          type: str
        container_hints:
          description: What showed the container.
          type: list
          elements: str
        kfd_present:
          description: C(/sys/class/kfd/kfd/topology) exists (the amdgpu driver provides KFD).
          type: bool
        kfd_nodes:
          description:
            - KFD topology nodes (CPU and GPU) with C(node), C(type), C(gpu_id), C(gfx_target_version), C(gfx_target),
              C(vendor_id), C(device_id), C(bdf), C(simd_count), C(simd_per_cu), C(compute_units), C(cpu_cores_count),
              C(wavefront_size), C(max_engine_clk_mhz), C(memory_bytes), C(drm_render_minor), C(hive_id), C(unique_id),
              C(num_xcc) and C(io_links).
          type: list
          elements: dict
        kfd_gpu_nodes:
          description: Number of KFD GPU nodes (an MI300 in CPX mode has several per device).
          type: int
        kfd_physical_gpus:
          description: Number of distinct GPU devices among the KFD GPU nodes.
          type: int
        kfd_gfx_targets:
          description: Unique gfx targets of the KFD GPU nodes, sorted.
          type: list
          elements: str
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpulab.rocm.plugins.module_utils.host.facts_module import clean_facts
from ansible_collections.gpulab.rocm.plugins.module_utils.parsers.firmware import add_to_pci
from ansible_collections.gpulab.rocm.plugins.module_utils.parsers.pci import gather_pci


def main():
    module = AnsibleModule(
        argument_spec=dict(
            sysfs_root=dict(type='path', default='/sys'),
            root=dict(type='path', default='/'),
            proc_root=dict(type='path', default='/proc'),
        ),
        supports_check_mode=True,
    )
    try:
        facts = add_to_pci(gather_pci(module.params['sysfs_root'], module.params['root'], module.params['proc_root']),
                           module.params['sysfs_root'])
    except (IOError, OSError) as exc:
        module.fail_json(msg='Cannot read the PCI devices: {0}'.format(exc))
    module.exit_json(changed=False, ansible_facts={'gpu_pci': clean_facts(module, 'gpu_pci', facts, [])})


if __name__ == '__main__':
    main()
