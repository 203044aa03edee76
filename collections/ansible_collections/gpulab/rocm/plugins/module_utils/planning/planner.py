# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The planner: the wanted state of one phase plus the node's probe gives the phase's plan. Pure; every decision of
the roles lives in the phase modules named here, and gpulab.rocm.plan is its only caller in the roles."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpulab.rocm.plugins.module_utils.planning import fleet_report, plan_access, plan_containers, plan_driver, plan_env, plan_health, plan_maintenance, plan_metrics, plan_modules, plan_repo, plan_sdk, plan_slurm, plan_validate, plan_verify, plan_preflight as preflight
from ansible_collections.gpulab.rocm.plugins.module_utils.planning.plan_common import PlanError

CHANGING = ('repo', 'driver', 'sdk', 'access', 'env', 'modules', 'containers', 'health', 'metrics', 'slurm_node', 'slurm')

# The contract between the planner and the roles (docs/plan-contract.md): per phase, the probe sections it reads
# (a phase whose sections the node lacks gets them probed first) and the keys of its result that a role may read,
# each with its line of documentation. The plan module's RETURN is generated from it
# (tests/tools/plan_return.py) and tests/unit/.../test_plan_contract.py holds the roles to it.
COMMON_KEYS = {
    'phase': 'The phase planned.',
    'changes': 'What the phase changes, each as C(change) and C(reason); empty when the host is converged.',
    'notices': ('Things worth knowing that change nothing, shown as warnings naming the host (by the gate, or by '
                'a plan outside a plan pass for what is new); their own key, as Ansible keeps C(warnings) for its '
                'own.'),
    'stack': 'The stack-wide inputs, with their defaults applied.',
    'msg': 'The changes in one line.',
    'planned_in': 'V(plan pass) when the plan is the one the plan pass computed from the same inputs (no reading of '
                  'the host since); absent when it was planned in this call.',
    'refused': "Only in the plan pass: the phase's problems, kept for the gate (the other keys are then absent).",
}
CONTRACT = {
    'preflight': {
        'sections': ('os', 'packages', 'apt', 'users', 'disk', 'firmware', 'gpus'),
        'keys': {'problems': 'Why the host is not fit for the release (the gate lists them); empty when it is.'},
        # The key whose entries stop the host at the gate (other phases refuse by raising PlanError).
        'gate': 'problems',
    },
    'repo': {
        'sections': ('os', 'packages', 'apt', 'files', 'gpus'),
        'keys': {
            'apply': 'V(present) (install key, sources, pin), V(absent) (remove them) or V(none).',
            'contents': 'The sources and pin files to write, path to content.',
            'remove': 'Paths to remove (old sources, the key when absent).',
            'refresh_scope': "V(sources) (only the lists of the ROCm sources) or V(all) (every list once, where apt has none "
                             'yet and the archive answers).',
        },
    },
    'driver': {
        'sections': ('os', 'packages', 'apt', 'gpus'),
        'keys': {
            'wanted': 'Whether this host gets the amdgpu kernel driver.',
            'why_not': 'Why it does not, when it does not.',
            'install': 'Packages to install (amdgpu-dkms and the kernel headers); empty when in place.',
            'reboot': 'C(allowed) (whether the role may reboot this host) and C(reason).',
            'unbound': 'AMD GPUs that amdgpu does not drive (read again after the reboot).',
            'reboot_pending': 'The installed driver is not the loaded one and no reboot was marked (a run killed '
                              'between the install and its reboot step): reboot or mark it now.',
        },
    },
    'sdk': {
        'sections': ('os', 'packages', 'apt', 'alternatives', 'gpus'),
        'keys': {
            'repair': 'Whether an interrupted dpkg run must be finished first.',
            'refresh_lists': "Whether the distribution's lists are refreshed before asking apt.",
            'query': 'Package names to ask apt about (its candidates decide the package change).',
            'orphan_check': 'Whether apt autoremove is read before purging the distribution packages.',
            'packages': 'The package change once the candidates are known: install, prepurge, purge, download_first, '
                        'unpublished; null before.',
            'refresh_after': 'Probe sections to read again after the package change.',
            'purge_orphans': 'Dependencies only the purged distribution packages needed, to remove.',
            'alternative': 'The release /opt/rocm must point at now, or null.',
            'set_alternative': 'The release /opt/rocm is set to after a package change (side by side), or null.',
            'allow_held': 'Whether apt may change held packages (rocm_sdk_hold owns the holds).',
            'holds': 'Package name to V(hold) for the holds to set.',
        },
    },
    'access': {
        'sections': ('files', 'users'),
        'keys': {
            'create_groups': 'GPU groups to create.',
            'memberships': 'User to the groups to add them to.',
            'files': 'The whole new /etc/adduser.conf by its path, where it changes (written in the same module run as '
                     'the groups).',
        },
    },
    'env': {
        # Plus the users' dotfiles and the MIOpen folder (plan_env.probe_needs); 'os' for whether sudo is there.
        'sections': ('os', 'files', 'users', 'ldconfig', 'gpus'),
        'keys': {
            'files': 'Root-owned files to write, path to content (profile.d, ld.so.conf.d).',
            'remove': 'Root-owned files to remove.',
            'ldconfig': 'Whether the linker cache is rebuilt.',
            'miopen_dir': 'The shared MIOpen folder to make, or null.',
            'bashrc': "User to the block of their ~/.bashrc (null: remove it), written as the user.",
            'become_method': 'How the tasks become each user to write their file: V(ansible.builtin.sudo) where the '
                             'host has sudo, else V(ansible.builtin.su).',
        },
    },
    'modules': {
        # Plus the modulefile folders (plan_modules.probe_needs).
        'sections': ('os', 'packages', 'gpus', 'modules'),
        'keys': {
            'install': 'Distribution packages to install for the modules tool (Environment Modules when asked).',
            'dirs': 'Modulefile folders to make.',
            'files': 'Modulefiles and the default marker to write, path to content.',
            'remove': 'Modulefiles of this collection to remove (releases no longer installed).',
        },
    },
    'containers': {
        # Plus 'containers', read only where the role is enabled and an AMD GPU is there (plan_containers).
        'sections': ('os', 'packages', 'users', 'gpus'),
        'keys': {
            'install': 'Engine and check packages to install.',
            'subids': 'Per user without a range: the usermod argv that gives it subordinate ids.',
            'dirs': 'Folders of the CDI spec and daemon.json to make.',
            'spec': 'The CDI spec to write, path to content.',
            'spec_remove': 'CDI specs to remove.',
            'daemon_json': "Docker's merged daemon.json to write, path to content.",
            'daemon_json_mode': 'The mode daemon.json keeps.',
            'restart_docker': 'Whether dockerd is restarted to read the CDI setting.',
            'check': 'The container check: engines, users, cases, gids, image, busybox, become_method (sudo or su).',
        },
    },
    'health': {
        # Plus 'paths' (plan_health.probe_needs): the installed program's files.
        'sections': ('os', 'gpus', 'health'),
        'keys': {
            'folders': 'Root-owned folders of the program to make.',
            'library': "The program's code to write (the collection's module_utils it runs), path to content.",
            'files': 'The expected values to write (the data file), path to content.',
            'scripts': 'The entry scripts to write (mode 0755), path to content.',
        },
    },
    'metrics': {
        'sections': ('os', 'packages', 'gpus'),
        'keys': {
            'install': 'Packages to install (prometheus-node-exporter) where the host lacks them.',
            'dirs': "Folders of the writer, its configuration, the textfile and node_exporter's drop-in.",
            'library': "The writer's code (the collection's module_utils it runs), path to content.",
            'files': "The writer's configuration, the units and the drop-in, path to content.",
            'executables': "The writer's command (mode 0755), path to content.",
            'systemd': 'Whether systemd runs the host (the timer and node_exporter are started there).',
            'services': 'The units to enable and start where systemd runs (the timer, node_exporter, AMD\'s exporter).',
            'amd_exporter_query': "Packages to ask apt about (AMD's amdgpu-exporter, before it is installed).",
        },
    },
    'verify': {
        'sections': ('os', 'gpus', 'tools', 'versions'),
        'keys': {
            'problems': 'What does not work on the node as planned (the role fails on them).',
            'stats': "The node's figures, recorded for AWX where the role passes O(stats_key).",
            'summary': 'The GPU agents in one list of lines.',
        },
        'read_by_plan': ('stats',),
    },
    'report': {
        'sections': ('os', 'gpus', 'tools', 'versions', 'slurm', 'health'),
        'keys': {'record': "This host's record of the fleet report."},
    },
    'validate': {
        # The benchmarks look at the GPU themselves: no probe section.
        'sections': (),
        'keys': {
            'interpreter': 'The Python that runs gpu_bench.py (the venv\'s when PyTorch is installed there).',
            'args': "gpu_bench.py's arguments after the script and --output (benchmarks and their settings).",
            'wheel_tag': "PyTorch's wheel index name for the release (V(rocmX.Y), or V(rocmX.Y.Z) for a point "
                         'release it publishes on its own).',
        },
    },
    'maintenance': {
        # Planned last in the pass: it reads the other phases' changes there (module_utils/planning/plan_maintenance.py).
        # Plus 'slurm' and 'slurm_state' where it is on for a host of the Slurm group (plan_maintenance.probe_needs):
        # other runs read no Slurm state for it.
        'sections': ('os',),
        'keys': {
            'node': "The host's Slurm node name, or null where it is not maintained.",
            'drain': 'Whether the play drains the node (not when it is drained already).',
            'wait': 'Whether upgrade.yml takes this Slurm node through the maintenance: it waits for the jobs of the '
                    'node to end before any role changes it.',
            'resume': 'Whether the node is resumed after its health check passes (never an admin\'s drain).',
            'reboot': 'Whether the play reboots the node through Slurm (scontrol reboot ASAP) for a driver change.',
            'reason': 'The drain reason (it starts with V(gpulab: maintenance:)).',
            'timeout': 'Seconds to wait for the jobs of the drained node (rocm_maintenance_drain_timeout).',
            'why': 'The decision for this node, in one line (on a maintenance run also one of its notices).',
        },
        # Keys no role reads: the planner or the plan action uses them itself.
        'read_by_plan': ('why',),
    },
    'slurm_node': {
        'sections': ('os', 'packages', 'gpus', 'slurm'),
        'keys': {
            'packages': 'Slurm and munge packages to install on this host.',
            'node': "This host's Slurm record (its GPUs as GRES), for the slurm phase of every host.",
        },
    },
    'slurm': {
        'sections': ('os', 'slurm'),
        'keys': {
            'files': 'Slurm files to write, path to content.',
            'remove': 'Slurm files to remove.',
            'munge_key': 'What to do with the munge key.',
            'reconfigure': 'Whether scontrol reconfigure runs.',
            'restart': 'Daemons to restart.',
            'start': 'Daemons to start.',
            'dropin': "For slurmd's systemd drop-in that waits for /dev/kfd and the render nodes (it is among C(files)): "
                      'C(folder) (make its folder) and C(reload) (reload systemd), or null when it stays.',
        },
    },
}
PHASES = tuple(CONTRACT)
SECTIONS = dict((phase, entry['sections']) for phase, entry in CONTRACT.items())
# Probe sections that describe what packages put on the host: read again when 'packages' was read after them (a
# package change of rocm_sdk after the plan pass), so the later phase plans from the releases now installed.
DERIVED_FROM_PACKAGES = ('modules',)


