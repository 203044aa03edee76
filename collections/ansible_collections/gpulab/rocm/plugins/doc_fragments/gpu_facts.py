# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    """Shared documentation of the GPU facts modules (gpulab.rocm.*_facts).

    Only DOCUMENTATION (options, attributes, notes, seealso) can come from a fragment: ansible-core merges fragments
    into it alone (ansible.utils.plugin_docs.add_fragments), never into RETURN. So each module keeps its RETURN; the
    facts that the three tool modules share (present, source, gpu_count, error, detail) are described word for word
    the same, and tests/unit/plugins/modules/test_facts_return_docs.py keeps them so.
    """

    # Every facts module: read-only, returns ansible_facts.
    DOCUMENTATION = r'''
options: {}
attributes:
  check_mode:
    support: full
    description: The module only reads; it runs the same in check mode.
  diff_mode:
    support: none
    description: Nothing changes, so there is no diff.
  facts:
    support: full
    description: The result is returned under one key of C(ansible_facts).
'''

    # The modules that run a ROCm tool (rocminfo, rocm-smi, amd-smi).
    TOOL = r'''
options:
  src:
    description:
      - Path of a file on the managed host holding output saved from the tool (any form the parser reads).
      - The tool is not run; use it to analyse outputs collected from a fleet.
    type: path
  executable:
    description:
      - The tool to run, as a name looked up in C(PATH) and the ROCm folders (C(/opt/rocm/bin), and for the ROCm
        Core SDK C(/opt/rocm/core/bin) and the newest C(/opt/rocm/core-X.Y/bin)), or an absolute path.
    type: str
    aliases: [path]
  fail_on_no_gpu:
    description:
      - Fail when the tool reports no usable GPU (driver not loaded, no permission on C(/dev/kfd), no GPU).
      - By default such a host gets C(gpu_count=0) and an C(error) that says what is wrong and what to do.
      - A missing tool never fails; it gives C(present=false).
    type: bool
    default: false
  timeout:
    description:
      - Seconds each call of the tool may run before it is stopped (coreutils C(timeout) sends TERM, then KILL 5 seconds
        later); a tool stopped so fails the task with a message that names it (a wedged GPU or driver).
      - Every string returned is valid UTF-8; bytes of the tool's output that are not are replaced by U+FFFD, with a
        warning naming the tool.
    type: int
    default: 60
    version_added: 0.3.0
'''
