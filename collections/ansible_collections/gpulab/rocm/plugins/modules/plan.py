#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: plan
short_description: Plan one phase of a ROCm node from the node's probe and the wanted state
version_added: 0.2.0
description:
  - The first call on a host runs M(gpulab.rocm.node_probe) (one read-only module run) and keeps the result for the
    rest of the run as the host variable C(gpulab_node); later calls plan from it without touching the host.
  - Plans the phase O(phase) from the node, the phase's wanted state O(wanted) (the calling role's own variables)
    and the stack-wide inputs, which it reads from the host's variables (C(rocm_version), C(rocm_versions),
    C(rocm_install_source), C(rocm_gpu_users), C(rocm_kernel_driver), C(rocm_apt_suite),
    C(rocm_expected_gpu_count); their defaults are in docs/roles.md, "Stack-wide inputs").
  - Returns what the phase must change, each change with its reason, and what the role applies (the keys per
    phase are the planner's contract table). Never changes the host; an invalid wanted state fails with a message
    naming the variable and the fix. A second call with the same inputs and no new reading of the host returns
    the plan already computed (the apply pass after the plan pass).
  - Runs on the controller; the decisions are the pure functions of the collection's module_utils (planner.py).
author:
  - gpulab.rocm contributors (@gpulab)
options:
  phase:
    description: The phase to plan (one of the planner's CONTRACT); required unless O(pass) or O(gate) is given.
    type: str
    choices: [preflight, repo, driver, sdk, access, env, modules, containers, health, metrics, verify, report,
              slurm_node, slurm, maintenance, validate]
  pass:
    description:
      - Instead of one phase, the plan pass of a play (docs/plan-contract.md) in one call, which probes the host,
        plans each of these phases in this order, then does what O(gate) does. Each phase's inputs are those of its
        role (C(rocm_<phase>); the phase's declared role) - its wanted state C(__rocm_<phase>_wanted) and its probe
        arguments C(__rocm_<phase>_probe) (none where the role has none), from the role's C(vars/main.yml) - and its
        variables are checked against the role's C(meta/argument_specs.yml); so every role named must be imported
        into the play (C(playbooks/provision.yml) imports them tagged C(never), for their variables only). A phase
        that refuses does not stop the others; the gate lists every problem at once.
      - Only the phases that the run's C(--tags) and C(--skip-tags) select are planned, each as if it were a task
        tagged with its phase (and the tags the task inherits); V(preflight) (the probe's checks) goes with any
        selected phase unless C(preflight) is skipped, and V(maintenance) with any selected role. Tag the task
        C(always). Where no phase is selected the call plans nothing and probes nothing.
    type: list
    elements: str
    choices: [preflight, repo, driver, sdk, access, env, modules, containers, health, metrics, verify, report,
              slurm_node, slurm, maintenance, validate]
    default: []
    version_added: 0.3.0
  gate:
    description:
      - Instead of planning, stop the host when any phase planned in this play's plan pass refused (or preflight
        found problems), with every problem of every phase in one message; see docs/plan-contract.md. O(pass) ends
        with the same gate; C(rocm_preflight) run alone gates its own problems with this.
      - When nothing refuses, the gate keeps in C(gpulab_node.pass.apply) (and returns as C(apply)) the phases whose
        roles have something to do on this run - a change, a check or a message of their own, or a change of a phase
        before them; C(playbooks/provision.yml) applies the role of each of those phases, in the order of its loop, and
        skips the other roles whole.
      - The gate shows every phase's notices (what needs attention) as warnings naming the host; a plan made outside
        a plan pass shows only those not shown yet in this run.
    type: bool
    default: false
  wanted:
    description: The phase's wanted state (its keys per phase are in the roles' vars and in module_utils/plan_*.py).
    type: dict
    default: {}
  probe:
    description: Arguments of M(gpulab.rocm.node_probe) for this host (for example C(sysfs_root)); kept for the
      later probes of the run.
    type: dict
    default: {}
  refresh:
    description: Probe sections to read again before planning (V(all) for everything), after a phase changed them.
    type: list
    elements: str
    default: []
  stats_key:
    description:
      - Outside the plan pass, also record this phase's C(stats) result for the host under this key, as
        M(ansible.builtin.set_stats) does (C(per_host=false), C(aggregate=true)), which AWX keeps as a job
        artifact (role C(rocm_verify), key C(rocm_verify_nodes)). Empty, or a phase without C(stats), records nothing.
    type: str
    default: ''
    version_added: 0.3.0
attributes:
  action:
    support: full
    description: Plans on the controller; the only module it runs on the host is the read-only
      M(gpulab.rocm.node_probe).
  check_mode:
    support: full
    description: Plans the same in check mode; it never changes the host.
  diff_mode:
    support: none
    description: Nothing changes, so there is no diff; the plan lists the changes the role would make.
seealso:
  - module: gpulab.rocm.node_probe
'''

EXAMPLES = r'''
- name: Plan the ROCm apt sources
  gpulab.rocm.plan:
    phase: repo
    wanted:
      state: present
      base_url: https://repo.radeon.com
      key_url: https://repo.radeon.com/rocm/rocm.gpg.key
      key_fingerprints: [CA8BB4727A47B4D09B4EE8969386B48A1A693C5C]
      keyring: /etc/apt/keyrings/rocm.gpg
      architecture: amd64
      pin_origin: repo.radeon.com
      pin_priority: 600
      core_base_url: ''
      core_key_url: ''
      core_key_fingerprints: [D0F004A0025A1145C7807FCD0701EAC4D5E02107]
      core_keyring: /etc/apt/keyrings/amdrocm.gpg
      core_pin_origin: stable.repo.amd.com
  register: repo_plan

- name: Show what would change, and why
  ansible.builtin.debug:
    msg: "{{ repo_plan.changes }}"
'''

RETURN = r'''
# BEGIN generated from planner.CONTRACT (tests/tools/plan_return.py)
phase:
  description: The phase planned.
  returned: always
  type: str
changes:
  description: What the phase changes, each as C(change) and C(reason); empty when the host is converged.
  returned: always
  type: list
  elements: dict
notices:
  description: Things worth knowing that change nothing, shown as warnings naming the host (by the gate, or by a
    plan outside a plan pass for what is new); their own key, as Ansible keeps C(warnings) for its own.
  returned: always
  type: list
  elements: str
stack:
  description: The stack-wide inputs, with their defaults applied.
  returned: always
  type: dict
msg:
  description: The changes in one line.
  returned: always
  type: str
planned_in:
  description: V(plan pass) when the plan is the one the plan pass computed from the same inputs (no reading of
    the host since); absent when it was planned in this call.
  returned: when it applies (see the description)
  type: str
refused:
  description: 'Only in the plan pass: the phase''s problems, kept for the gate (the other keys are then absent).'
  returned: when it applies (see the description)
  type: list
  elements: str
after_failure:
  description:
  - 'Phase partition: What a failed step leaves and what the next run does, in words (the role''s failure message).'
  returned: for the phase partition
  type: raw
allow_held:
  description:
  - 'Phase sdk: Whether apt may change held packages (rocm_sdk_hold owns the holds).'
  returned: for the phase sdk
  type: raw
alternative:
  description:
  - 'Phase sdk: The release /opt/rocm must point at now, or null.'
  returned: for the phase sdk
  type: raw
amd_exporter_query:
  description:
  - 'Phase metrics: Packages to ask apt about (AMD''s amdgpu-exporter, before it is installed).'
  returned: for the phase metrics
  type: raw
amd_smi:
  description:
  - 'Phase partition: The amd-smi that sets the partitions: where the probe found it, else V(amd-smi) on the PATH.'
  returned: for the phase partition
  type: raw
apply:
  description:
  - 'Phase repo: V(present) (install keys, sources, pin), V(absent) (remove them) or V(none).'
  returned: for the phase repo
  type: raw
args:
  description:
  - 'Phase validate: gpu_bench.py''s arguments after the script and --output (benchmarks and their settings).'
  returned: for the phase validate
  type: raw
bashrc:
  description:
  - 'Phase env: User to the block of their ~/.bashrc (null: remove it), written as the user.'
  returned: for the phase env
  type: raw
become_method:
  description:
  - 'Phase env: How the tasks become each user to write their file: V(ansible.builtin.sudo) where the host has sudo,
    else V(ansible.builtin.su).'
  returned: for the phase env
  type: raw
check:
  description:
  - 'Phase containers: The container check: engines, users, cases, gids, image, busybox, become_method (sudo or
    su).'
  returned: for the phase containers
  type: raw
compute:
  description:
  - 'Phase partition: The compute partition to set (C(amd-smi set --compute-partition)), or null for none.'
  returned: for the phase partition
  type: raw
contents:
  description:
  - 'Phase repo: The sources and pin files to write, path to content: C(rocm.list) for a legacy release, C(amdrocm-stable.sources)
    for a ROCm Core SDK release, C(amdgpu.list) where the driver is wanted.'
  returned: for the phase repo
  type: raw
create_groups:
  description:
  - 'Phase access: GPU groups to create.'
  returned: for the phase access
  type: raw
current:
  description:
  - 'Phase partition: Per physical GPU: C(bdf), C(model), C(compute), C(memory) as amd-smi reports them now.'
  returned: for the phase partition
  type: raw
daemon_json:
  description:
  - 'Phase containers: Docker''s merged daemon.json to write, path to content.'
  returned: for the phase containers
  type: raw
daemon_json_mode:
  description:
  - 'Phase containers: The mode daemon.json keeps.'
  returned: for the phase containers
  type: raw
daemon_reload:
  description:
  - 'Phase tuning: Whether systemd reads its units again (the governor unit was written).'
  returned: for the phase tuning
  type: raw
dirs:
  description:
  - 'Phase modules: Modulefile folders to make.'
  - 'Phase containers: Folders of the CDI spec and daemon.json to make.'
  - 'Phase metrics: Folders of the writer''s code, its configuration and node_exporter''s drop-in (the writer makes
    a missing textfile folder itself and never changes the lab''s own).'
  - 'Phase tuning: Folders to make first (C(/etc/default/grub.d) where it is missing).'
  returned: for the phases modules, containers, metrics, tuning
  type: raw