def refusals(phase, plan):
    """The problems in a plan that stop the host at the gate (a phase refuses by raising PlanError, or, like
    preflight, by listing its problems)."""
    key = CONTRACT[phase].get('gate')
    return list(plan.get(key) or []) if key else []


def has_work(phase, plan, wanted):
    """Whether the role's tasks after its plan have anything to do on this run: a change, or a check it runs every
    time (what each role's tasks/main.yml acts on; its notices the gate shows). A play with a plan pass skips a role
    with no work whose phases before it change nothing (plan_pass.applies)."""
    if plan.get('changes'):
        return True
    if phase == 'driver':
        # Why a host gets no driver is said when the role runs, not on every converged run.
        return bool(plan.get('install')) or bool(plan.get('reboot_pending'))
    if phase == 'containers':
        return bool((plan.get('check') or {}).get('engines'))
    if phase == 'health':
        return bool(wanted.get('run'))
    if phase == 'maintenance':
        return any(plan.get(key) for key in ('drain', 'wait', 'reboot', 'resume'))
    if phase == 'metrics':
        # It rewrites its textfile on every run where it is on.
        return bool(wanted.get('enabled'))
    # verify reports on every run.
    return phase == 'verify'


def probe_paths():
    """The paths a whole probe describes for the phases that compare files whatever their variables say (the health
    check's program), so that their plans in the plan pass need no second read of the host."""
    return plan_health.compared_paths()


