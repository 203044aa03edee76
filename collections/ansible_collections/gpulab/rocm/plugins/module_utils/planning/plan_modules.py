# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What rocm_modules changes: one modulefile per ROCm release installed under /opt (as the probe found them: rocm/X.Y.Z
for a legacy /opt/rocm-X.Y.Z, rocm/X.Y for a ROCm Core SDK /opt/rocm/core-X.Y), the default marker of the stack's
default release, and the distribution's Environment Modules where the lab has no modules tool and asked for one.
Files the role did not write are never changed. Pure; the Tcl text is modulefile.py's."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpulab.rocm.plugins.module_utils.planning import (
    gpu_support, modulefile, plan_env, rocm_release,
)
from ansible_collections.gpulab.rocm.plugins.module_utils.planning.plan_common import Plan, PlanError, file_matches
from ansible_collections.gpulab.rocm.plugins.module_utils.parsers.gfx import is_gfx_target

# The phase's contract (docs/plan-contract.md): the probe sections it reads, the keys of its result that its
# role reads, and how the plan pass treats it; planner.REGISTRY collects it.
PHASE = {
    'name': 'modules',
    'role': 'rocm_modules',
    'changes_host': True,
    # Plus the modulefile folders (plan_modules.probe_needs).
    'sections': ('os', 'packages', 'gpus', 'modules'),
    # What packages put on the host: read again after a package change since it was read.
    'derived_from_packages': ('modules',),
    'keys': {
        'install': 'Distribution packages to install for the modules tool (Environment Modules when asked).',
        'dirs': 'Modulefile folders to make.',
        'files': 'Modulefiles and the default marker to write, path to content.',
        'remove': 'Modulefiles of this collection to remove (releases no longer installed).',
    },
}


# Where each tool's Debian/Ubuntu package looks first (its modulespath file): both are in the default MODULEPATH.
TOOLS = {'lmod': '/etc/lmod/modules', 'environment-modules': '/etc/environment-modules/modules'}
TOOL_CHOICES = ('auto',) + tuple(sorted(TOOLS))
# The package that installs Environment Modules when asked (rocm_modules_install); Lmod is the lab's own choice.
INSTALL_PACKAGE = 'environment-modules'
ENV_LDCONFIG = '/etc/ld.so.conf.d/rocm.conf'
_PATH_RE = re.compile(r'/[A-Za-z0-9._/+-]*')


def check(wanted):
    problems = []
    if wanted.get('tool', 'auto') not in TOOL_CHOICES:
        problems.append('rocm_modules_tool must be one of %s, got %r' % (', '.join(TOOL_CHOICES), wanted.get('tool')))
    path = wanted.get('path') or ''
    if path and (not _PATH_RE.fullmatch(path) or '/../' in path + '/' or path.rstrip('/') in ('', '/etc', '/usr')):
        problems.append('rocm_modules_path must be an absolute folder of letters, digits and "._+-/" (not / or '
                        '/etc), got %r' % (path,))
    bad = [t for t in wanted.get('gfx_targets') or [] if not is_gfx_target(str(t))]
    if bad:
        problems.append('rocm_modules_gfx_targets holds values that are not gfx targets such as gfx90a: %s'
                        % ', '.join(map(repr, bad)))
    return problems


def installed(node, name):
    return ((node.get('packages') or {}).get(name) or ['  '])[0][1:2] in ('i', 'U', 'F')


def tool_of(node, wanted):
    """The modules tool the files are for: the one named, else Lmod or Environment Modules as installed, else None."""
    if wanted.get('tool', 'auto') != 'auto':
        return wanted['tool']
    for name in ('lmod', 'environment-modules'):
        if installed(node, name):
            return name
    return None


def folder(wanted, tool):
    return (wanted.get('path') or TOOLS[tool]).rstrip('/')