dkms_remove:
  description:
  - 'Phase driver: AMD''s old amdgpu DKMS trees to remove before the install (C(amdgpu/<version>), each run as C(dkms
    remove amdgpu/<version> --all)); empty when there are none.'
  returned: for the phase driver
  type: raw
drain:
  description:
  - 'Phase maintenance: Whether the play drains the node (not when it is drained already).'
  returned: for the phase maintenance
  type: raw
dropin:
  description:
  - 'Phase slurm: For slurmd''s systemd drop-in that waits for /dev/kfd and the render nodes (it is among C(files)):
    C(folder) (make its folder) and C(reload) (reload systemd), or null when it stays.'
  returned: for the phase slurm
  type: raw
executables:
  description:
  - 'Phase metrics: The writer''s command (mode 0755), path to content.'
  returned: for the phase metrics
  type: raw
files:
  description:
  - 'Phase access: The whole new /etc/adduser.conf by its path, where it changes (written in the same module run
    as the groups).'
  - 'Phase env: Root-owned files to write, path to content (profile.d, ld.so.conf.d).'
  - 'Phase modules: Modulefiles and the default marker to write, path to content.'
  - 'Phase health: The expected values to write (the data file), path to content.'
  - 'Phase metrics: The writer''s configuration, the units and the drop-in, path to content.'
  - 'Phase tuning: Our drop-ins to write, path to content.'
  - 'Phase slurm: Slurm files to write, path to content.'
  returned: for the phases access, env, modules, health, metrics, tuning, slurm
  type: raw
