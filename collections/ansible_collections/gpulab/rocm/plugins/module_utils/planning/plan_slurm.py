# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What rocm_slurm changes: the GPUs of each node as Slurm GRES (gres.conf), slurm.conf's GresTypes and each node's
Gres=, cgroup.conf's ConstrainDevices, and, for a lab without Slurm, Debian's slurmctld, slurmd and munge with one
munge key. Two phases:

- slurm_node: one host's record from its probe (its GPUs as GRES lines, its Slurm name, address and CPUs, the
  packages it lacks, its munge key's checksum). Changes nothing.
- slurm: the files, key, daemons and reconfiguration of one host, from its probe and every node's record.

Every value written is checked here; docs/slurm.md says which files and lines the role owns. Pure."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpulab.rocm.plugins.module_utils.parsers import slurm_conf as sc
from ansible_collections.gpulab.rocm.plugins.module_utils.planning import slurm_files as sf
from ansible_collections.gpulab.rocm.plugins.module_utils.planning.plan_common import Plan, PlanError, sha1

# The phase's contract (docs/plan-contract.md): the probe sections it reads, the keys of its result that its
# role reads, and how the plan pass treats it; planner.REGISTRY collects it.
PHASE = {
    'name': 'slurm',
    'role': 'rocm_slurm',
    'changes_host': True,
    'sections': ('os', 'slurm'),
    'keys': {
        'files': 'Slurm files to write, path to content.',
        'remove': 'Slurm files to remove.',
        'munge_key': 'What to do with the munge key.',
        'reconfigure': 'Whether scontrol reconfigure runs.',
        'restart': 'Daemons to restart.',
        'slurmd_first': ('Whether this slurmd restarts before slurmctld: its own GPU count rises (slurmctld ignores a '
                         'count above the configured one, and drains a node that reports fewer).'),
        'start': 'Daemons to start.',
        'dropin': "For slurmd's systemd drop-in that waits for /dev/kfd and the render nodes (it is among C(files)): "
                  'C(folder) (make its folder) and C(reload) (reload systemd), or null when it stays.',
    },
}


DEFAULTS_FILE = '/etc/default/slurmd'
MUNGE_KEY = '/etc/munge/munge.key'
CONTROLLER_PACKAGES = ['munge', 'slurmctld', 'slurm-client']
NODE_PACKAGES = ['munge', 'slurmd', 'slurm-client']
HEALTH_NODE_STATES = ('ALLOC', 'ANY', 'CYCLE', 'IDLE', 'MIXED', 'NONDRAINED_IDLE')
# The same check as Slurm's Prolog (rocm_slurm_health_prolog): slurm.conf's Prolog is this program, PrologFlags
# holds Alloc (every node of an allocation checks before the job starts, not only the batch host) and
# SchedulerParameters holds nohold_on_prolog_fail (the refused job is requeued to run elsewhere, not held).
PROLOG_PROGRAM = '/usr/sbin/gpulab-slurm-prolog'
DROPIN_DIR = '/etc/systemd/system/slurmd.service.d'
DROPIN = DROPIN_DIR + '/gpulab-gpus.conf'
# slurmd must not register before amdgpu made /dev/kfd and the render nodes (gres.conf names them): wait up to a
# minute for them after boot, then start anyway (the health check drains a node whose GPUs did not come up).
DROPIN_TEXT = ('# Managed by gpulab.rocm (role rocm_slurm): slurmd waits for /dev/kfd and the GPUs\' render nodes.\n'
               '[Unit]\nAfter=systemd-modules-load.service systemd-udev-settle.service\n\n[Service]\n'
               'ExecStartPre=-/usr/sbin/gpulab-gpu-health --wait-devices 60\nTimeoutStartSec=180\n')
_CLUSTER_NAME_RE = re.compile(r'^[a-z0-9][a-z0-9_-]{0,39}\Z')
_PARTITION_RE = re.compile(r'^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}\Z')


