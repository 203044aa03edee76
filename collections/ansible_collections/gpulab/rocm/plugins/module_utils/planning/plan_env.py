# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What rocm_env changes: /etc/profile.d/rocm.sh, the block in each GPU user's ~/.bashrc, the linker file and the
linker cache. The variables are decided here (HSA overrides per GPU, PYTORCH_ROCM_ARCH, ROCm/CUDA coexistence) and
the shell text is built here, every value shell-quoted. Pure."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

from ansible_collections.gpulab.rocm.plugins.module_utils.planning import gpu_support, rocm_release
from ansible_collections.gpulab.rocm.plugins.module_utils.host import node_state as ns
from ansible_collections.gpulab.rocm.plugins.module_utils.parsers.gfx import is_gfx_target
from ansible_collections.gpulab.rocm.plugins.module_utils.planning.plan_common import (
    Plan, PlanError, file_matches, user_become_method,
)

# The phase's contract (docs/plan-contract.md): the probe sections it reads, the keys of its result that its
# role reads, and how the plan pass treats it; planner.REGISTRY collects it.
PHASE = {
    'name': 'env',
    'role': 'rocm_env',
    'changes_host': True,
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
}


try:
    from shlex import quote
except ImportError:  # Python 2
    from pipes import quote

HEADER = '# Managed by gpulab.rocm (role rocm_env). Local changes are overwritten.\n'
_NAME_RE = re.compile(r'^[A-Za-z_][A-Za-z0-9_]*\Z')
_PATH_RE = re.compile(r'^/[A-Za-z0-9._/+-]*\Z')
_VERSION_RE = re.compile(r'^\d+\.\d+\.\d+\Z')
SYSTEM_PREFIXES = ('/usr', '/usr/local')
# Never set by rocm_env_extra_variables: they would change how every login shell runs programs.
RESERVED = ('PATH', 'LD_PRELOAD', 'LD_LIBRARY_PATH', 'LD_AUDIT', 'BASH_ENV', 'ENV', 'IFS', 'PS4', 'SHELLOPTS',
            'PROMPT_COMMAND', 'HOME', 'USER', 'LOGNAME', 'SHELL')


def check(wanted):
    problems = []
    extra = wanted.get('extra_variables') or {}
    if not isinstance(extra, dict):
        problems.append('rocm_env_extra_variables must be a dict of NAME: value')
        extra = {}
    bad = [name for name in extra if not _NAME_RE.match(str(name))]
    if bad:
        problems.append('rocm_env_extra_variables has names that are not shell variable names: %s. Use letters, '
                        'digits and underscores, not starting with a digit' % ', '.join(sorted(map(str, bad))))
    reserved = [name for name in extra if str(name) in RESERVED]
    if reserved:
        problems.append('rocm_env_extra_variables may not set %s (they change how every login shell runs programs)'
                        % ', '.join(sorted(reserved)))
    for key in ('rocm_path', 'miopen_dir'):
        value = wanted.get(key) or ''
        if value and (not _PATH_RE.match(value) or '/../' in value + '/'):
            problems.append('rocm_env_%s must be an absolute path of letters, digits and "._+-/", got %r'
                            % (key, value))
    if wanted.get('hsa_override_gfx_version') and not _VERSION_RE.match(str(wanted['hsa_override_gfx_version'])):
        problems.append('rocm_env_hsa_override_gfx_version must look like 10.3.0, got %r'
                        % (wanted['hsa_override_gfx_version'],))
    if wanted.get('hip_platform') not in ('amd', 'nvidia'):
        problems.append('rocm_env_hip_platform must be amd or nvidia, got %r' % (wanted.get('hip_platform'),))
    bad = [t for t in wanted.get('gfx_targets') or [] if not is_gfx_target(str(t))]
    if bad:
        problems.append('rocm_env_gfx_targets holds values that are not gfx targets such as gfx90a: %s'
                        % ', '.join(map(repr, bad)))
    return problems