def gpu_variables(node, wanted, version):
    """[(name, value)] of the GPU variables for one release: the HSA override where a GPU needs one and
    PYTORCH_ROCM_ARCH, decided by the same functions as the login environment's (gpu_support)."""
    gpus = wanted.get('gfx_targets') or gpu_support.amd_gpus(node.get('gpu_pci') or {})
    hsa, warnings = {}, []
    if wanted.get('hsa_override_enabled', True):
        hsa, warnings = gpu_support.hsa_override_env(gpus, version)
    result = sorted(hsa.items())
    targets = gpu_support.effective_targets(gpus, version)
    if targets:
        result.append(('PYTORCH_ROCM_ARCH', ';'.join(targets)))
    return result, warnings


def releases(node):
    """The module names of the releases the probe found: X.Y.Z (legacy), X.Y (Core), oldest first."""
    found = (node.get('modules') or {}).get('releases') or {}
    return sorted(found, key=rocm_release.version_tuple)


def module_name(version):
    """A release's module name: its series X.Y for a ROCm Core SDK release (patch releases replace it in
    /opt/rocm/core-X.Y), the full X.Y.Z for a legacy one."""
    info = rocm_release.release(version)
    return info['series'] if info['stream'] == 'core' else info['version']


def default_release(node, stack, found):
    """The stack's default release where it is installed, else the release /opt/rocm (Core: /opt/rocm/core) points
    at, else None."""
    if module_name(stack['version']) in found:
        return module_name(stack['version'])
    modules = node.get('modules') or {}
    target = (modules.get('opt_rocm') or '').rstrip('/')
    for version in found:
        if target == modules['releases'][version]['prefix']:
            return version
    return None


def plan(node, wanted, stack, host=None, previous=None):
    """wanted: state, tool, install, path, hsa_override_enabled, gfx_targets.

    Returns the Plan: tool, folder (the modulefile folder), install [packages], dirs [folders to make], files
    {path: content}, remove [paths], releases, default.
    """
    result = Plan('modules')
    result.update(tool=None, folder=None, install=[], dirs=[], files={}, remove=[], releases=[], default=None)
    present = wanted.get('state', 'present') == 'present'
    problems = check(wanted) if present else []
    if problems:
        raise PlanError('rocm_modules: %s. Nothing was changed.' % '; '.join(problems))
    probed = (node.get('modules') or {}).get('dirs') or {}
    wanted_files = {}
    target = None
    if present:
        tool = tool_of(node, wanted)
        if tool is None and wanted.get('install'):
            tool = INSTALL_PACKAGE
            result['install'] = [INSTALL_PACKAGE]
            result.change('install %s' % INSTALL_PACKAGE,
                          'no modules tool on the host and rocm_modules_install is true')
        if tool is None:
            result.warn('rocm_modules: neither Lmod nor Environment Modules is installed: no modulefiles written. '
                        'Install the lab\'s modules tool, or set rocm_modules_install: true for the distribution\'s '
                        'Environment Modules.')
        elif stack['install_source'] == 'distro':
            result.warn('rocm_modules: the distribution\'s ROCm is one release in /usr, which needs no module; '
                        'modulefiles are written for AMD\'s releases under /opt only.')
        else:
            result['tool'] = tool
            target = folder(wanted, tool)
            result['folder'] = target
            wanted_files = _wanted_files(node, wanted, stack, target, result)
            _dirs(probed, target, result)
    if target is not None and target not in probed:
        raise PlanError('rocm_modules: the probe has not read %s (planner.probe_needs names it)' % target)
    for root in sorted(probed):
        if not present:
            why = 'rocm_modules_state is absent'
        elif root != target:
            why = 'the modulefiles go to %s now' % target if target else 'no modulefiles are written (see the notice)'
        else:
            why = None
        _reconcile(probed[root], root, wanted_files if root == target else {}, result, why)
    _linker_notices(node, result)
    return result