def check_cluster(wanted):
    problems = []
    if not _CLUSTER_NAME_RE.match(str(wanted.get('cluster_name') or '')):
        problems.append('rocm_slurm_cluster_name must be lower case letters, digits, "_" and "-" (at most 40), got %r'
                        % (wanted.get('cluster_name'),))
    if not _PARTITION_RE.match(str(wanted.get('partition') or '')):
        problems.append('rocm_slurm_partition must be a partition name (letters, digits, "_", "." and "-"), got %r'
                        % (wanted.get('partition'),))
    for key in ('slurmctld_port', 'slurmd_port'):
        if not sf.is_port(wanted.get(key)):
            problems.append('rocm_slurm_%s must be a TCP port (1-65535), got %r' % (key, wanted.get(key)))
    if sf.flag(wanted.get('health_check')):
        if not _is_whole(wanted.get('health_interval'), 1):
            problems.append('rocm_slurm_health_interval must be seconds (1 or more), got %r'
                            % (wanted.get('health_interval'),))
        states = str(wanted.get('health_node_state') or '').upper().split(',')
        if not states or [state for state in states if state not in HEALTH_NODE_STATES]:
            problems.append('rocm_slurm_health_node_state must be one or more of %s (comma separated), got %r'
                            % (', '.join(HEALTH_NODE_STATES), wanted.get('health_node_state')))
    program = wanted.get('reboot_program') or ''
    if program and not (isinstance(program, str) and program.startswith('/') and sc.VALUE_RE.match(program)):
        problems.append('rocm_slurm_reboot_program must be an absolute path without spaces, "#" or quotes (slurm.conf '
                        'RebootProgram, e.g. /usr/sbin/reboot), or empty for none, got %r' % (program,))
    extra = wanted.get('conf_extra') or {}
    if not isinstance(extra, dict):
        problems.append('rocm_slurm_conf_extra must be a dict of slurm.conf key: value')
        extra = {}
    for key, value in sorted(extra.items(), key=lambda item: str(item[0])):
        if not sc.KEY_RE.match(str(key)) or str(key).lower() in sf.OWN_KEYS:
            problems.append('rocm_slurm_conf_extra: %r is not a slurm.conf key the role leaves to you (letters and '
                            'digits; not one of the keys it writes itself)' % (key,))
        if not sc.VALUE_RE.match(sf.text_value(value)):
            problems.append('rocm_slurm_conf_extra: the value of %s must be one word without "#" or quotes, got %r'
                            % (key, value))
    return problems


def _is_whole(value, least):
    if isinstance(value, bool):
        return False
    try:
        return int(value) >= least
    except (TypeError, ValueError):
        return False


def prolog_lines(lines, on):
    """slurm.conf's lines with the prolog's settings (owned lines before the first NodeName line where new; Alloc
    and nohold_on_prolog_fail added to the lab's own PrologFlags and SchedulerParameters, their other words kept).
    Off: the owned lines removed (a word added to a lab's line stays). PlanError on a Prolog that is not ours: Slurm
    runs one Prolog, and the role does not replace the lab's."""
    out, seen, new = [], set(), []
    wanted = (('prolog', 'Prolog', [PROLOG_PROGRAM], None), ('prologflags', 'PrologFlags', ['Alloc'], 'contain'),
              ('schedulerparameters', 'SchedulerParameters', ['nohold_on_prolog_fail'], None))
    for index, line in enumerate(lines):
        words, comment = sc.split_line(line)
        pairs = sc.words_to_dict(words)
        key = pairs[0][0].lower() if pairs else ''
        entry = [item for item in wanted if item[0] == key]
        if entry and not on:
            if comment.strip() == sf.OWNED_LINE.strip():
                continue
        elif entry:
            seen.add(key)
            _key, name, (word,), implied = entry[0]
            items = [item for item in (pairs[0][1] or '').split(',') if item]
            if key == 'prolog' and items != [word]:
                raise PlanError('rocm_slurm: slurm.conf line %d sets Prolog=%s, and rocm_slurm_health_prolog needs '
                                'Prolog=%s: Slurm runs one Prolog (or a glob), and the role does not replace yours. '
                                'Call %s from your prolog and set rocm_slurm_health_prolog: false, or remove your '
                                'Prolog line. Nothing was changed.' % (index + 1, pairs[0][1], word, word))
            present = [item.lower() for item in items]
            if word.lower() not in present and implied not in present:
                line = ' '.join(['%s=%s' % (name, ','.join(items + [word]))] + words[1:]) + (
                    ' ' + comment if comment else '')
        out.append(line)
    if on:
        new = ['%s=%s%s' % (name, word, sf.OWNED_LINE) for key, name, (word,), _implied in wanted if key not in seen]
    if new:
        at = next((index for index, line in enumerate(out)
                   if (sc.words_to_dict(sc.split_line(line)[0]) or [('', '')])[0][0].lower() == 'nodename'), len(out))
        out[at:at] = new
    return out