def probe_needs(phase, node, wanted, stack, fresh=()):
    """Extra node_probe arguments a phase needs beyond what the node holds, or None.

    fresh: the sections read during this planning call (they are current). The report reads Slurm's view of a host
    that has Slurm anew (it is live: a Slurm play of the same run may have changed it), and nowhere else.
    """
    missing = [section for section in SECTIONS[phase] if section not in (node.get('sections') or [])]
    read_at = node.get('read_at') or {}
    missing += [section for section in DERIVED_FROM_PACKAGES
                if section in SECTIONS[phase] and section not in missing and section not in fresh
                and read_at.get('packages', 0) > read_at.get(section, 0)]
    if phase == 'report' and ('slurm' in missing or ((node.get('slurm') or {}).get('binaries') or {}).get('scontrol')):
        missing += [section for section in ('slurm', 'slurm_state') if section not in fresh and section not in missing]
    extra = None
    if phase == 'env' and wanted.get('state') != 'absent':
        extra = plan_env.probe_needs(node, wanted, stack)
    elif phase == 'containers':
        extra = plan_containers.probe_needs(node, wanted, stack)
    elif phase == 'modules':
        extra = plan_modules.probe_needs(node, wanted, stack)
    elif phase == 'health':
        extra = plan_health.probe_needs(node, wanted, stack)
    elif phase == 'slurm':
        extra = plan_slurm.probe_needs(node, wanted, stack)
    elif phase == 'maintenance':
        extra = plan_maintenance.probe_needs(node, wanted, fresh)
    if not missing and not extra:
        return None
    args = {'sections': missing}
    if extra:
        args['sections'] = sorted(set(missing + extra['sections']))
        args.update((key, value) for key, value in extra.items() if key != 'sections')
    return args