def core_prefix(stack):
    """The /opt/rocm/core-X.Y of the stack's default release where it is a ROCm Core SDK release from AMD, else None."""
    info = rocm_release.release(stack['version'])
    return info['prefix'] if stack['install_source'] != 'distro' and info['stream'] == 'core' else None


def rocm_path(wanted, stack):
    """The ROCm root of the environment: the one set, else /usr for the distribution's packages, else the default
    release's: /opt/rocm for a legacy release (the alternative rocm_sdk points at it, side by side too), its own
    /opt/rocm/core-X.Y for a ROCm Core SDK release (/opt/rocm is a folder there whose bin and lib are alternatives
    that follow the newest release installed, not the stack's default; rocm-reference.md 13)."""
    if wanted.get('rocm_path'):
        return wanted['rocm_path'].rstrip('/')
    if stack['install_source'] == 'distro':
        return '/usr'
    return core_prefix(stack) or '/opt/rocm'


def linker_dirs(path, stack):
    """The library folders of the linker file. A Core release keeps its libraries in lib only, and its packages do
    not register them with the linker (TheRock#6716, #6718: programs linked against /opt/rocm/lib exit 127)."""
    return [path + '/lib'] if core_prefix(stack) else [path + '/lib', path + '/lib64']


def variables(node, wanted, stack):
    """(ordered [(name, value)], warnings, nvidia_present) for every login shell."""
    path = rocm_path(wanted, stack)
    gpus = wanted.get('gfx_targets') or gpu_support.amd_gpus(node.get('gpu_pci') or {})
    targets = gpu_support.effective_targets(gpus, stack['version'])
    warnings = []
    if wanted.get('hsa_override_gfx_version'):
        hsa = {'HSA_OVERRIDE_GFX_VERSION': wanted['hsa_override_gfx_version']}
    elif wanted.get('hsa_override_enabled', True):
        hsa, warnings = gpu_support.hsa_override_env(gpus, stack['version'])
    else:
        hsa = {}
    nvidia = bool((node.get('gpu_pci') or {}).get('nvidia_present'))
    result = [('ROCM_PATH', path), ('HIP_PLATFORM', wanted.get('hip_platform') or 'amd')]
    if wanted.get('hip_path_enabled'):
        result.append(('HIP_PATH', path))
    result += sorted(hsa.items())
    if wanted.get('pytorch_rocm_arch_enabled', True) and targets:
        result.append(('PYTORCH_ROCM_ARCH', ';'.join(targets)))
    if wanted.get('hcc_amdgpu_target_enabled') and targets:
        result.append(('HCC_AMDGPU_TARGET', ','.join(targets)))
    for name, value in sorted(gpu_support.cuda_coexistence_env(wanted.get('cuda_policy') or 'both', nvidia).items()):
        result = [(n, v) for n, v in result if n != name] + [(name, value)]
    for name, value in sorted((wanted.get('extra_variables') or {}).items()):
        result = [(n, v) for n, v in result if n != name] + [(str(name), '' if value is None else str(value))]
    return result, warnings, nvidia


def shell_lines(node, wanted, stack):
    """The shell lines shared by the profile file and the bashrc blocks."""
    names, _warnings, nvidia = variables(node, wanted, stack)
    path = rocm_path(wanted, stack)
    lines = ['export %s=%s' % (name, quote(value)) for name, value in names]
    if nvidia and wanted.get('cuda_policy') != 'none':
        lines.append('# NVIDIA GPUs present, ROCm/CUDA coexistence policy: %s' % wanted.get('cuda_policy'))
    miopen = (wanted.get('miopen_dir') or '').rstrip('/')
    if miopen:
        # Each user's own folder, made by the user's own login (never by root), private. One that another user made
        # first (or a link) is not used: MIOpen then keeps its defaults under the home folder.
        lines += ['gpulab_miopen_dir=%s/"$(id -un)"' % quote(miopen),
                  'if { [ -d "$gpulab_miopen_dir" ] && [ ! -L "$gpulab_miopen_dir" ] && [ -O "$gpulab_miopen_dir" ]; } '
                  '|| mkdir -m 0700 "$gpulab_miopen_dir" 2>/dev/null; then',
                  '  export MIOPEN_USER_DB_PATH="$gpulab_miopen_dir/db"',
                  '  export MIOPEN_CUSTOM_CACHE_DIR="$gpulab_miopen_dir/cache"',
                  'fi',
                  'unset gpulab_miopen_dir']
    if path not in SYSTEM_PREFIXES:
        lines += ['case ":${PATH}:" in', '  *:%s/bin:*) ;;' % path,
                  '  *) export PATH="${PATH:+${PATH}:}%s/bin" ;;' % path, 'esac']
    return lines


