# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The package steps of the roles as apt-get, apt-mark and dpkg-query argument lists, and what their output means.

Pure: no module, no I/O. The module gpulab.rocm.apt_packages runs what this returns. Without python3-apt: apt-get
answers every question (`apt-get -s` for check mode), dpkg-query says what is installed.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import fnmatch
import re

# name or name=version: a Debian package name (policy 5.6.1) and a Debian version (policy 5.6.12), where the version
# may hold the glob characters * and ? (amdgpu-dkms=*.60204-*: apt-get itself takes no pattern, so the module picks
# the newest version apt offers that matches). Anything else could reach apt as an option or a pattern.
_ITEM_RE = re.compile(r'(?P<name>[a-z0-9][a-z0-9+.-]+)(?:=(?P<version>[0-9*?][A-Za-z0-9.+~:*?-]*))?')
# dpkg-query -W -f '${Package}\t${db:Status-Abbrev}\t${Version}\n'
STATUS_FORMAT = '${Package}\\t${db:Status-Abbrev}\\t${Version}\\n'
# apt-get --simulate: "Inst name [old] (new suite [arch])", "Remv name [old]", "Purg name [old]", "Conf name (new ...)".
_SIM_RE = re.compile(r'^(Inst|Remv|Purg|Conf) (\S+)(?: \[([^\]]*)\])?(?: \((\S+)[^)]*\))?', re.M)
# What dpkg prints while it works (apt-get passes it through).
_DONE_RES = (
    ('installed', re.compile(r'^Setting up (\S+?)(?::\w+)? \((\S+)\)', re.M)),
    ('removed', re.compile(r'^Removing (\S+?)(?::\w+)? \((\S+)\)', re.M)),
    ('purged', re.compile(r'^Purging configuration files for (\S+?)(?::\w+)? \((\S+)\)', re.M)),
)
HOLD_CHOICES = ('hold', 'install')

# As Ansible's apt module runs dpkg: keep a changed configuration file, take the package's where none was changed.
DPKG_OPTIONS = ['-o', 'Dpkg::Options::=--force-confdef', '-o', 'Dpkg::Options::=--force-confold']
ENVIRONMENT = {'DEBIAN_FRONTEND': 'noninteractive', 'LANG': 'C', 'LC_ALL': 'C'}


def parse_items(values, option):
    """[(name, version or None)] of name / name=version strings; ValueError naming the option and the bad values."""
    items, bad = [], []
    for value in values or []:
        match = _ITEM_RE.fullmatch(value) if isinstance(value, str) else None
        if match is None:
            bad.append(repr(value))
        else:
            items.append((match.group('name'), match.group('version')))
    if bad:
        raise ValueError('%s holds values that are not a Debian package name, or name=version: %s (lower case '
                         'letters, digits, "+", "-", "."; no leading "-"; the version after "=")'
                         % (option, ', '.join(bad)))
    return items


def is_pattern(version):
    return version is not None and ('*' in version or '?' in version)


def matches(version, wanted):
    """Whether an installed or offered version is the item's version (or matches its pattern)."""
    return fnmatch.fnmatchcase(version, wanted) if is_pattern(wanted) else version == wanted


def resolve(items, offered):
    """Items with a version pattern pinned to the newest version apt offers that matches it (offered: apt-cache
    madison's {name: [versions, newest first]}); (items, [name=pattern items nothing matches])."""
    resolved, unmatched = [], []
    for name, version in items:
        if not is_pattern(version):
            resolved.append((name, version))
            continue
        found = [candidate for candidate in offered.get(name) or [] if fnmatch.fnmatchcase(candidate, version)]
        if found:
            resolved.append((name, found[0]))
        else:
            unmatched.append('%s=%s' % (name, version))
    return resolved, unmatched


def check_holds(holds):
    bad = ['%r: %r' % (name, value) for name, value in (holds or {}).items()
           if not isinstance(name, str) or not _ITEM_RE.fullmatch(name) or '=' in name or value not in HOLD_CHOICES]
    if bad:
        raise ValueError('holds maps package names to hold or install; these are not: %s' % ', '.join(bad))


def parse_status(text):
    """dpkg-query -W output (STATUS_FORMAT) -> {name: (abbrev, version)}; architecture qualifiers dropped."""
    result = {}
    for line in (text or '').splitlines():
        parts = line.split('\t')
        if len(parts) == 3 and parts[0]:
            result[parts[0].split(':', 1)[0]] = (parts[1].strip() or 'un', parts[2])
    return result


def _installed(status, name):
    abbrev, version = status.get(name, ('un', ''))
    return abbrev[1:2] not in ('n', 'c', ''), abbrev, version


