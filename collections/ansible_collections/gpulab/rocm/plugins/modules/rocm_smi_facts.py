#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: rocm_smi_facts
short_description: Read per-GPU ids, memory, sensors, clocks, bus and firmware from C(rocm-smi) into facts
version_added: 0.1.0
description:
  - Runs C(rocm-smi) once with C(--showid --showproductname --showuniqueid --showvbios --showmeminfo vram --showtemp
    --showpower --showmaxpower --showclocks --showuse --showbus --showfwinfo --json) and returns one record per GPU
    under C(ansible_facts.rocm_smi).
  - When that prints no JSON (old versions without C(--json)), runs plain C(rocm-smi) and reads its table.
  - With O(src), parses a saved output of any form instead; the form is detected from the text (C(--json) on one
    line or re-indented, C(--csv), the C(GPU[n] key value) sections of C(-a), C(--showproductname) and the like,
    and the concise table of every version from 1.x to 7.x).
  - >-
    Warnings printed before the output (C(WARNING ...), C(Expected integer value from monitor),
    C(Exception caught: map::at)) are kept in C(warnings). C(N/A), C(None), C(Unsupported) and the like become null.
  - A host without C(rocm-smi) gets C(present=false). C(Driver not initialized) (which rocm-smi prints with exit
    status 0) and C(No AMD GPUs specified) give C(gpu_count=0) and an C(error), or a failure with
    O(fail_on_no_gpu=true). Output in no known form gives a failed result with the reason.
author:
  - gpulab.rocm contributors (@gpulab)
extends_documentation_fragment:
  - gpulab.rocm.gpu_facts
  - gpulab.rocm.gpu_facts.tool
requirements:
  - rocm-smi (package C(rocm-smi-lib), or C(rocm-smi) on Debian/Ubuntu), unless O(src) is given
notes:
  - rocm-smi is deprecated in favour of amd-smi (M(gpulab.rocm.amd_smi_facts)); both return the same per-GPU shape.
    The ROCm Core SDK is dropping it (TheRock stopped building rocm-smi-lib in July 2026), so a Core node may have
    none; nothing in gpulab.rocm needs it.
  - The GPU index is rocm-smi's; old versions count a non-AMD card0 (its all-N/A row is skipped and noted in
    C(warnings)). Join with other tools on C(pcie_bus) or C(unique_id).
seealso:
  - module: gpulab.rocm.amd_smi_facts
  - module: gpulab.rocm.rocminfo_facts
'''

EXAMPLES = r'''
- name: Read rocm-smi facts
  gpulab.rocm.rocm_smi_facts:

- name: Fail unless rocm-smi sees a GPU
  gpulab.rocm.rocm_smi_facts:
    fail_on_no_gpu: true

- name: Report VRAM per GPU
  ansible.builtin.debug:
    msg: "{{ ansible_facts.rocm_smi.gpus | map(attribute='vram_total_bytes') | list }}"

- name: Parse a saved `rocm-smi -a` output
  gpulab.rocm.rocm_smi_facts:
    src: /srv/gpu-reports/node17-rocm-smi-a.txt
