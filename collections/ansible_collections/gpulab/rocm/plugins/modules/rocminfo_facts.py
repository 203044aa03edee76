#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: rocminfo_facts
short_description: Read the HSA agents that C(rocminfo) lists into facts
version_added: 0.1.0
description:
  - Runs C(rocminfo) (or parses a saved output given by O(src)) and returns every HSA agent, the GPU agents,
    their gfx targets with target features, and the HSA runtime version under C(ansible_facts.rocminfo).
  - Reads every layout from ROCm 1.x to 7.x, with or without the column padding, and output cut after the last
    agent's last ISA, before C(*** Done ***) (then C(complete=false)).
  - A host without C(rocminfo) gets C(present=false). A host where C(rocminfo) reports no usable GPU (driver not
    loaded, no permission on C(/dev/kfd), HSA runtime failure, no GPU agent) gets C(gpu_count=0) and an C(error)
    that says what is wrong and what to do, or a failure with O(fail_on_no_gpu=true).
  - Output that is not C(rocminfo) output, is cut inside an agent (before its C(ISA Info) is complete), or holds
    several outputs one after the other (whose GPUs would count twice), gives a failed result with the reason.
author:
  - gpulab.rocm contributors (@gpulab)
extends_documentation_fragment:
  - gpulab.rocm.gpu_facts
  - gpulab.rocm.gpu_facts.tool
requirements:
  - rocminfo (package C(rocminfo)), unless O(src) is given
notes:
  - Agents are numbered as C(rocminfo) numbers them; CPU agents come first (one per NUMA node). Join GPUs with other
    tools on C(pci_bus) or C(unique_id), not on the agent number.
seealso:
  - module: gpulab.rocm.rocm_smi_facts
  - module: gpulab.rocm.amd_smi_facts
  - module: gpulab.rocm.gpu_pci_facts
'''

EXAMPLES = r'''
- name: Read the GPU agents
  gpulab.rocm.rocminfo_facts:

- name: Require a working GPU
  gpulab.rocm.rocminfo_facts:
    fail_on_no_gpu: true

- name: Show the gfx targets
  ansible.builtin.debug:
    msg: "{{ ansible_facts.rocminfo.gfx_targets }}"

- name: Analyse an output saved from another host
  gpulab.rocm.rocminfo_facts:
    src: /srv/gpu-reports/node17-rocminfo.txt