findings:
  description:
  - 'Phase tuning: What is not in effect on the running node, one line each (rocm_verify shows them as notices).'
  returned: for the phase tuning
  type: raw
folders:
  description:
  - 'Phase health: Root-owned folders of the program to make.'
  returned: for the phase health
  type: raw
governor_remove:
  description:
  - 'Phase tuning: Whether the governor unit is stopped and disabled before its file is removed, and systemd reads
    its units again after (systemd runs the host).'
  returned: for the phase tuning
  type: raw
governor_service:
  description:
  - 'Phase tuning: C(started) (the unit is new or not active), C(restarted) (a CPU left performance) or null; the
    unit is enabled either way.'
  returned: for the phase tuning
  type: raw
gpus_after:
  description:
  - 'Phase partition: The logical GPUs ROCm shows once the profile is applied.'
  returned: for the phase partition
  type: raw
gpus_before:
  description:
  - 'Phase partition: The logical GPUs ROCm shows now (KFD GPU nodes).'
  returned: for the phase partition
  type: raw
gres_first:
  description:
  - 'Phase maintenance: Whether the node is resumed only after upgrade.yml''s Slurm play gave Slurm its GPUs: its
    GPU partition profile is declared (rocm_partition), so the run can change the GPUs Slurm knows (then resume
    is false and that play resumes it).'
  returned: for the phase maintenance
  type: raw
