# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Tcl text of a ROCm release's modulefile and of the default marker, in the subset of Tcl that both Lmod and
Environment Modules read. Pure; every value is checked here (whole-value match) before it reaches the file.

Unload: both tools reverse `setenv` into an unset. Environment Modules also reads `unsetenv NAME VALUE` on unload as
"set NAME to VALUE" (its modulefile(5) page), so the login environment's value comes back there; Lmod treats an
unsetenv on unload as a no-op, so there the variable is unset and ROCm's tools fall back to /opt/rocm, the default
(docs/modules.md).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpulab.rocm.plugins.module_utils.planning import rocm_release

# The first line after the magic cookie: how the role tells its own files from the lab's (never touched).
MARK = '## Managed by gpulab.rocm (role rocm_modules). Local changes are overwritten.'
_NAME_RE = re.compile(r'[A-Z_][A-Z0-9_]*')
# Paths, versions (10.3.0), gfx lists (gfx90a;gfx1030): no space, brace, bracket, quote, $ or backslash, so a
# value inside Tcl braces is taken literally by both tools.
_VALUE_RE = re.compile(r'[A-Za-z0-9._/:;+,=-]+')
# A legacy release's module is named X.Y.Z (/opt/rocm-X.Y.Z), a ROCm Core SDK release's X.Y (/opt/rocm/core-X.Y).
_VERSION_RE = re.compile(r'\d+\.\d+(\.\d+)?')


class ModulefileError(ValueError):
    """A value that cannot be written into a modulefile as it is."""


def _value(text):
    text = str(text)
    if not _VALUE_RE.fullmatch(text):
        raise ModulefileError('%r cannot go into a modulefile (letters, digits and "._/:;+,=-" only)' % (text,))
    return '{%s}' % text


def _is_core(version):
    """Whether a module's release is a ROCm Core SDK one (named X.Y) rather than a legacy one (X.Y.Z); ModulefileError
    for any other name (6.2 for 6.2.0, 10.1.0 for the Core release 10.1)."""
    parsed = rocm_release.version_tuple(version) if _VERSION_RE.fullmatch(str(version)) else None
    core = parsed is not None and rocm_release.is_core(parsed)
    if parsed is None or (str(version).count('.') == 1) != core:
        raise ModulefileError('%r is not a ROCm release X.Y.Z (X.Y for the ROCm Core SDK)' % (version,))
    return core


def _name(text):
    if not _NAME_RE.fullmatch(str(text)):
        raise ModulefileError('%r is not an environment variable name' % (text,))
    return str(text)


def release_modulefile(version, prefix, variables, login, default):
    """The modulefile of one release.

    version: 'X.Y.Z', or 'X.Y' for a ROCm Core SDK release; prefix: its folder (/opt/rocm-X.Y.Z, /opt/rocm/core-X.Y);
    variables: [(name, value)] this release sets (ROCM_PATH first); login: {name: value} the login environment sets
    (rocm_env), restored on unload where the tool can; default: whether this is the default release (its libraries
    are already the linker's, so no LD_LIBRARY_PATH).
    """
    # A Core release keeps its libraries in lib only; /opt/rocm is its folder of alternatives, not the default's link.
    core = _is_core(version)
    behind = '' if core else ', behind /opt/rocm'
    lines = [
        '#%Module1.0',
        MARK,
        '## ROCm %s%s, in %s.' % (version, ' (the default release%s)' % behind if default else '', prefix),
        'module-whatis {ROCm %s}' % version,
        'proc ModulesHelp {} { puts stderr {ROCm %s from %s. docs/modules.md of gpulab.rocm says what it sets.} }'
        % (version, prefix),
        '',
        '# One ROCm release at a time: Lmod swaps a second rocm module in, Environment Modules refuses it.',
        'conflict rocm',
        '',
        'prepend-path PATH %s' % _value(prefix + '/lib/llvm/bin'),
        'prepend-path PATH %s' % _value(prefix + '/bin'),
        'prepend-path MANPATH %s' % _value(prefix + '/share/man'),
        'prepend-path CMAKE_PREFIX_PATH %s' % _value(prefix),
    ]
    if not default:
        lines += ['# The linker cache holds the default release only (/etc/ld.so.conf.d/rocm.conf): this one needs',
                  '# LD_LIBRARY_PATH, which the linker searches first.']
        lines += ['prepend-path LD_LIBRARY_PATH %s' % _value(prefix + folder)
                  for folder in (('/lib',) if core else ('/lib64', '/lib'))]
    lines.append('')
    names = [name for name, _value_ in variables]
    for name, value in variables:
        lines.append('setenv %s %s' % (_name(name), _value(value)))
    # What the login environment sets and this release does not (an HSA override another release needs): unset here.
    for name in sorted(set(login) - set(names)):
        lines.append('unsetenv %s %s' % (_name(name), _value(login[name])))
    restore = [(name, login[name]) for name in names if login.get(name)]
    if restore:
        lines += ['# On unload, Environment Modules sets these back to the login environment\'s values.',
                  'if {[module-info mode] in {unload remove}} {']
        lines += ['    unsetenv %s %s' % (_name(name), _value(value)) for name, value in restore]
        lines.append('}')
    return '\n'.join(lines) + '\n'


def version_file(default):
    """The default marker (`.version` in the rocm folder): both tools read ModulesVersion from it."""
    _is_core(default)
    return '#%%Module1.0\n%s\nset ModulesVersion {%s}\n' % (MARK, default)


def is_ours(content):
    """Whether a file's text is one this role wrote (its second line is MARK)."""
    lines = (content or '').split('\n', 2)
    return len(lines) > 1 and lines[0].startswith('#%Module') and lines[1] == MARK