def plan(status, install=(), remove_first=(), remove=(), purge=False, holds=None):
    """What must change, from dpkg's status of the named packages: {'install': [...], 'remove_first': [...],
    'remove': [...], 'hold': [...], 'unhold': [...]} (install items as apt takes them, name or name=version)."""
    result = {'install': [], 'remove_first': [], 'remove': [], 'hold': [], 'unhold': []}
    going = set(name for name, _version in remove_first)
    for name, version in install:
        present, abbrev, current = _installed(status, name)
        # A package dpkg left half done (unpacked, half-configured: the third letter or an odd state) is installed
        # again; apt finishes it. One that remove_first takes away (AMD's rocminfo for Debian's) comes back.
        clean = present and abbrev[1:2] == 'i' and abbrev[2:3] in ('', ' ') and name not in going
        if not clean or (version is not None and not matches(current, version)):
            result['install'].append(name if version is None else '%s=%s' % (name, version))
    for key, items in (('remove_first', remove_first), ('remove', remove)):
        for name, _version in items:
            present, abbrev, _current = _installed(status, name)
            if present or (purge and abbrev[1:2] == 'c'):
                result[key].append(name)
    for name, selection in sorted((holds or {}).items()):
        abbrev = status.get(name, ('un', ''))[0]
        if abbrev[1:2] in ('n', ''):
            continue  # dpkg keeps no selection for a package it does not know; nothing to hold
        if selection == 'hold' and abbrev[0] != 'h':
            result['hold'].append(name)
        elif selection == 'install' and abbrev[0] == 'h':
            result['unhold'].append(name)
    return result


def names(*lists):
    return sorted(set(item.split('=', 1)[0] for items in lists for item in items))


def status_argv(package_names):
    # dpkg-query reads the tab and newline escapes of the format itself.
    return ['dpkg-query', '-W', '-f', STATUS_FORMAT] + list(package_names)


def lock_options(lock_timeout):
    return ['-o', 'DPkg::Lock::Timeout=%d' % int(lock_timeout)]


def update_argv(lock_timeout, sources_dir=None):
    """apt-get update of every source, or (sources_dir) of the sources files copied there only."""
    argv = ['apt-get', 'update', '--quiet'] + lock_options(lock_timeout)
    if sources_dir:
        argv += ['-o', 'Dir::Etc::SourceList=/dev/null', '-o', 'Dir::Etc::SourceParts=%s' % sources_dir,
                 '-o', 'APT::Get::List-Cleanup=0']
    return argv


def install_argv(items, lock_timeout, simulate=False, download_only=False, recommends=False, downgrade=False,
                 held=False, purge=False):
    """apt-get install of items (name, name=version; name- removes, with purge: purges)."""
    argv = ['apt-get', 'install', '--yes', '--quiet'] + lock_options(lock_timeout) + DPKG_OPTIONS
    argv += ['--simulate'] if simulate else []
    argv += ['--purge'] if purge else []
    argv += ['--download-only'] if download_only else []
    argv += [] if recommends else ['--no-install-recommends']
    argv += ['--allow-downgrades'] if downgrade else []
    argv += ['--allow-change-held-packages'] if held else []
    return argv + ['--'] + list(items)


def remove_argv(package_names, lock_timeout, purge=False, simulate=False, held=False):
    argv = ['apt-get', 'purge' if purge else 'remove', '--yes', '--quiet'] + lock_options(lock_timeout) + DPKG_OPTIONS
    argv += ['--simulate'] if simulate else []
    argv += ['--allow-change-held-packages'] if held else []
    return argv + ['--'] + list(package_names)


def madison_argv(package_names):
    return ['apt-cache', 'madison'] + list(package_names)


def mark_argv(selection, package_names):
    return ['apt-mark', selection] + list(package_names)


def parse_simulation(text):
    """apt-get --simulate output -> {'install': {name: version}, 'remove': [names], 'purge': [names],
    'configure': [names]}: what apt would do. An upgrade or a downgrade is an install at the new version."""
    result = {'install': {}, 'remove': [], 'purge': [], 'configure': []}
    for match in _SIM_RE.finditer(text or ''):
        verb, name, _old, new = match.groups()
        if verb == 'Inst':
            result['install'][name] = new
        elif verb == 'Remv':
            result['remove'].append(name)
        elif verb == 'Purg':
            result['purge'].append(name)
        else:
            result['configure'].append(name)
    return result


def parse_done(text):
    """What dpkg did, from apt-get's output: {'installed': {name: version}, 'removed': [...], 'purged': [...]}."""
    result = {'installed': {}, 'removed': [], 'purged': []}
    for key, pattern in _DONE_RES:
        for match in pattern.finditer(text or ''):
            if key == 'installed':
                result[key][match.group(1)] = match.group(2)
            elif match.group(1) not in result[key]:
                result[key].append(match.group(1))
    return result


def lists_fresh(list_mtimes, now, valid_time):
    """Whether apt's lists are younger than valid_time seconds: the newest Release/InRelease file decides (a host
    with none has no lists to trust)."""
    if not list_mtimes or not valid_time:
        return False
    return now - max(list_mtimes) < int(valid_time)


def release_file(name):
    return name.endswith(('_InRelease', '_Release'))
