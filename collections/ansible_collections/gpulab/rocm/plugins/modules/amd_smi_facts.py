#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: amd_smi_facts
short_description: Read per-GPU ids, memory, sensors, clocks, links and firmware from C(amd-smi) into facts
version_added: 0.1.0
description:
  - Runs C(amd-smi static --json), C(amd-smi metric --json), C(amd-smi list --json) and C(amd-smi firmware), merges
    them per GPU and returns one record per GPU under C(ansible_facts.amd_smi), in the same shape as
    M(gpulab.rocm.rocm_smi_facts).
  - >-
    Accepts both JSON containers amd-smi has used, the bare array (amd-smi 24/25) and C({"gpu_data": [...]})
    (25.x/26.x), C({value, unit}) objects and C(N/A) values.
  - With O(src), parses one saved output instead, detecting what it is (static, metric, list or topology JSON,
    the text C(list), C(metric), C(static) and C(firmware) forms, C(metric --csv), the default table of amd-smi 26,
    or the table of C(amd-smi monitor)).
  - A host without C(amd-smi) gets C(present=false). amd-smi's no-GPU errors (exit status 255,
    C(driver not initialized), C(Unable to detect any GPU devices)) give C(gpu_count=0) and an C(error), or a
    failure with O(fail_on_no_gpu=true). Output in no known form gives a failed result with the reason.
author:
  - gpulab.rocm contributors (@gpulab)
extends_documentation_fragment:
  - gpulab.rocm.gpu_facts
  - gpulab.rocm.gpu_facts.tool
options:
  metric:
    description:
      - Also run C(amd-smi metric --json) for temperatures, power, clocks, use and the current PCIe link.
      - It is the slowest of the calls; turn it off when only ids, names and sizes are needed.
    type: bool
    default: true
  firmware:
    description:
      - Also run C(amd-smi firmware) (alias C(ucode)) for each GPU's microcode versions (C(gpus[].firmware)).
      - Its text form is read (the form of every real capture); the C(FW_VERSION) forms amd-smi has printed are
        normalized (docs/hardware.md).
    type: bool
    default: true
requirements:
  - amd-smi (package C(amd-smi-lib), or C(amd-smi) on Debian), unless O(src) is given
notes:
  - amd-smi's C(MB) are MiB; sizes are returned in bytes.
  - C(unique_id) comes from C(asic_serial), or from the UUID that amd-smi builds from it; a placeholder UUID
    (C(00ff740f-0000-1000-8000-000000000000), seen when the id is unreadable) gives C(unique_id=null) and
    C(uuid_placeholder=true).
seealso:
  - module: gpulab.rocm.rocm_smi_facts
  - module: gpulab.rocm.rocminfo_facts
'''

EXAMPLES = r'''
- name: Read amd-smi facts
  gpulab.rocm.amd_smi_facts:

- name: Ids and sizes only (skip the metric and firmware calls)
  gpulab.rocm.amd_smi_facts:
    metric: false
    firmware: false

- name: Parse a saved `amd-smi metric --json`
  gpulab.rocm.amd_smi_facts:
    src: /srv/gpu-reports/node17-amd-smi-metric.json
'''

RETURN = r'''
ansible_facts:
  description: Facts under the key C(amd_smi).
  returned: always
  type: dict
  contains:
    amd_smi:
      description: What amd-smi reports.
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
          description: Exit status of the first amd-smi call (C(static)); null with O(src).
          type: int
        forms:
          description: The forms read (C(json), C(text), C(csv), C(table), C(monitor)).
          type: list
          elements: str
        kinds:
          description: What the outputs held (C(static), C(metric), C(list), C(topology), C(firmware), C(default),
            C(monitor)).
          type: list
          elements: str
        amdsmi_version:
          description: amd-smi version when the output shows it (default table).
          type: str
        rocm_version:
          description: ROCm version when the output shows it (default table).
          type: str
        driver_version:
          description: amdgpu driver version (C(driver.version), or the kernel release with in-box drivers).
          type: str
        gpus:
          description:
            - One record per GPU with the keys of M(gpulab.rocm.rocm_smi_facts)'s C(gpus) (C(card) and C(series) are
              always null), plus C(uuid), C(uuid_placeholder), C(kfd_id), C(partition_id), C(subvendor_id),
              C(vbios_version), C(boot_firmware), C(compute_units), C(vram_type), C(vram_vendor), C(max_power_w),
              C(max_link_speed_gts), C(max_link_width) and C(driver_version); C(firmware) as in
              M(gpulab.rocm.rocm_smi_facts), from C(amd-smi firmware).
            - C(vbios), C(vbios_version) and C(boot_firmware) are the firmware block's C(PART_NUMBER), C(VERSION) and
              C(BOOT_FIRMWARE) - C(IFWI) from ROCm 7.1, C(VBIOS) before; C(BOOT_FIRMWARE) (the legacy VBIOS version
              number) is printed from amd-smi 27.1 (ROCm 10.1) on, else null.
            - C(temperature_c) is the edge sensor, or the hotspot where there is none (MI300); C(power_cap_w) is
              C(limit.socket_power), null where amd-smi shows none (an APU's C(14 W) in the default table, a cap of
              C(0 W), and C(amd-smi monitor), which prints no cap); C(sclk_mhz) and C(mclk_mhz) are C(gfx_0) and
              C(mem_0).
          type: list
          elements: dict
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
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpulab.rocm.plugins.module_utils.host.facts_module import facts_main, facts_spec
from ansible_collections.gpulab.rocm.plugins.module_utils.parsers.amd_smi import parse_amd_smi
from ansible_collections.gpulab.rocm.plugins.module_utils.parsers.gpu_tools import empty_amd_smi, read_amd_smi


def main():
    module = AnsibleModule(argument_spec=facts_spec(metric=dict(type='bool', default=True),
                                                    firmware=dict(type='bool', default=True)),
                           supports_check_mode=True)
    facts_main(module, 'amd-smi', empty_amd_smi, parse_amd_smi, read_amd_smi, module.params['metric'], module.warn,
               module.params['firmware'])


if __name__ == '__main__':
    main()