def plan(phase, node, wanted, stack, host=None, previous=None):
    """The plan of one phase. host: {'name', 'connection', 'controller_machine_id', 'check_mode'} from the action;
    previous: this phase's last plan in this run (a second look at the host continues from it), or None.

    Raises PlanError when the wanted state is invalid (the message names the variable and the fix; what was
    changed is for the caller to say: the gate says nothing was, a refusal at a phase's own turn what was).
    """
    host = host or {}
    euid = (node.get('os') or {}).get('euid')
    if phase in CHANGING and euid not in (0, None):
        raise PlanError('%s: this run is not root on the host (uid %s): the roles change system files, packages '
                        'and groups. Run with become: true (the playbooks set it; check that the remote user may '
                        'sudo) or as root.' % (phase, euid))
    if phase == 'preflight':
        return preflight.plan(node, wanted, stack)
    if phase == 'repo':
        return plan_repo.plan(node, wanted, stack)
    if phase == 'driver':
        return plan_driver.plan(node, dict(wanted, connection=host.get('connection')), stack,
                                {'machine_id': host.get('controller_machine_id')})
    if phase == 'sdk':
        return plan_sdk.plan(node, wanted, stack, previous=previous, check_mode=host.get('check_mode'))
    if phase == 'access':
        return plan_access.plan(node, wanted, stack)
    if phase == 'env':
        return plan_env.plan(node, wanted, stack)
    if phase == 'modules':
        return plan_modules.plan(node, wanted, stack)
    if phase == 'containers':
        return plan_containers.plan(node, wanted, stack)
    if phase == 'health':
        return plan_health.plan(node, wanted, stack)
    if phase == 'verify':
        return plan_verify.plan(node, wanted, stack, host.get('name'))
    if phase == 'validate':
        return plan_validate.plan(node, wanted, stack)
    if phase == 'maintenance':
        return plan_maintenance.plan(node, wanted, stack)
    if phase == 'slurm_node':
        return plan_slurm.node_record(node, wanted, stack)
    if phase == 'slurm':
        return plan_slurm.plan(node, wanted, stack)
    if phase == 'metrics':
        return plan_metrics.plan(node, wanted, stack)
    if phase == 'report':
        expected = stack['expected_gpu_count']
        version = wanted.get('expected_rocm_version') or stack['version']
        return {'phase': 'report', 'changes': [], 'notices': [],
                'record': fleet_report.host_record(node, host.get('name'), expected, version)}
    raise PlanError('unknown phase %r; one of %s' % (phase, ', '.join(PHASES)))