'''

RETURN = r'''
ansible_facts:
  description: Facts under the key C(rocminfo).
  returned: always
  type: dict
  contains:
    rocminfo:
      description: What rocminfo reports.
      returned: always
      type: dict
      contains:
        present:
          description: C(true) when the tool was found and run, or O(src) was read.
          type: bool
        source:
          description: Where the text came from, the tool's path or the O(src) path.
          type: str
        rc:
          description: The tool's exit status; null with O(src).
          type: int
          sample: 0
        runtime_version:
          description: HSA runtime version (C(Runtime Version)).
          type: str
          sample: '1.15'
        runtime_ext_version:
          description: HSA runtime extension version, printed from ROCm 6 on.
          type: str
          sample: '1.7'
        rock_loaded:
          description: Whether the output says the KFD (C(ROCk module)) is loaded; null when it does not say.
          type: bool
        rock_version:
          description: KFD module version when printed (amdgpu-dkms, ROCm 6.1+).
          type: str
          sample: 6.12.12
        wsl:
          description: The output says C(WSL environment detected).
          type: bool
        complete:
          description:
            - The output ends with C(*** Done ***); false for output cut after the last agent's last ISA.
            - Output cut earlier, inside an agent, is refused (a failed result), not returned with C(complete=false).
          type: bool
        system:
          description: The HSA System Attributes as printed, key to value.
          type: dict
        agents:
          description:
            - Every agent, CPU and GPU, in rocminfo order.
            - Sizes are bytes (rocminfo prints KB). Fields a version does not print are null.
          type: list
          elements: dict
          contains:
            agent:
              description: Agent number (1-based, CPU agents first).
              type: int
            name:
              description: Agent name; the gfx target for GPUs (C(gfx90a)).
              type: str
            marketing_name:
              description: Product name (C(AMD Instinct MI210)); null before ROCm 2.
              type: str
            vendor:
              description: C(Vendor Name) (C(AMD), C(CPU)).
              type: str
            device_type:
              description: C(CPU) or C(GPU).
              type: str
            uuid:
              description: C(Uuid) as printed (C(GPU-8d1457e2c20f59d2), C(GPU-XX) when there is no unique id).
              type: str
            unique_id:
              description: The unique id in C(uuid) as rocm-smi prints it (C(0x8d1457e2c20f59d2)), else null.
              type: str
            node:
              description: HSA node (KFD topology node).
              type: int
            chip_id:
              description: PCI device id, decimal.
              type: int
            pci_device_id:
              description: PCI device id, hex (C(0x740f)); GPUs only.
              type: str
            bdfid:
              description: C(BDFID) as printed (bus<<8 | device<<3 | function).
              type: int
            pci_bus:
              description: PCI address decoded from C(bdfid) (domain 0000 assumed); GPUs only.
              type: str
              sample: '0000:03:00.0'
            compute_units:
              description: C(Compute Unit); cores for CPU agents.
              type: int
            simds_per_cu:
              description: C(SIMDs per CU).
              type: int
            wavefront_size:
              description: C(Wavefront Size) (64 on CDNA/GCN, 32 on RDNA).
              type: int
            max_clock_mhz:
              description: C(Max Clock Freq. (MHz)).
              type: int
            cache_bytes:
              description: Cache sizes in bytes by level (C(L1), C(L2), C(L3)).
              type: dict
              sample: {L1: 16384, L2: 8388608}
            pools:
              description: Memory pools with C(segment), C(flags), C(size_bytes), C(allocatable), C(accessible_by_all).
              type: list
              elements: dict
            isas:
              description:
                - ISAs with C(name), C(target_id) (the target with its features, C(gfx90a:sramecc+:xnack-)),
                  C(processor), C(features) and C(generic) (true for C(gfx9-4-generic) and similar).
              type: list
              elements: dict
            gfx_target:
              description: The GPU's gfx target (C(gfx90a)); null for CPUs.
              type: str
            target_id:
              description: gfx target with target features from the first non-generic ISA.
              type: str
              sample: gfx90a:sramecc+:xnack-
            vram_bytes:
              description: Size of the first GLOBAL COARSE GRAINED pool (the GPU's VRAM); GPUs only.
              type: int
        gpus:
          description: The agents with C(device_type=GPU).
          type: list
          elements: dict
        gpu_count:
          description: Number of GPUs.
          type: int
        cpu_count:
          description: Number of CPU agents.
          type: int
        gfx_targets:
          description: Unique gfx targets of the GPUs, sorted.
          type: list
          elements: str
          sample: [gfx1036, gfx908]
        target_ids:
          description: Unique target ids (with features) of the GPUs, sorted.
          type: list
          elements: str
          sample: ['gfx908:sramecc+:xnack-']
        error:
          description: Why there is no usable GPU, and what to do; null when GPUs were found.
          type: str
        error_kind:
          description:
            - C(tool_missing), C(driver_not_loaded), C(permission_denied), C(no_kfd_device), C(kfd_invalid_argument),
              C(kfd_open_failed), C(hsa_out_of_resources), C(hsa_error) or C(no_gpu_agent); null when GPUs were found.
          type: str
        detail:
          description: The tool's own error lines.
          type: list
          elements: str
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpulab.rocm.plugins.module_utils.host.facts_module import facts_main, facts_spec
from ansible_collections.gpulab.rocm.plugins.module_utils.parsers.gpu_tools import empty_rocminfo, read_rocminfo
from ansible_collections.gpulab.rocm.plugins.module_utils.parsers.rocminfo import parse_rocminfo


def main():
    module = AnsibleModule(argument_spec=facts_spec(), supports_check_mode=True)
    facts_main(module, 'rocminfo', empty_rocminfo, parse_rocminfo, read_rocminfo)


if __name__ == '__main__':
    main()