'''

RETURN = r'''
ansible_facts:
  description: Facts under the key C(rocm_smi).
  returned: always
  type: dict
  contains:
    rocm_smi:
      description: What rocm-smi reports.
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
          description: Exit status of the last call; null with O(src).
          type: int
        form:
          description: The form that was read, C(json), C(csv), C(text), C(table), or C(error) for a bare error message.
          type: str
          sample: json
        driver_version:
          description: The C(Driver version) rocm-smi prints (amdgpu or kernel version).
          type: str
          sample: 6.3.6
        gpus:
          description: One record per GPU; a field the output does not show is null.
          type: list
          elements: dict
          contains:
            index:
              description: rocm-smi's GPU index.
              type: int
            card:
              description: C(card<index>), as rocm-smi keys its JSON.
              type: str
            device_id:
              description: PCI device id, hex.
              type: str
              sample: '0x740f'
            device_rev:
              description: PCI revision, hex.
              type: str
            subsystem_id:
              description: PCI subsystem device id, hex (null when rocm-smi prints a name there).
              type: str
            product_name:
              description: C(Card Series) (or C(Device Name), or the name row of the ROCm 6.0 table).
              type: str
              sample: Instinct MI210
            series:
              description: C(Card Series) as printed (null for the C(0x1002) that rocm-smi 4.x prints).
              type: str
            model:
              description: C(Card Model) as printed.
              type: str
            vendor:
              description: C(Card Vendor).
              type: str
            sku:
              description: C(Card SKU).
              type: str
            unique_id:
              description: C(Unique ID) as 16 hex digits (C(0x02f048617326b1ea)), the id in rocminfo's C(GPU-...) uuid.
              type: str
            vbios:
              description: C(VBIOS version).
              type: str
            node_id:
              description: KFD node (C(Node ID)).
              type: int
            guid:
              description: KFD gpu_id (C(GUID)).
              type: int
            gfx_target:
              description: C(GFX Version) (re-encoded where rocm-smi prints C(gfx11003)), else from the device id table.
              type: str
            sriov_vf:
              description: An SR-IOV virtual function (from the id table or an C(SRIOV) VBIOS/SKU); null when unknown.
              type: bool
            vram_total_bytes:
              description: C(VRAM Total Memory (B)).
              type: int
            vram_used_bytes:
              description: C(VRAM Total Used Memory (B)).
              type: int
            vram_use_percent:
              description: VRAM allocated, percent (JSON C(GPU Memory Allocated (VRAM%)), table C(VRAM%)).
              type: float
            temperature_c:
              description: Edge temperature, or junction where there is no edge sensor (MI300).
              type: float
            temperatures_c:
              description: Every temperature sensor, by name (C(edge), C(junction), C(memory), C(hbm_0)...).
              type: dict
            power_w:
              description: Average (or current socket) graphics package power.
              type: float
            power_cap_w:
              description: C(Max Graphics Package Power (W)), the power cap.
              type: float
            sclk_mhz:
              description: Current graphics clock.
              type: float
            mclk_mhz:
              description: Current memory clock.
              type: float
            use_percent:
              description: C(GPU use (%)).
              type: float
            fan_percent:
              description: Fan speed, percent.
              type: float
            perf_level:
              description: C(Performance Level).
              type: str
            pcie_bus:
              description: PCI address, lower case with domain (rocm-smi prints it upper case).
              type: str
              sample: '0000:63:00.0'
            link_speed_gts:
              description: Current PCIe link speed from C(pcie clock level).
              type: float
            link_width:
              description: Current PCIe link width from C(pcie clock level).
              type: int
            numa_node:
              description: C((Topology) Numa Node).
              type: int
            memory_vendor:
              description: C(GPU memory vendor).
              type: str
            serial:
              description: C(Serial Number).
              type: str
            voltage_mv:
              description: C(Voltage (mV)).
              type: float
            partitions:
              description: Compute and memory partition modes when shown (MI300).
              type: raw
            firmware:
              description:
                - The GPU's microcode versions (C(--showfwinfo), the C(Firmware Information) section of C(-a)), by
                  block id (C(mec), C(sos), C(smc), C(ta_ras), C(sdma0), ...) - the shape of docs/hardware.md's
                  firmware inventory.
                - Each version is C(0x%08x) of the number the driver holds, whatever form the tool printed
                  (C(138), C(0x0036024b), C(00.85.91.00)), so the same firmware compares equal across tools;
                  blocks at version 0 (nothing loaded) and those the tool calls not supported are left out.
              type: dict
              sample: {mec: '0x0000008a', sos: '0x0036024b', smc: '0x00555b00', ta_ras: '0x2000000c'}
        gpu_count:
          description: Number of GPUs.
          type: int
        error:
          description: Why there is no usable GPU, and what to do; null when GPUs were found.
          type: str
        error_kind:
          description: C(tool_missing), C(driver_not_loaded), C(permission_denied) or C(no_gpu); null when GPUs were found.
          type: str
        detail:
          description: The tool's own error lines.
          type: list
          elements: str
        warnings:
          description: Lines rocm-smi printed before its output, and its WARNING lines.
          type: list
          elements: str
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpulab.rocm.plugins.module_utils.host.facts_module import facts_main, facts_spec
from ansible_collections.gpulab.rocm.plugins.module_utils.parsers.gpu_tools import empty_rocm_smi, read_rocm_smi
from ansible_collections.gpulab.rocm.plugins.module_utils.parsers.rocm_smi import parse_rocm_smi


def main():
    module = AnsibleModule(argument_spec=facts_spec(), supports_check_mode=True)
    facts_main(module, 'rocm-smi', empty_rocm_smi, parse_rocm_smi, read_rocm_smi)


if __name__ == '__main__':
    main()