def probe_needs(node, wanted, stack, fresh=()):
    """On a compute node: slurmd's drop-in and whether systemd runs (it is reloaded after the drop-in changes)."""
    if not sf.flag(wanted.get('compute')):
        return None
    paths = [DROPIN_DIR, DROPIN, '/run/systemd/system', sf.HEALTH_PROGRAM, PROLOG_PROGRAM]
    missing = [path for path in paths if path not in (node.get('paths') or {})]
    return {'sections': ['paths'], 'paths': missing} if missing else None


def plan(node, wanted, stack, host=None, previous=None):
    """Phase slurm. wanted: install, conf_dir, controller, compute, record (this host's slurm_node record), nodes
    ({host: record} of the compute nodes this run read), controller_record, cluster_name, partition,
    slurmctld_port, slurmd_port, cgroup_enforce, conf_extra, health_check, health_interval, health_node_state,
    health_prolog, reboot_program.

    Returns the Plan with files {path: content}, remove [paths], munge_key (create|install|None), start and restart
    ([services] in the order to act), reconfigure (bool: scontrol reconfigure on the controller afterwards)."""
    result = Plan('slurm')
    result.update(files={}, remove=[], munge_key=None, start=[], restart=[], reconfigure=False, dropin=None,
                  slurmd_first=False)
    problems = check_cluster(wanted)
    if problems:
        raise PlanError('rocm_slurm: %s. Nothing was changed.' % '; '.join(problems))
    slurm = node.get('slurm') or {}
    files = slurm.get('files') or {}
    conf_dir = (wanted.get('conf_dir') or '/etc/slurm').rstrip('/')
    install = sf.flag(wanted.get('install'))
    controller = sf.flag(wanted.get('controller'))
    compute = sf.flag(wanted.get('compute'))
    record = wanted.get('record') or {}
    ctl = wanted.get('controller_record') or {}
    nodes = wanted.get('nodes') or {}
    records = sorted((item for item in nodes.values() if item and item.get('compute')), key=lambda item: item['name'])
    names = [item['name'] for item in records]
    if len(set(names)) != len(names):
        raise PlanError('rocm_slurm: two hosts have the same Slurm node name (%s): set rocm_slurm_node_name. Nothing '
                        'was changed.' % ', '.join(sorted(set(name for name in names if names.count(name) > 1))))
    if len(wanted.get('controllers') or []) != 1:
        raise PlanError('rocm_slurm: the controller group (rocm_slurm_controller_group) must hold exactly one host, it '
                        'holds %s. Nothing was changed.' % (', '.join(wanted.get('controllers') or []) or 'none'))
    if not ctl:
        raise PlanError('rocm_slurm: the controller %s is not in this run (a --limit without it?): every host\'s plan '
                        'needs its record. Run with it. Nothing was changed.' % wanted['controllers'][0])
    restart = set()
    reconfigure = False
    # slurm.conf
    conf_path = conf_dir + '/slurm.conf'
    current = files.get('slurm.conf') or {}
    prolog = sf.flag(wanted.get('health_prolog'))
    if prolog and not sf.health_lines(wanted):
        result.warn('rocm_slurm_health_prolog is on and rocm_slurm_health_check off: a node the prolog refuses stays '
                    'drained ("Prolog error") until an admin resumes it; the health check is what gives such a drain '
                    'its gpulab reason and resumes the node once healthy')
    if install:
        content = sf.render_slurm_conf(wanted, ctl, records, current.get('content') or '')
        content = '\n'.join(prolog_lines(content.splitlines(), prolog)) + '\n'
    elif current.get('type') != 'file':
        if controller:
            raise PlanError('rocm_slurm: %s is missing on the controller, and rocm_slurm_install is false (configure '
                            'the Slurm that is there). Install Slurm first, or set rocm_slurm_install: true. Nothing '
                            'was changed.' % conf_path)
        result.warn('%s is missing on this node (configless Slurm?): slurm.conf is left to the controller' % conf_path)
        content = None
    else:
        content = sf.edit_slurm_conf(current['content'], records, sf.owned_lines(wanted))
        content = '\n'.join(prolog_lines(content.splitlines(), prolog)) + '\n'
    if content is not None and current.get('content') != content:
        result['files'][conf_path] = content
        gpus_of = sf.gres_changes(current.get('content') or '', content)
        mine = gpus_of is not None and record.get('name') in gpus_of
        # Slurm takes a node's new GPUs only when slurmctld and that node's slurmd start: on scontrol reconfigure,
        # Slurm 22.05 refuses another GPU count where gres.conf names the files ("Attempt to change gres/gpu Count
        # ... invalid with File configuration"), and slurm.conf(5) asks for both restarted on node changes.
        if controller:
            restart.add('slurmctld')
        if compute and (gpus_of is None or mine):
            restart.add('slurmd')
        elif compute:
            reconfigure = True
        if current.get('type') != 'file':
            why = 'missing'
        elif gpus_of is None:
            why = 'GresTypes, the node definitions or other settings differ (slurmctld and slurmd restart)'
        else:
            parts = ["slurmctld restarts: it takes a node's new GPUs only at its start"] if controller else []
            if compute:
                parts.append('slurmd restarts: its own node line changed' if mine else
                             'this slurmd re-reads it on scontrol reconfigure, no restart')
            why = 'the GPUs of %s differ (%s)' % (', '.join(gpus_of), '; '.join(parts))
        result.change('write %s' % conf_path, why)
    # gres.conf, on compute nodes
    if compute:
        path = conf_dir + '/gres.conf'
        gres = files.get('gres.conf') or {}
        text, removed = sf.edit_gres_conf(gres.get('content') if gres.get('type') == 'file' else None, record, path)
        if removed or (text is not None and text != gres.get('content')):
            if removed:
                result['remove'].append(path)
                result.change('remove %s' % path, 'it held only the GPU block, and this node has no GPU now '
                              '(slurmd restarts)')
            else:
                result['files'][path] = text
                result.change('write %s' % path, '%s (slurmd restarts)' % (
                    'missing' if gres.get('type') != 'file' else 'the GPUs differ'))
            restart.add('slurmd')
        # cgroup.conf: ConstrainDevices
        path = conf_dir + '/cgroup.conf'
        cgroup = files.get('cgroup.conf') or {}
        text = (sf.render_cgroup_conf() if install else
                sf.edit_cgroup_conf(cgroup.get('content') if cgroup.get('type') == 'file' else ''))
        if text != cgroup.get('content'):
            result['files'][path] = text
            result.change('write %s' % path, 'ConstrainDevices=yes is %s' % (
                'missing' if 'ConstrainDevices' not in (cgroup.get('content') or '') else 'not set'))
            restart.add('slurmd')
        # slurmd waits for the GPUs' device nodes after boot (systemd drop-in), where the health check runs
        paths = node.get('paths') or {}
        if sf.health_lines(wanted):
            if sf.HEALTH_PROGRAM in paths and (paths[sf.HEALTH_PROGRAM] or {}).get('type') != 'file':
                result.warn('%s is not installed on this node: slurmd\'s HealthCheckProgram fails here until role '
                            'rocm_health runs on it (playbooks/provision.yml)' % sf.HEALTH_PROGRAM)
            if (paths.get(DROPIN) or {}).get('sha1') != sha1(DROPIN_TEXT):
                result['files'][DROPIN] = DROPIN_TEXT
                result['dropin'] = {'folder': (paths.get(DROPIN_DIR) or {}).get('type') != 'directory',
                                    'reload': (paths.get('/run/systemd/system') or {}).get('type') == 'directory'}
                result.change('write %s' % DROPIN, 'slurmd waits for /dev/kfd and the render nodes after boot '
                              '(takes effect at its next start)')
        elif (paths.get(DROPIN) or {}).get('type') == 'file':
            result['remove'].append(DROPIN)
            result.change('remove %s' % DROPIN, 'rocm_slurm_health_check is false')
        if prolog and PROLOG_PROGRAM in paths and (paths[PROLOG_PROGRAM] or {}).get('type') != 'file':
            result.warn('%s is not installed on this node: slurm.conf names it as the Prolog, so Slurm refuses every '
                        'job here and drains the node ("Prolog error") until role rocm_health runs on it '
                        '(playbooks/provision.yml)' % PROLOG_PROGRAM)
        # /etc/default/slurmd: the node's Slurm name, where it is not the host name
        if install:
            defaults = files.get('defaults') or {}
            text = sf.edit_slurmd_defaults(defaults.get('content') if defaults.get('type') == 'file' else None,
                                           record.get('name'), slurm.get('hostname'))
            if text is not None and text != defaults.get('content'):
                result['files'][DEFAULTS_FILE] = text
                result.change('write %s' % DEFAULTS_FILE, 'slurmd must run as node %s (the host is %s)'
                              % (record.get('name'), slurm.get('hostname')))
                restart.add('slurmd')

    # The munge key (install only: an existing Slurm has its own): made once on the controller, the same bytes on
    # every other host. Its content never passes through the plan, only its checksum.
    key = slurm.get('munge_key') or {}
    munge = (slurm.get('users') or {}).get('munge') or {}
    if install:
        if key.get('type') not in (None, 'file'):
            raise PlanError('rocm_slurm: %s is a %s, not a file: root does not follow or replace it. Make it the '
                            'key file (or remove it). Nothing was changed.' % (MUNGE_KEY, key.get('type')))
        ctl_sha1 = ctl.get('munge_key_sha1')
        if controller and key.get('type') != 'file':
            result['munge_key'] = 'create'
            result.change('create the munge key %s' % MUNGE_KEY, 'the controller has none')
        elif not controller and (key.get('type') != 'file' or key.get('sha1') != ctl_sha1):
            result['munge_key'] = 'install'
            result.change("install the controller's munge key", 'missing' if key.get('type') != 'file' else
                          "it differs from the controller's")
        elif munge and (key.get('mode') != '0400' or key.get('uid') != munge.get('uid')):
            result['munge_key'] = 'fix'
            result.change('make %s mode 0400, owned by munge' % MUNGE_KEY, 'it is mode %s, uid %s'
                          % (key.get('mode'), key.get('uid')))
        if result['munge_key']:
            restart.add('munge')

    # Daemons: restarted when their files changed; started (install) where they do not run.
    daemons = slurm.get('daemons') or {}
    services = [('munge', 'munged', True), ('slurmctld', 'slurmctld', controller), ('slurmd', 'slurmd', compute)]
    for service, process, wanted_here in services:
        if not wanted_here:
            continue
        if not daemons.get(process):
            if install:
                result['start'].append(service)
                result.change('start %s' % service, 'it does not run')
            elif service in restart:
                result.warn('%s does not run here: the new configuration takes effect when it starts' % service)
        elif service in restart:
            result['restart'].append(service)
            result.change('restart %s' % service, 'its configuration changed')
    # A daemon (re)started here reads everything anew; a slurmd whose slurm.conf changed only in another node's
    # GPUs re-reads it on scontrol reconfigure (once, on the controller, after every restart).
    result['reconfigure'] = reconfigure and 'slurmd' not in result['restart'] + result['start']
    # The order of the restarts where this node's GPU count changes: Slurm 22.05's gres.c (_node_config_validate)
    # drains a node that registers fewer GPUs than slurmctld has configured ("gres/gpu count reported lower than
    # configured") and ignores an excess. A rising count restarts this slurmd first (it registers the new count with
    # the slurmctld that still has the old one), a falling one after slurmctld (the task order).
    if 'slurmd' in result['restart'] and conf_path in result['files'] and record.get('name'):
        result['slurmd_first'] = (sf.gpu_count(result['files'][conf_path], record['name'])
                                  > sf.gpu_count(current.get('content'), record['name']))
    if result['reconfigure']:
        result.change('scontrol reconfigure (on the controller)', "another node's GPUs changed: this slurmd re-reads "
                      'slurm.conf without a restart')
    return result