holders:
  description:
  - 'Phase partition: The processes that hold a GPU device open (C(pid), C(comm), C(uid), C(devices)), read for
    a change; once the role stopped its units (C(stopped) in its wanted state) any of them refuses the change.'
  returned: for the phase partition
  type: raw
holds:
  description:
  - 'Phase sdk: Package name to V(hold) for the holds to set.'
  returned: for the phase sdk
  type: raw
index_url:
  description:
  - 'Phase validate: The release''s wheel index: PyTorch''s (V(https://download.pytorch.org/whl/rocmX.Y), or V(rocmX.Y.Z)
    for a point release it publishes on its own) for a legacy release, AMD''s own for a ROCm Core SDK release; null
    where rocm_validate_rocm_version is no release.'
  returned: for the phase validate
  type: raw
install:
  description:
  - 'Phase driver: Packages to install (amdgpu-dkms and the headers of the installed kernels); empty when in place.'
  - 'Phase modules: Distribution packages to install for the modules tool (Environment Modules when asked).'
  - 'Phase containers: Engine and check packages to install.'
  - 'Phase metrics: Packages to install (prometheus-node-exporter) where the host lacks them.'
  returned: for the phases driver, modules, containers, metrics
  type: raw
interpreter:
  description:
  - 'Phase validate: The Python that runs gpu_bench.py (the venv''s when PyTorch is installed there).'
  returned: for the phase validate
  type: raw
ldconfig:
  description:
  - 'Phase env: Whether the linker cache is rebuilt.'
  returned: for the phase env
  type: raw
library:
  description:
  - 'Phase health: The program''s code to write (the collection''s module_utils it runs), path to content.'
  - 'Phase metrics: The writer''s code (the collection''s module_utils it runs), path to content.'
  returned: for the phases health, metrics
  type: raw
memberships:
  description:
  - 'Phase access: User to the groups to add them to.'
  returned: for the phase access
  type: raw
memory:
  description:
  - 'Phase partition: The memory partition to set (C(amd-smi set --memory-partition)), or null for none.'
  returned: for the phase partition
  type: raw
miopen_dir:
  description:
  - 'Phase env: The shared MIOpen folder to make, or null.'
  returned: for the phase env
  type: raw
munge_key:
  description:
  - 'Phase slurm: What to do with the munge key.'
  returned: for the phase slurm
  type: raw
node:
  description:
  - 'Phase maintenance: The host''s Slurm node name, or null where it is not maintained.'
  - 'Phase slurm_node: This host''s Slurm record (its GPUs as GRES), for the slurm phase of every host.'
  returned: for the phases maintenance, slurm_node
  type: raw
order:
  description:
  - 'Phase partition: The steps in order, V(memory) and V(compute): memory first where the pair between is supported.'
  returned: for the phase partition
  type: raw
orphan_check:
  description:
  - 'Phase sdk: Whether apt autoremove is read before purging the distribution packages.'
  returned: for the phase sdk
  type: raw
packages:
  description:
  - 'Phase sdk: The package change once the candidates are known: install, prepurge, purge, download_first, unpublished;
    null before.'
  - 'Phase slurm_node: Slurm and munge packages to install on this host.'
  returned: for the phases sdk, slurm_node
  type: raw
problems:
  description:
  - 'Phase preflight: Why the host is not fit for the release (the gate lists them); empty when it is.'
  - 'Phase tuning: Settings written and applied in this run that are still not in effect (rocm_verify fails on them).'
  - 'Phase verify: What does not work on the node as planned (the role fails on them).'
  returned: for the phases preflight, tuning, verify
  type: raw
purge_orphans:
  description:
  - 'Phase sdk: Dependencies only the purged distribution packages needed, to remove.'
  returned: for the phase sdk
  type: raw
pytorch_packages:
  description:
  - 'Phase validate: What pip installs into the venv: C(rocm_validate_pytorch_packages), for a ROCm Core SDK release
    with the host''s GPU targets as device extras of torch and torchvision and the release''s rocm package pinned.'
  returned: for the phase validate
  type: raw