def _wanted_files(node, wanted, stack, target, result):
    found = releases(node)
    default = default_release(node, stack, found)
    result.update(releases=found, default=default)
    info = (node.get('modules') or {}).get('releases') or {}
    login_gpu, _warnings = gpu_variables(node, wanted, stack['version'])
    login = dict([('ROCM_PATH', plan_env.rocm_path({}, stack))] + login_gpu)
    files = {}
    for version in found:
        variables, warnings = gpu_variables(node, wanted, version)
        for text in warnings:
            result.warn('rocm/%s: %s' % (version, text))
        prefix = info[version]['prefix']
        files['%s/rocm/%s' % (target, version)] = modulefile.release_modulefile(
            version, prefix, [('ROCM_PATH', prefix)] + variables, login, version == default)
    if default:
        files['%s/rocm/.version' % target] = modulefile.version_file(default)
    elif found:
        result.warn('rocm_modules: the default release %s is not installed and /opt/rocm (/opt/rocm/core for the Core '
                    'SDK) points at none of %s: no default marked (the tools then load the highest)'
                    % (stack['version'], ', '.join(found)))
    return files


def _dirs(probed, target, result):
    """The folders to make (root's, 0755), or PlanError where one exists that root could not trust."""
    entry = probed.get(target)
    if entry is None:
        return
    for path, state in ((target, entry['state']), (target + '/rocm', entry['rocm'])):
        if not state.get('exists'):
            result['dirs'].append(path)
            result.change('make %s' % path, 'missing')
        elif state.get('type') != 'directory' or state.get('uid') != 0 or int(state.get('mode', '0'), 8) & 0o022:
            raise PlanError('rocm_modules: %s is a %s of uid %s with mode %s; modulefiles go in a folder only root can '
                            'write. Fix it, or choose another with rocm_modules_path. Nothing was changed.'
                            % (path, state.get('type'), state.get('uid'), state.get('mode')))


def _reconcile(entry, root, wanted_files, result, why):
    """Write what differs, remove the role's own files that are no longer wanted (why: the reason, when the whole
    folder is no longer the role's), leave the lab's alone."""
    existing = entry.get('files') or {}
    for name, state in sorted(existing.items()):
        path = '%s/rocm/%s' % (root, name)
        ours = state.get('type') == 'file' and modulefile.is_ours(state.get('content'))
        if path in wanted_files:
            continue
        if ours:
            result['remove'].append(path)
            result.change('remove %s' % path, why or ('no such release under /opt any more' if name != '.version'
                                                      else 'no default release'))
    for path, content in sorted(wanted_files.items()):
        state = existing.get(path.rsplit('/', 1)[1]) or {}
        if state.get('exists') and not (state.get('type') == 'file' and modulefile.is_ours(state.get('content'))):
            result.warn('rocm_modules: %s is the lab\'s own (not written by gpulab.rocm): left as it is' % path)
            continue
        if not file_matches(state, content):
            result['files'][path] = content
            result.change('write %s' % path, 'missing' if not state.get('exists') else 'it differs')


def _linker_notices(node, result):
    for path, lines in sorted(((node.get('modules') or {}).get('ld_so_conf') or {}).items()):
        versioned = [line for line in lines if line.startswith(('/opt/rocm-', '/opt/rocm/core-'))]
        if path != ENV_LDCONFIG and versioned:
            result.warn('rocm_modules: %s puts %s in the linker cache for every program; only the default release '
                        'should be there (rocm_env\'s %s), or programs run without a module mix releases. Remove those '
                        'lines (docs/modules.md)' % (path, ', '.join(versioned), ENV_LDCONFIG))


def probe_needs(node, wanted, stack, fresh=()):
    """The modulefile folder named by rocm_modules_path, when the probe has not read it."""
    path = (wanted.get('path') or '').rstrip('/')
    dirs = (node.get('modules') or {}).get('dirs')
    if path and path not in (dirs or {}):
        return {'sections': ['modules'], 'modulefiles_dirs': sorted(set(list(dirs or TOOLS.values()) + [path]))}
    return None
