# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""When the amdgpu driver role may reboot a host. Pure, so every combination is unit-tested."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


def reboot_plan(driver_changed, policy_allows, connection, host_machine_id, controller_machine_id, in_container):
    """{'reboot': bool, 'pending': bool, 'reason': str}: reboot only when the driver package changed and the
    policy allows it, never the control node (same machine id, or a local connection) nor a container."""
    if not driver_changed:
        return {'reboot': False, 'pending': False, 'reason': 'the driver package did not change'}
    refusals = []
    if not policy_allows:
        refusals.append('rocm_driver_reboot is false')
    if connection in ('local', 'ansible.builtin.local'):
        refusals.append('the host is reached with a local connection')
    if host_machine_id and controller_machine_id and host_machine_id.strip() == controller_machine_id.strip():
        refusals.append('the host is the control node')
    if in_container:
        refusals.append('the host is a container')
    if refusals:
        return {'reboot': False, 'pending': True,
                'reason': 'the driver changed and needs a reboot, not done here: %s; reboot it yourself'
                          % '; '.join(refusals)}
    return {'reboot': True, 'pending': False, 'reason': 'the driver changed; rebooting to load it'}
