# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What rocm_tuning changes: AMD's host tuning for Instinct nodes as declared state (docs/hardware.md, "Host
tuning"). Per setting, what the node runs and what its files configure (node_probe section `tuning`,
host/tuning_state.py) against the profile: a setting the lab has already (running and configured by its own
files) is left alone and said so; otherwise our own drop-ins. With no profile (`none`) or the role's state
`absent` (playbooks/uninstall.yml), what an earlier run wrote goes: our own files, found by name through the
probe's paths section (an lstat each), never the lab's. Pure.

The settings and where each is documented (the check is the one the source gives):

- NUMA balancing: kernel.numa_balancing = 0; check: cat /proc/sys/kernel/numa_balancing; source: [S1] "Disable NUMA
  auto-balancing", [S2] prerequisites.
- IOMMU: iommu=pt on the kernel line; check: cat /proc/cmdline (dmesg | grep iommu); source: [S1] "GRUB settings"
  (AMD CPUs: iommu=pt; Intel: intel_iommu=on iommu=pt), [S2] "Configure IOMMU settings".
- memlock (RDMA): soft and hard memlock unlimited; check: ulimit -l; source: [S3] (AMD's pages searched give no
  memlock value).
- CPU governor: performance on every CPU; check: cat .../cpufreq/scaling_governor, cpupower frequency-info; source:
  [S4] (the governor ABI; AMD's MI300X page gives C-states, not the governor).

[S1] https://instinct.docs.amd.com/projects/amdgpu-docs/en/latest/system-optimization/mi300x.html
     (source: ROCm/amdgpu-docs docs/system-optimization/mi300x.rst, commit 41afb32)
[S2] https://rocm.docs.amd.com/projects/gpu-cluster-networking/en/latest/how-to/single-node-config.html
     (source: ROCm/gpu-cluster-networking docs/how-to/single-node-config.rst, commit 0d26d8c)
[S3] https://docs.redhat.com/en/documentation/red_hat_enterprise_linux/9/html/configuring_infiniband_and_rdma_networks/
     increasing-the-amount-of-memory-that-users-are-allowed-to-pin-in-the-system_configuring-infiniband-and-rdma-networks
[S4] https://docs.kernel.org/admin-guide/pm/cpufreq.html
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
import shlex

from ansible_collections.gpulab.rocm.plugins.module_utils.host import tuning_state as ts
from ansible_collections.gpulab.rocm.plugins.module_utils.planning.plan_common import Plan, PlanError, file_matches
from ansible_collections.gpulab.rocm.plugins.module_utils.planning.plan_driver import reboot_plan

PHASE = {
    'name': 'tuning',
    'role': 'rocm_tuning',
    'changes_host': True,
    # Plus section 'tuning' where a profile is set, else section 'paths' for our own files (plan_tuning.probe_needs):
    # a run without a profile reads none of the tuning; 'gpus' for whether the host is a container.
    'sections': ('os', 'gpus'),
    'keys': {
        'skip': 'Why no profile applies here (V(rocm_tuning_profile) is V(none), or V(rocm_tuning_state) is '
                'V(absent)), or null; with our files on the host the plan then lists only their removal.',
        'settings': 'Each setting of the profile: C(name), C(wanted), C(running), C(configured) (what the files '
                    'boot or apply, and C(by): the file), C(state) (V(in_effect), V(lab), V(write), V(apply), '
                    'V(reboot_pending), V(not_settable), V(overridden)) and C(why).',
        'files': 'Our drop-ins to write, path to content.',
        'remove': 'Our files to remove: the GRUB drop-in once the lab\'s own files have its arguments; with no '
                  'profile or state V(absent), every file an earlier run wrote (the drop-ins, the governor unit and '
                  'its enablement link, the reboot record).',
        'dirs': 'Folders to make first (C(/etc/default/grub.d) where it is missing).',
        'update_grub': 'The update-grub command to run after the GRUB drop-in changed or was removed, or null.',
        'sysctl_apply': 'Our sysctl file to apply with C(sysctl -p), or null.',
        'governor_service': 'C(started) (the unit is new or not active), C(restarted) (a CPU left performance) or '
                            'null; the unit is enabled either way.',
        'daemon_reload': 'Whether systemd reads its units again (the governor unit was written).',
        'governor_remove': 'Whether the governor unit is stopped and disabled before its file is removed, and '
                           'systemd reads its units again after (systemd runs the host).',
        'reboot': 'C(needed) (kernel arguments configured that the running kernel lacks, or removed from the next '
                  'boot\'s line), C(allowed) (never for a removal), C(through_slurm), C(args), C(reason) and '
                  'C(mark) (the line for C(/run/reboot-required)).',
        'reboot_record': 'What the role writes to its record once it rebooted or marked the reboot (the arguments).',
        'findings': 'What is not in effect on the running node, one line each (rocm_verify shows them as notices).',
        'problems': 'Settings written and applied in this run that are still not in effect (rocm_verify fails on '
                    'them).',
    },
    'read_by_plan': ('findings', 'problems', 'settings', 'skip'),
}

PROFILES = ('none', 'instinct')
STATES = ('present', 'absent')
GOVERNOR = 'performance'
HEADER = '# Managed by gpulab.rocm (role rocm_tuning). Local changes are overwritten.\n'
# A kernel argument: a parameter and an optional value of letters, digits and ._,:/+=- (no quotes, no spaces, no
# shell metacharacters: it lands in a file that update-grub sources as shell).
_ARG_RE = re.compile(r'^[A-Za-z0-9_.-]+(=[A-Za-z0-9_.,:/+=-]+)?\Z')
# A limits.conf domain: '*', a user, @group or %group (no spaces).
_DOMAIN_RE = re.compile(r'^(\*|[@%]?[a-z_][a-z0-9_-]{0,31})\Z')
_GRUB_ASSIGN = re.compile(r'^\s*(?:export\s+)?(GRUB_CMDLINE_LINUX(?:_DEFAULT)?)=(.*)$')
UNIT = ('[Unit]\n'
        'Description=CPU frequency governor performance for ROCm (gpulab.rocm, role rocm_tuning)\n'
        'ConditionPathExists=/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor\n'
        '\n'
        '[Service]\n'
        'Type=oneshot\n'
        'RemainAfterExit=yes\n'
        "ExecStart=/bin/sh -c 'for f in /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor; do "
        "echo %s > \"$f\"; done'\n"
        '\n'
        '[Install]\n'
        'WantedBy=multi-user.target\n' % GOVERNOR)


# Our own files, in the order they go: what a run without a profile looks for (nothing else of the tuning is read
# then), and, where the GRUB drop-in is there, what update-grub's rule reads (as section 'tuning' does).
OWN_PATHS = ts.OWN_FILES + (ts.GOVERNOR_WANTS, ts.REBOOT_RECORD)
GRUB_PATHS = (ts.BOOT_GRUB,) + ts.UPDATE_GRUB
# What each of our files did, for the reason of its removal.
_OWN_WHAT = {
    ts.GRUB_DROPIN: 'our GRUB drop-in (kernel arguments)',
    ts.SYSCTL_FILE: 'our sysctl drop-in (kernel.numa_balancing)',
    ts.LIMITS_FILE: 'our limits drop-in (memlock)',
    ts.GOVERNOR_UNIT: 'our CPU governor unit',
    ts.GOVERNOR_WANTS: 'the governor unit\'s enablement link',
    ts.REBOOT_RECORD: 'our record of a reboot for kernel arguments',
}


def teardown(wanted):
    """Why no profile applies here (the role then only removes what an earlier run wrote), or None."""
    if wanted.get('state', 'present') == 'absent':
        return 'rocm_tuning_state is absent'
    if wanted.get('profile', 'none') == 'none':
        return 'rocm_tuning_profile is none'
    return None


def probe_paths():
    """Our own files: a whole probe describes them (an lstat each), so a host without a profile needs no read of
    its own to find that none of them is there."""
    return list(OWN_PATHS)


def probe_needs(node, wanted, stack, fresh=()):
    """Section 'tuning' where a profile applies. Without one: only our own files (section 'paths'), plus the paths
    of update-grub's rule where the GRUB drop-in is there or not described yet; nothing where a whole probe
    described them and none is there."""
    if teardown(wanted) is None:
        if 'tuning' in (node.get('sections') or []) or 'tuning' in fresh:
            return None
        return {'sections': ['tuning']}
    described = node.get('paths') or {}
    paths = list(OWN_PATHS)
    if ts.GRUB_DROPIN not in described or (described[ts.GRUB_DROPIN] or {}).get('exists') is not False:
        paths += GRUB_PATHS
    missing = [path for path in paths if path not in described]
    return {'sections': ['paths'], 'paths': missing} if missing else None


def has_work(plan, wanted):
    """A reboot to mark (or do) for kernel arguments is work of its own on a run that changes no file."""
    return bool((plan.get('reboot') or {}).get('needed'))


def check(wanted):
    """Every problem of the variables, each with its fix, before any change. Removed (state absent), only the state
    matters: nothing of the profile lands in a file."""
    problems = []
    if wanted.get('state', 'present') not in STATES:
        return ['rocm_tuning: rocm_tuning_state is %r; use one of %s' % (wanted.get('state'), ', '.join(STATES))]
    if wanted.get('state', 'present') == 'absent':
        return []
    if wanted.get('profile') not in PROFILES:
        problems.append('rocm_tuning: rocm_tuning_profile is %r; use one of %s'
                        % (wanted.get('profile'), ', '.join(PROFILES)))
    extra = wanted.get('kernel_args_extra') or []
    if not isinstance(extra, list):
        problems.append('rocm_tuning: rocm_tuning_kernel_args_extra must be a list of kernel arguments')
        extra = []
    bad = [arg for arg in extra if not isinstance(arg, str) or not _ARG_RE.match(arg)]
    if bad:
        problems.append('rocm_tuning: rocm_tuning_kernel_args_extra holds %s, not kernel arguments of the form '
                        'name or name=value (letters, digits and ._,:/+=- only: the value lands in a GRUB file '
                        'that update-grub runs as shell); for example amd_iommu=on'
                        % ', '.join(repr(arg) for arg in bad))
    domain = wanted.get('memlock_domain', '*')
    if not isinstance(domain, str) or not _DOMAIN_RE.match(domain):
        problems.append("rocm_tuning: rocm_tuning_memlock_domain is %r; use '*' (every user) or @group" % (domain,))
    return problems


# --- reading the lab's files ----------------------------------------------------------------------------------

def grub_cmdline(texts):
    """The kernel arguments GRUB boots (GRUB_CMDLINE_LINUX then GRUB_CMDLINE_LINUX_DEFAULT, as update-grub puts
    them on a normal entry) after sourcing /etc/default/grub and then grub.d/*.cfg in order, and which file set
    each variable last: ([args] or None where a line is not plain enough to read, {var: path}, unreadable lines)."""
    values, by, unreadable = {'GRUB_CMDLINE_LINUX': '', 'GRUB_CMDLINE_LINUX_DEFAULT': ''}, {}, []
    order = [ts.GRUB_DEFAULT] + sorted(path for path in texts if path != ts.GRUB_DEFAULT)
    for path in order:
        for number, line in enumerate((texts.get(path) or '').splitlines(), 1):
            match = _GRUB_ASSIGN.match(line)
            if not match or line.lstrip().startswith('#'):
                continue
            name, raw = match.group(1), match.group(2).strip()
            value = _shell_value(raw, values)
            if value is None:
                unreadable.append('%s:%d' % (path, number))
                continue
            values[name], by[name] = value, path
    if unreadable:
        return None, by, unreadable
    return (values['GRUB_CMDLINE_LINUX'] + ' ' + values['GRUB_CMDLINE_LINUX_DEFAULT']).split(), by, []


def _shell_value(raw, values):
    """A shell word of a GRUB defaults file: quoted text and $VAR/${VAR} of the two variables; None for anything
    else (command substitution, other variables)."""
    if '`' in raw or '$(' in raw:
        return None
    try:
        words = shlex.split(raw, comments=True)
    except ValueError:
        return None
    if len(words) > 1:
        return None
    text = words[0] if words else ''
    if raw.startswith("'"):
        return text

    def expand(match):
        name = match.group(1) or match.group(2)
        return values.get(name, '\0')
    text = re.sub(r'\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)', expand, text)
    return None if '\0' in text else text


def sysctl_value(texts, key):
    """(value, path) of the last setting of key in the sysctl files as `sysctl --system` applies them: the
    sysctl.d files by name, then /etc/sysctl.conf; (None, None) where none sets it."""
    names = (key, key.replace('.', '/'))
    found = (None, None)
    order = sorted(path for path in texts if path != ts.SYSCTL_CONF) + [ts.SYSCTL_CONF]
    for path in order:
        for line in (texts.get(path) or '').splitlines():
            line = line.strip()
            if not line or line[0] in '#;' or '=' not in line:
                continue
            name, value = line.split('=', 1)
            if name.strip().lstrip('-') in names:
                found = (value.strip(), path)
    return found


def memlock_lines(texts, domain):
    """({'soft': (value, path), 'hard': (value, path)} for domain, [other domains' memlock lines below unlimited])
    in the order pam_limits reads them (limits.conf, then limits.d by name); a later line wins."""
    found, others = {}, []
    order = [ts.LIMITS_CONF] + sorted(path for path in texts if path != ts.LIMITS_CONF)
    for path in order:
        for line in (texts.get(path) or '').splitlines():
            words = line.split('#', 1)[0].split()
            if len(words) != 4 or words[2] != 'memlock':
                continue
            kinds = ('soft', 'hard') if words[1] == '-' else (words[1],)
            if words[0] == domain:
                for kind in kinds:
                    found[kind] = (words[3], path)
            elif words[3] not in ('unlimited', 'infinity', '-1'):
                others.append('%s: %s' % (path, ' '.join(words)))
    return found, others


# --- the plan ---------------------------------------------------------------------------------------------------

def plan(node, wanted, stack, host=None, previous=None):
    """wanted: state (present|absent), profile (none|instinct), kernel_args_extra [..], memlock_domain ('*' or
    @group), reboot (bool), reboot_through_slurm (bool). host: connection and controller_machine_id (never rebooting
    the control node).

    Returns the Plan (PHASE['keys']); raises PlanError for bad variables before any change."""
    result = Plan('tuning')
    result.update(skip=None, settings=[], files={}, remove=[], dirs=[], update_grub=None, sysctl_apply=None,
                  governor_service=None, daemon_reload=False, governor_remove=False,
                  reboot={'needed': False, 'allowed': False, 'through_slurm': False, 'args': [], 'reason': '',
                          'mark': None},
                  reboot_record=None, findings=[], problems=[])
    problems = check(wanted)
    if problems:
        raise PlanError(' '.join(text.rstrip('.') + '.' for text in problems), problems=problems)
    why = teardown(wanted)
    if why:
        result['skip'] = why
        _teardown(result, node, why)
        return result
    state = node.get('tuning') or {}
    in_container = bool((node.get('gpu_pci') or {}).get('in_container'))
    systemd = bool((node.get('os') or {}).get('systemd', True))
    before = (previous or {})
    _numa(result, state, in_container, before)
    _cmdline(result, node, state, wanted, host or {}, in_container)
    _memlock(result, state, wanted)
    _governor(result, state, in_container, systemd, before)
    if state.get('too_many'):
        result.warn('rocm_tuning read the first %d files of %s only' % (ts.FILES_LIMIT, ', '.join(state['too_many'])))
    return result


def _setting(result, name, wanted, running, configured, by, status, why, finding=None):
    """One setting's decision; a finding (rocm_verify's notice) where the running node does not have it: applied
    now, waiting for a reboot, not settable here, overridden by the lab's file (or as the caller says)."""
    result['settings'].append({'name': name, 'wanted': wanted, 'running': running, 'configured': configured,
                               'by': by, 'state': status, 'why': why})
    if finding is None:
        finding = status in ('apply', 'reboot_pending', 'not_settable', 'overridden')
    if finding:
        result['findings'].append('%s: wanted %s, the running node has %s: %s'
                                  % (name, wanted, running if running not in (None, '') else 'none', why))


def _write(result, state, path, content, what, why):
    """Plan our file where it differs; True when it is written."""
    if file_matches((state.get('files') or {}).get(path), content):
        return False
    result['files'][path] = content
    result.change('write %s (%s)' % (path, what), why)
    return True


def _numa(result, state, in_container, before):
    wanted = '0'
    running = state.get('numa_balancing')
    configured, by = sysctl_value(state.get('sysctl') or {}, 'kernel.numa_balancing')
    name = 'numa_balancing'
    if running is None:
        _setting(result, name, wanted, None, configured, by, 'not_settable',
                 'the kernel has no /proc/sys/kernel/numa_balancing (built without NUMA balancing): nothing to do')
        return
    if by and by != ts.SYSCTL_FILE and configured == wanted and running == wanted:
        _setting(result, name, wanted, running, configured, by, 'lab', 'set by the lab in %s: left as it is' % by)
        return
    content = HEADER + '# NUMA auto-balancing off (AMD Instinct system optimization).\nkernel.numa_balancing = 0\n'
    ours = dict(state.get('sysctl') or {}, **{ts.SYSCTL_FILE: content})
    effective, effective_by = sysctl_value(ours, 'kernel.numa_balancing')
    if effective != wanted:
        _setting(result, name, wanted, running, configured, by, 'overridden',
                 '%s sets kernel.numa_balancing = %s after our file: change it there' % (effective_by, effective))
        result.warn('numa_balancing: %s sets kernel.numa_balancing = %s and is applied after %s, so the role '
                    'does not write it; set it to 0 there (or remove the line)' % (effective_by, effective,
                                                                                   ts.SYSCTL_FILE))
        return
    written = _write(result, state, ts.SYSCTL_FILE, content, 'kernel.numa_balancing = 0',
                     'NUMA auto-balancing is %s' % ('on (%s)' % running if running != '0' else
                                                    'off now but not configured to stay off'))
    if running == wanted:
        _setting(result, name, wanted, running, '0', ts.SYSCTL_FILE, 'write' if written else 'in_effect',
                 'our sysctl file keeps it off at boot' if written else 'set by our sysctl file')
        return
    if in_container:
        _setting(result, name, wanted, running, '0', ts.SYSCTL_FILE, 'not_settable',
                 'a container shares the host kernel\'s setting: written for the host image, not applied here')
        return
    if before.get('sysctl_apply'):
        result['problems'].append('numa_balancing: %s was written and applied with sysctl -p in this run, and '
                                  '/proc/sys/kernel/numa_balancing still reads %s' % (ts.SYSCTL_FILE, running))
    result['sysctl_apply'] = ts.SYSCTL_FILE
    result.change('apply %s (sysctl -p)' % ts.SYSCTL_FILE, 'the running value is %s' % running)
    _setting(result, name, wanted, running, '0', ts.SYSCTL_FILE, 'apply', 'applied with sysctl -p')


def _cmdline(result, node, state, wanted, host, in_container):
    args = ['iommu=pt'] + [arg for arg in wanted.get('kernel_args_extra') or [] if arg != 'iommu=pt']
    running = (state.get('cmdline') or '').split()
    name = 'kernel command line'
    texts = dict((path, text) for path, text in (state.get('grub') or {}).items() if path != ts.GRUB_DROPIN)
    lab, by, unreadable = grub_cmdline(texts)
    missing_running = [arg for arg in args if arg not in running]
    shown_running = ' '.join(arg for arg in args if arg in running) or None
    if unreadable:
        _setting(result, name, ' '.join(args), shown_running, None, None, 'not_settable',
                 'GRUB\'s defaults set the kernel line in a way the role does not read (%s): left alone'
                 % ', '.join(unreadable))
        result.warn('kernel command line: %s assign GRUB_CMDLINE_LINUX(_DEFAULT) with a command or another '
                    'variable, which the role does not evaluate: add %s there yourself'
                    % (', '.join(unreadable), ' '.join(args)))
        return
    lab_by = ', '.join(sorted(set(by.values()))) or None
    if not [arg for arg in args if arg not in lab]:
        _drop_ours(result, state, in_container)
        if not missing_running:
            _setting(result, name, ' '.join(args), shown_running, ' '.join(args), lab_by, 'lab',
                     'set by the lab in %s: left as it is' % lab_by)
            return
    if in_container or not state.get('boot_grub') or not state.get('update_grub'):
        why = ('the host is a container: it runs its host\'s kernel, whose boot loader is not here'
               if in_container else 'the host does not boot through GRUB here (no /boot/grub)'
               if not state.get('boot_grub') else 'update-grub is not installed (grub2-common)')
        if missing_running:
            _setting(result, name, ' '.join(args), shown_running, None, None, 'not_settable',
                     'planned, not applied: ' + why)
            result.warn('kernel command line: %s is planned but not applied: %s; set it where this host\'s '
                        'kernel is booted' % (' '.join(missing_running), why))
        else:
            _setting(result, name, ' '.join(args), shown_running, None, None, 'in_effect',
                     'the running kernel has it; ' + why)
        return
    need = [arg for arg in args if arg not in lab]
    content = (HEADER + '# Kernel arguments for AMD Instinct GPUs, appended to the lab\'s; update-grub reads this '
               'file after /etc/default/grub.\nGRUB_CMDLINE_LINUX_DEFAULT="${GRUB_CMDLINE_LINUX_DEFAULT} %s"\n'
               % ' '.join(need))
    ours = dict(texts, **{ts.GRUB_DROPIN: content})
    booted, _by, _unread = grub_cmdline(ours)
    if booted is not None and [arg for arg in args if arg not in booted]:
        _setting(result, name, ' '.join(args), shown_running, ' '.join(booted), lab_by, 'overridden',
                 'a GRUB drop-in read after ours sets the line again')
        result.warn('kernel command line: a file of /etc/default/grub.d read after %s sets '
                    'GRUB_CMDLINE_LINUX_DEFAULT again without %s: add them there' % (ts.GRUB_DROPIN, ' '.join(args)))
        return
    if not need:
        # The lab's files have them all, the running kernel not yet: its own change waits for a reboot.
        status_by = lab_by
    else:
        if _write(result, state, ts.GRUB_DROPIN, content, ' '.join(need),
                  'the kernel line GRUB boots lacks %s' % ' '.join(need)):
            result['dirs'] = [ts.GRUB_DIR]
            result['update_grub'] = state['update_grub']
            result.change('run %s' % state['update_grub'], 'the GRUB drop-in changed')
        status_by = ts.GRUB_DROPIN
    if not missing_running:
        _setting(result, name, ' '.join(args), shown_running, ' '.join(args), status_by,
                 'write' if result['update_grub'] else 'in_effect',
                 'the running kernel has them; our drop-in keeps them at the next boot' if result['update_grub']
                 else 'set by our GRUB drop-in')
        return
    _reboot(result, node, state, wanted, host, in_container, args, missing_running, status_by)


def _drop_ours(result, state, in_container):
    """The lab's own GRUB files have every argument: our drop-in would only repeat them on the kernel line."""
    if not ((state.get('files') or {}).get(ts.GRUB_DROPIN) or {}).get('exists'):
        return
    result['remove'].append(ts.GRUB_DROPIN)
    result.change('remove %s' % ts.GRUB_DROPIN, 'the lab\'s own GRUB files have its kernel arguments')
    if not in_container and state.get('boot_grub') and state.get('update_grub'):
        result['update_grub'] = state['update_grub']
        result.change('run %s' % state['update_grub'], 'the GRUB drop-in was removed')


def _reboot(result, node, state, wanted, host, in_container, args, missing, by):
    record_text = 'kernel arguments: %s\n' % ' '.join(args)
    result['reboot_record'] = record_text
    record = state.get('reboot_record') or {}
    booted_at = state.get('booted_at')
    if (record.get('content') == record_text and booted_at and record.get('mtime')
            and record['mtime'] < booted_at and not result['update_grub']):
        why = ('the node was rebooted for them (or the reboot was marked) and came back without them: check that '
               'GRUB boots this host and reads /etc/default/grub.d (it is not rebooted again for them)')
        _setting(result, 'kernel command line', ' '.join(args), ' '.join(a for a in args if a not in missing) or None,
                 ' '.join(args), by, 'reboot_pending', why)
        result['problems'].append('kernel command line: wanted %s, the running kernel has none of %s: %s'
                                  % (' '.join(args), ' '.join(missing), why))
        return
    decision = reboot_plan(bool(wanted.get('reboot')), host.get('connection'),
                           (node.get('os') or {}).get('machine_id'), host.get('controller_machine_id'),
                           in_container, bool(wanted.get('reboot_through_slurm')))
    reason = (decision['reason'].replace('the driver changed', 'the kernel command line changed')
              .replace('rocm_driver_reboot is false', 'rocm_tuning_reboot is false'))
    result['reboot'] = {'needed': True, 'allowed': decision['allowed'], 'through_slurm': decision['through_slurm'],
                        'args': missing, 'reason': reason,
                        'mark': '*** System restart required (kernel arguments: %s) ***\n' % ' '.join(missing)}
    # Marked (or rebooted for) in this boot already, by an earlier run: still needed (a maintenance run reboots it
    # through Slurm), no change of this run.
    marked = (record.get('content') == record_text and booted_at and record.get('mtime')
              and record['mtime'] >= booted_at)
    if not result['update_grub'] and not marked:
        result.change('reboot for %s (or mark the reboot)' % ' '.join(missing),
                      'GRUB boots them and the running kernel lacks them')
    _setting(result, 'kernel command line', ' '.join(args), ' '.join(a for a in args if a not in missing) or None,
             ' '.join(args), by, 'reboot_pending', 'reboot pending: ' + reason)


def _memlock(result, state, wanted):
    domain = wanted.get('memlock_domain', '*')
    name = 'memlock'
    running = state.get('memlock') or {}
    shown = ('soft %s, hard %s (the probe\'s own root session)' % (running.get('soft'), running.get('hard'))
             if running else None)
    texts = dict((path, text) for path, text in (state.get('limits') or {}).items() if path != ts.LIMITS_FILE)
    lab, others = memlock_lines(texts, domain)
    if others:
        result.warn('memlock: lines for other users or groups set a lower limit, which pam_limits prefers to '
                    '%r for them: %s' % (domain, '; '.join(others[:5])))
    unlimited = ('unlimited', 'infinity', '-1')
    if all((lab.get(kind) or (None,))[0] in unlimited for kind in ('soft', 'hard')):
        by = ', '.join(sorted(set(lab[kind][1] for kind in ('soft', 'hard'))))
        _setting(result, name, 'unlimited for %s' % domain, shown, 'unlimited', by, 'lab',
                 'set by the lab in %s: left as it is' % by)
        return
    content = (HEADER + '# Locked memory for RDMA (RCCL over InfiniBand/RoCE) for %s; pam_limits applies it at the '
               'next login.\n%s soft memlock unlimited\n%s hard memlock unlimited\n' % (domain, domain, domain))
    written = _write(result, state, ts.LIMITS_FILE, content, 'memlock unlimited for %s' % domain,
                     'the lab\'s limits give %s' % (', '.join('%s %s' % (kind, lab[kind][0]) for kind in lab)
                                                    or 'no memlock line (the kernel default, 8 MiB)'))
    _setting(result, name, 'unlimited for %s' % domain, shown, 'unlimited', ts.LIMITS_FILE,
             'write' if written else 'in_effect',
             'new logins get it (pam_limits); running sessions and services keep theirs' if written
             else 'set by our limits file (new logins)',
             # The probe runs as root, to whom limits.conf's '*' and group lines do not apply (limits.conf(5)):
             # its own limit says nothing of the users'; ulimit -l in a user's new login is the check.
             finding=False)


def _governor(result, state, in_container, systemd, before):
    name = 'cpu governor'
    cpufreq = state.get('cpufreq') or {}
    governors = cpufreq.get('governors') or {}
    running = ', '.join('%s on %d CPU(s)' % item for item in sorted(governors.items())) or None
    unit = (state.get('files') or {}).get(ts.GOVERNOR_UNIT) or {}
    if not cpufreq.get('present') or in_container:
        why = ('a container reads its host\'s CPUs read-only' if in_container
               else 'no cpufreq under sysfs (a VM or container: the hypervisor owns the clocks)')
        _setting(result, name, GOVERNOR, running, None, None, 'not_settable', 'the governor is not settable here: %s' % why)
        return
    if GOVERNOR not in (cpufreq.get('available') or [GOVERNOR]):
        _setting(result, name, GOVERNOR, running, None, None, 'not_settable',
                 'the cpufreq driver offers %s, not %s' % (', '.join(cpufreq['available']), GOVERNOR))
        return
    all_set = set(governors) == {GOVERNOR}
    if all_set and not unit.get('exists'):
        _setting(result, name, GOVERNOR, running, None, 'the lab', 'lab',
                 'every CPU runs performance already (kept by the lab): left as it is')
        return
    if not systemd:
        _setting(result, name, GOVERNOR, running, None, None, 'not_settable',
                 'systemd does not run this host: the governor unit cannot be enabled')
        return
    if _write(result, state, ts.GOVERNOR_UNIT, UNIT, 'sets performance on every CPU at boot',
              'a CPU runs %s' % running if not all_set else 'it differs'):
        result['daemon_reload'] = True
    if not state.get('unit_enabled') or result['daemon_reload']:
        result['governor_service'] = 'started'
        if not result['daemon_reload']:
            result.change('enable and start %s' % ts.GOVERNOR_UNIT_NAME, 'it is not enabled')
    if not all_set:
        if before.get('governor_service'):
            result['problems'].append('cpu governor: %s ran in this run and the CPUs still run %s'
                                      % (ts.GOVERNOR_UNIT_NAME, running))
        if result['governor_service'] != 'started':
            result['governor_service'] = 'restarted'
            result.change('restart %s' % ts.GOVERNOR_UNIT_NAME, 'the CPUs run %s' % running)
    _setting(result, name, GOVERNOR, running, GOVERNOR, ts.GOVERNOR_UNIT,
             'in_effect' if all_set and not result['governor_service'] else 'write',
             'set by our unit' if all_set and not result['governor_service'] else 'our unit sets it now and at boot')


# --- no profile here: what an earlier run wrote goes ------------------------------------------------------------

def _teardown(result, node, why):
    """Our own files (found by name: the lab's are never ours) are removed, with the governor unit stopped and
    disabled first where systemd runs, and update-grub where the GRUB drop-in goes and GRUB boots the host. What
    the running kernel and sessions took from them is not restored: the role does not know what the lab had before,
    so the notices say what stays until the next boot instead of guessing a value."""
    paths = node.get('paths') or {}
    found = []
    for path in OWN_PATHS:
        info = paths.get(path) or {}
        if info.get('error'):
            raise PlanError('rocm_tuning: the probe could not read %s (%s): whether it is there is not known. '
                            'Nothing was changed.' % (path, info['error']))
        if not info.get('exists'):
            continue
        if info.get('type') not in ('file', 'symlink'):
            raise PlanError('rocm_tuning: %s is a %s, not the file the role wrote: root does not remove it. Remove '
                            'it yourself. Nothing was changed.' % (path, info.get('type')))
        found.append(path)
    if not found:
        return
    systemd = bool((node.get('os') or {}).get('systemd', True))
    if ts.GOVERNOR_UNIT in found and systemd:
        result['governor_remove'] = True
        result.change('stop and disable %s' % ts.GOVERNOR_UNIT_NAME, '%s: its unit file goes' % why)
    result['remove'] = found
    for path in found:
        result.change('remove %s' % path, '%s: %s, written by an earlier run' % (why, _OWN_WHAT[path]))
    if ts.GRUB_DROPIN in found:
        _grub_teardown(result, node, paths, why)
    if ts.SYSCTL_FILE in found:
        result.warn('numa_balancing: %s goes, and the running kernel keeps the value it has now (0 where our file '
                    'applied it) until the next boot, which takes the lab\'s files or the kernel\'s default; the role '
                    'does not guess what to restore (sysctl -w kernel.numa_balancing=1 turns it back on now)'
                    % ts.SYSCTL_FILE)
    if ts.LIMITS_FILE in found:
        result.warn('memlock: %s goes; sessions and services started before keep their limit, new logins get the '
                    'lab\'s' % ts.LIMITS_FILE)
    if ts.GOVERNOR_UNIT in found:
        result.warn('cpu governor: %s goes; the CPUs keep the governor they run now until the next boot (or until '
                    'someone sets another), then the cpufreq driver\'s default' % ts.GOVERNOR_UNIT_NAME)


def _grub_teardown(result, node, paths, why):
    """The GRUB drop-in goes: update-grub by the rules of writing it (GRUB boots the host, never a container), and
    the arguments it added stay on the running kernel until the next boot, so that reboot is marked, never done
    (a removal is no reason to stop a node's jobs, whatever rocm_tuning_reboot says)."""
    in_container = bool((node.get('gpu_pci') or {}).get('in_container'))
    boot_grub = (paths.get(ts.BOOT_GRUB) or {}).get('type') == 'directory'
    # As section 'tuning' finds it (os.path.isfile): the script, or a link to it.
    update_grub = next((path for path in ts.UPDATE_GRUB if (paths.get(path) or {}).get('type') in ('file', 'symlink')),
                       None)
    if in_container or not boot_grub or not update_grub:
        why_not = ('the host is a container: it runs its host\'s kernel, whose boot loader is not here'
                   if in_container else 'the host does not boot through GRUB here (no /boot/grub)'
                   if not boot_grub else 'update-grub is not installed (grub2-common)')
        result.warn('kernel command line: %s goes and GRUB\'s configuration is not regenerated here (%s); where '
                    'this host\'s kernel boots, run update-grub' % (ts.GRUB_DROPIN, why_not))
        return
    result['update_grub'] = update_grub
    result.change('run %s' % update_grub, 'the GRUB drop-in was removed')
    reason = ('%s: the kernel arguments of %s leave the kernel line at the next boot and the running kernel keeps '
              'them until then; a removal never reboots the node (whatever rocm_tuning_reboot says): reboot it '
              'yourself when that is right' % (why, ts.GRUB_DROPIN))
    result['reboot'] = {'needed': True, 'allowed': False, 'through_slurm': False, 'args': [], 'reason': reason,
                        'mark': '*** System restart required (kernel arguments removed: %s) ***\n' % ts.GRUB_DROPIN}
    result.warn('kernel command line: reboot pending: ' + reason)