def plan(node, wanted, stack, host=None, previous=None):
    """wanted: state, rocm_path, hip_platform, hip_path_enabled, gfx_targets, hsa_override_enabled,
    hsa_override_gfx_version, pytorch_rocm_arch_enabled, hcc_amdgpu_target_enabled, miopen_dir, cuda_policy,
    extra_variables, bashrc_enabled.

    Returns the Plan: files {path: content}, remove [paths], ldconfig (bool), miopen_dir (to make) or None,
    bashrc {user: block or None (remove)}, variables.
    """
    result = Plan('env')
    present = wanted.get('state', 'present') == 'present'
    result.update(files={}, remove=[], ldconfig=False, miopen_dir=None, bashrc={}, variables={},
                  become_method=user_become_method(node))
    files = node.get('files') or {}
    if present:
        problems = check(wanted)
        if problems:
            raise PlanError('rocm_env: %s.' % '; '.join(problems))
        names, warnings, _nvidia = variables(node, wanted, stack)
        for text in warnings:
            result.warn(text)
        result['variables'] = dict(names)
        lines = shell_lines(node, wanted, stack)
        block = '\n'.join(lines)
        wanted_files = {ns.PROFILE_FILE: HEADER + '# ROCm environment for login shells.\n' + block + '\n'}
        path = rocm_path(wanted, stack)
        if path not in SYSTEM_PREFIXES:
            wanted_files[ns.LDCONFIG_FILE] = HEADER + ''.join('%s\n' % folder for folder in linker_dirs(path, stack))
    else:
        block, wanted_files = None, {}

    for path in (ns.PROFILE_FILE, ns.LDCONFIG_FILE):
        current = files.get(path) or {}
        if path in wanted_files:
            if not file_matches(current, wanted_files[path]):
                result['files'][path] = wanted_files[path]
                result.change('write %s' % path, 'missing' if not current.get('exists') else 'it differs')
        elif current.get('exists'):
            result['remove'].append(path)
            result.change('remove %s' % path, 'rocm_env_state is absent' if not present else
                          'the libraries are in the default linker directories')
    linker = node.get('ldconfig') or {}
    if ns.LDCONFIG_FILE in result['files'] or ns.LDCONFIG_FILE in result['remove']:
        result['ldconfig'] = True
    elif ns.LDCONFIG_FILE in wanted_files and linker.get('missing_count'):
        result['ldconfig'] = True
        result.change('rebuild the linker cache', '%d ROCm libraries are not in it (%s...)'
                      % (linker['missing_count'], linker['missing'][0]))

    miopen = (wanted.get('miopen_dir') or '').rstrip('/') if present else ''
    if miopen:
        result['miopen_dir'] = _miopen_dir(node, miopen, result)

    users = node.get('users') or {}
    targets = stack['gpu_users'] if (wanted.get('bashrc_enabled', True) or not present) else []
    for user in targets:
        info = users.get(user) or {}
        if not info.get('exists'):
            continue  # preflight's problem (it stops the host at the gate): nothing is written for that user
        bashrc = info.get('bashrc') or {}
        label = '%s/.bashrc' % info.get('home')
        home = info.get('home_state') or {}
        if home.get('exists') is False or home.get('type') not in (None, 'directory', 'symlink'):
            # blockinfile (as the user) could not create the file: a notice, not a failed host.
            what = 'does not exist' if not home.get('exists') else 'is a %s' % home.get('type')
            result.warn('user %s has no home folder (%s %s): no ROCm block in ~/.bashrc; make the folder, or leave '
                        'the user out of rocm_gpu_users' % (user, info.get('home'), what))
            continue
        if bashrc.get('type') == 'symlink':
            result.warn('%s of user %s is a symlink: not changed (root never follows a user\'s link); make it a plain '
                        'file to get the ROCm block' % (label, user))
            continue
        if bashrc.get('type') not in (None, 'file'):
            result.warn('%s of user %s is a %s, not a plain file: not changed (the role writes only a plain file); '
                        'replace it with one to get the ROCm block' % (label, user, bashrc.get('type')))
            continue
        if bashrc.get('exists') and bashrc.get('uid') != info.get('uid'):
            result.warn('%s is not owned by %s: not changed' % (label, user))
            continue
        if bashrc.get('markers') == 'over_limit':
            result.warn('%s is larger than %d MiB, more than the probe reads: not changed; shorten it to get the ROCm '
                        'block' % (label, (bashrc.get('limit') or 0) >> 20))
            continue
        if bashrc.get('markers') == 'inexact':
            result.warn('%s has gpulab.rocm marker lines on line(s) %s with spaces, a carriage return (CRLF) or no '
                        'newline after them: not changed, since the writer would not find them and would add a '
                        'second block; make each marker a line of its own, exactly "%s" or "%s"'
                        % (label, bashrc.get('inexact_lines'), ns.BASHRC_BEGIN, ns.BASHRC_END))
            continue
        if bashrc.get('markers') == 'broken':
            result.warn('%s has gpulab.rocm markers out of order (BEGIN on line(s) %s, END on line(s) %s): not changed, '
                        'so none of its lines are lost; remove the stray markers by hand'
                        % (label, bashrc.get('begin_lines'), bashrc.get('end_lines')))
            continue
        if present and bashrc.get('block') != block:
            result['bashrc'][user] = block
            result.change('write the ROCm block of %s' % label, 'missing' if bashrc.get('block') is None else
                          'it differs')
        elif not present and bashrc.get('block') is not None:
            result['bashrc'][user] = None
            result.change('remove the ROCm block of %s' % label, 'rocm_env_state is absent')
    return result