query:
  description:
  - 'Phase sdk: Package names to ask apt about (its candidates decide the package change).'
  returned: for the phase sdk
  type: raw
reason:
  description:
  - 'Phase maintenance: The drain reason (it starts with V(gpulab: maintenance:)).'
  returned: for the phase maintenance
  type: raw
reboot:
  description:
  - 'Phase driver: C(allowed) (whether the role may reboot this host) and C(reason).'
  - 'Phase tuning: C(needed) (kernel arguments configured that the running kernel lacks, or removed from the next
    boot''s line), C(allowed) (never for a removal), C(through_slurm), C(args), C(reason) and C(mark) (the line
    for C(/run/reboot-required)).'
  - 'Phase maintenance: Whether the play reboots the node through Slurm (scontrol reboot ASAP) for a driver change.'
  returned: for the phases driver, tuning, maintenance
  type: raw
reboot_pending:
  description:
  - 'Phase driver: The installed driver is not the loaded one and no reboot was marked (a run killed between the
    install and its reboot step): reboot or mark it now.'
  returned: for the phase driver
  type: raw
reboot_record:
  description:
  - 'Phase driver: What the role writes to its reboot record once it rebooted or marked the reboot: the driver code
    the reboot is for (a node that comes back without that driver is not rebooted again for it).'
  - 'Phase tuning: What the role writes to its record once it rebooted or marked the reboot (the arguments).'
  returned: for the phases driver, tuning
  type: raw
reconfigure:
  description:
  - 'Phase slurm: Whether scontrol reconfigure runs.'
  returned: for the phase slurm
  type: raw
record:
  description:
  - 'Phase report: This host''s record of the fleet report.'
  returned: for the phase report
  type: raw
refresh_after:
  description:
  - 'Phase sdk: Probe sections to read again after the package change.'
  returned: for the phase sdk
  type: raw
refresh_lists:
  description:
  - 'Phase sdk: Whether the distribution''s lists are refreshed before asking apt.'
  returned: for the phase sdk
  type: raw
refresh_scope:
  description:
  - 'Phase repo: V(sources) (only the lists of the ROCm sources) or V(all) (every list once, where apt has none
    yet and the archive answers).'
  returned: for the phase repo
  type: raw
reload:
  description:
  - 'Phase partition: The driver reload the memory partition change needs, one command line per step, in order.'
  returned: for the phase partition
  type: raw
remove:
  description:
  - 'Phase repo: Sources and pin files to remove (the other stream''s, C(amdgpu.list) where the driver is not wanted,
    every one when absent).'
  - 'Phase env: Root-owned files to remove.'
  - 'Phase modules: Modulefiles of this collection to remove (releases no longer installed).'
  - 'Phase containers: Removed (state absent): files to remove (the role''s CDI spec, a daemon.json that held only
    its key).'
  - 'Phase health: Removed (state absent): files (to unlink), trees (folders removed with what they hold) and prune
    (folders removed only where empty, deepest first).'
  - 'Phase metrics: Removed (state absent): units (stopped and disabled first), files, trees, prune (folders removed
    only where empty) and node_exporter (restart it where it runs: our drop-in is gone).'
  - 'Phase tuning: Our files to remove: the GRUB drop-in once the lab''s own files have its arguments; with no profile
    or state V(absent), every file an earlier run wrote (the drop-ins, the governor unit and its enablement link,
    the reboot record).'
  - 'Phase slurm: Slurm files to remove.'
  returned: for the phases repo, env, modules, containers, health, metrics, tuning, slurm
  type: raw
repair:
  description:
  - 'Phase sdk: Whether an interrupted dpkg run must be finished first.'
  returned: for the phase sdk
  type: raw
restart:
  description:
  - 'Phase slurm: Daemons to restart.'
  returned: for the phase slurm
  type: raw
restart_docker:
  description:
  - 'Phase containers: Whether dockerd is restarted to read the CDI setting.'
  returned: for the phase containers
  type: raw
resume:
  description:
  - 'Phase maintenance: Whether the node is resumed after its health check passes (never an admin''s drain).'
  returned: for the phase maintenance
  type: raw
scripts:
  description:
  - 'Phase health: The entry scripts to write (mode 0755), path to content.'
  returned: for the phase health
  type: raw