def _miopen_dir(node, miopen, result):
    """The shared MIOpen folder to make (root, 1777), or None when it is there; PlanError when a user could have made
    it or its parent theirs (root would then change a folder, or follow a link, that a user controls)."""
    paths = node.get('paths') or {}
    current, parent = paths.get(miopen) or {}, paths.get(os.path.dirname(miopen)) or {}
    if parent.get('exists') and (parent.get('type') != 'directory' or parent.get('uid') != 0
                                 or int(parent.get('mode', '0'), 8) & 0o022):
        raise PlanError('rocm_env_miopen_dir %s: its parent folder is a %s of uid %s with mode %s, which others can '
                        'change; choose a folder whose parent only root can write.'
                        % (miopen, parent.get('type'), parent.get('uid'), parent.get('mode')))
    if current.get('exists') and (current.get('type') != 'directory' or current.get('uid') != 0):
        raise PlanError('rocm_env_miopen_dir %s is a %s of uid %s: root does not take over (or follow) what a user '
                        'made; remove it, or choose another folder.'
                        % (miopen, current.get('type'), current.get('uid')))
    if current.get('type') == 'directory' and current.get('mode') == '1777':
        return None
    result.change('make %s (sticky, world-writable, like /tmp)' % miopen, 'each user keeps a private folder there')
    return miopen


def probe_needs(node, wanted, stack, fresh=()):
    """More to read than the first probe did: the shared MIOpen folder and its parent, when one is set (and the
    environment is wanted at all)."""
    if wanted.get('state') == 'absent':
        return None
    miopen = (wanted.get('miopen_dir') or '').rstrip('/')
    if miopen and miopen not in (node.get('paths') or {}):
        return {'sections': ['paths'], 'paths': [miopen, os.path.dirname(miopen)]}
    return None