services:
  description:
  - 'Phase metrics: The units to enable and start where systemd runs (the timer, node_exporter, AMD''s exporter).'
  returned: for the phase metrics
  type: raw
set_alternative:
  description:
  - 'Phase sdk: The release /opt/rocm is set to after a package change (side by side), or null.'
  returned: for the phase sdk
  type: raw
settings:
  description:
  - 'Phase tuning: Each setting of the profile: C(name), C(wanted), C(running), C(configured) (what the files boot
    or apply, and C(by): the file), C(state) (V(in_effect), V(lab), V(write), V(apply), V(reboot_pending), V(not_settable),
    V(overridden)) and C(why).'
  returned: for the phase tuning
  type: raw
signing_keys:
  description:
  - 'Phase repo: The keyrings to pass to M(gpulab.rocm.apt_source) as C(keys): the key URL and trusted fingerprints
    of each one the sources name, and C(state=absent) for one no source uses any more (every one when absent).'
  returned: for the phase repo
  type: raw
skip:
  description:
  - 'Phase tuning: Why no profile applies here (V(rocm_tuning_profile) is V(none), or V(rocm_tuning_state) is V(absent)),
    or null; with our files on the host the plan then lists only their removal.'
  returned: for the phase tuning
  type: raw
slurm_node:
  description:
  - 'Phase partition: The Slurm node a maintenance run drained for the change (its drain reason then names a step
    that failed), or null.'
  returned: for the phase partition
  type: raw
slurmd_first:
  description:
  - 'Phase slurm: Whether this slurmd restarts before slurmctld: its own GPU count rises (slurmctld ignores a count
    above the configured one, and drains a node that reports fewer).'
  returned: for the phase slurm
  type: raw
spec:
  description:
  - 'Phase containers: The CDI spec to write, path to content.'
  returned: for the phase containers
  type: raw
spec_remove:
  description:
  - 'Phase containers: CDI specs to remove.'
  returned: for the phase containers
  type: raw
start:
  description:
  - 'Phase slurm: Daemons to start.'
  returned: for the phase slurm
  type: raw
stats:
  description:
  - 'Phase verify: The node''s figures, recorded for AWX where the role passes O(stats_key).'
  returned: for the phase verify
  type: raw
stop:
  description:
  - 'Phase partition: The services that hold the GPUs and are stopped before the change, started again after it
    (those of the node: a unit file or an init script).'
  returned: for the phase partition
  type: raw
subids:
  description:
  - 'Phase containers: Per user without a range: the usermod argv that gives it subordinate ids.'
  returned: for the phase containers
  type: raw
summary:
  description:
  - 'Phase verify: The GPU agents in one list of lines.'
  returned: for the phase verify
  type: raw
sysctl_apply:
  description:
  - 'Phase tuning: Our sysctl file to apply with C(sysctl -p), or null.'
  returned: for the phase tuning
  type: raw
systemd:
  description:
  - 'Phase metrics: Whether systemd runs the host (the timer and node_exporter are started there).'
  returned: for the phase metrics
  type: raw
timeout:
  description:
  - 'Phase maintenance: Seconds to wait for the jobs of the drained node (rocm_maintenance_drain_timeout).'
  returned: for the phase maintenance
  type: raw
unbound:
  description:
  - 'Phase driver: AMD GPUs that amdgpu does not drive (read again after the reboot).'
  returned: for the phase driver
  type: raw
update_grub:
  description:
  - 'Phase tuning: The update-grub command to run after the GRUB drop-in changed or was removed, or null.'
  returned: for the phase tuning
  type: raw
wait:
  description:
  - 'Phase maintenance: Whether upgrade.yml takes this Slurm node through the maintenance: it waits for the jobs
    of the node to end before any role changes it.'
  returned: for the phase maintenance
  type: raw
wanted:
  description:
  - 'Phase driver: Whether this host gets the amdgpu kernel driver.'
  - 'Phase partition: The profile asked for: C(compute) and C(memory), each null where left as it is.'
  returned: for the phases driver, partition
  type: raw
why:
  description:
  - 'Phase maintenance: The decision for this node, in one line (on a maintenance run also one of its notices).'
  returned: for the phase maintenance
  type: raw
why_not:
  description:
  - 'Phase driver: Why it does not, when it does not.'
  returned: for the phase driver
  type: raw
# END generated
'''
