# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether apt reads a set of sources files together, and which files its complaint is about. Pure: no module.

apt_source asks apt itself, before it writes anything: the host's sources.list and sources.list.d with the new files
in place are copied to a private folder and read by `apt-cache policy` with no package cache written and an empty
lists folder (argv()). apt then parses every source line and refuses a set it would refuse for real, such as two
files that name the same repository and suite with different Signed-By ("E: Conflicting values set for option
Signed-By regarding source URI SUITE: A != B"). apt names the source, not the files: explain() finds the files.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

SOURCES_LIST = '/etc/apt/sources.list'
SOURCES_D = '/etc/apt/sources.list.d/'

_CONFLICT_RE = re.compile(r'Conflicting values set for option (\S+) regarding source (\S+) (\S+): (.*?) != (.*?)\s*$')
_LIST_FILE_RE = re.compile(r'(?:list file|file) (/\S+?)(?=[ ,)]|$)')


def is_sources_file(name):
    """Whether apt reads a file of sources.list.d (apt: *.list and *.sources; other names it ignores)."""
    return name.endswith(('.list', '.sources'))


def after_change(host, files, remove):
    """The sources the host will have after the change: {path: text} of the host's (host: {path: text}), the files
    written replacing theirs, the removed ones gone. Only sources files count (preferences do not define sources)."""
    result = dict((path, text) for path, text in host.items() if path not in remove)
    for path, text in files.items():
        if path == SOURCES_LIST or (path.startswith(SOURCES_D) and is_sources_file(path)):
            result[path] = text
    return result


def argv(source_list, source_parts, lists_dir):
    """apt-cache policy over a private copy of the sources: apt parses them all, writes no cache, reads no list."""
    return ['apt-cache', 'policy', '-o', 'Dir::Etc::SourceList=%s' % source_list,
            '-o', 'Dir::Etc::SourceParts=%s' % source_parts, '-o', 'Dir::State::Lists=%s' % lists_dir,
            '-o', 'Dir::Cache::pkgcache=', '-o', 'Dir::Cache::srcpkgcache=']


def works_argv():
    """apt-cache policy over the host's real sources and lists, writing no cache: it succeeds only when apt reads
    every sources file and list, which every apt command does first."""
    return ['apt-cache', 'policy', '-o', 'Dir::Cache::pkgcache=', '-o', 'Dir::Cache::srcpkgcache=']


def failed(rc, output):
    """Whether apt refused the sources: a non-zero exit, or an E: line (apt-cache policy exits 0 on some)."""
    return rc != 0 or any(line.strip().startswith('E:') for line in (output or '').splitlines())


def error_lines(output):
    return [line.strip() for line in (output or '').splitlines() if line.strip().startswith(('E:', 'W:'))]


def lines_of(path, text):
    """[(uri, suite, signed_by)] of the deb (and deb-src) sources of a .list file or a deb822 .sources file."""
    found = []
    if path.endswith('.sources'):
        for stanza in re.split(r'\n\s*\n', text or ''):
            fields = {}
            key = None
            for raw in stanza.splitlines():
                if raw.startswith('#'):
                    continue
                if raw[:1] in (' ', '\t') and key:
                    fields[key] += '\n' + raw.strip()
                    continue
                if ':' in raw:
                    key, value = raw.split(':', 1)
                    key = key.strip().lower()
                    fields[key] = value.strip()
            if fields.get('enabled', 'yes').lower() == 'no':
                continue
            signed = fields.get('signed-by', '').splitlines()[0] if fields.get('signed-by') else None
            for uri in fields.get('uris', '').split():
                for suite in fields.get('suites', '').split():
                    found.append((uri, suite, signed))
        return found
    for raw in (text or '').splitlines():
        line = raw.split('#', 1)[0].strip()
        match = re.match(r'^deb(?:-src)?\s+(?:\[([^\]]*)\]\s+)?(\S+)\s+(\S+)', line)
        if match:
            options = dict(item.split('=', 1) for item in (match.group(1) or '').split() if '=' in item)
            found.append((match.group(2), match.group(3), options.get('signed-by')))
    return found


def _same_uri(left, right):
    return left.rstrip('/') == right.rstrip('/')


def conflicts(output, sources):
    """apt's Conflicting-values lines with the files that name that source: [{'option', 'uri', 'suite', 'values':
    [a, b], 'files': [paths], 'line'}], from apt's output and the sources it read ({path: text})."""
    found = []
    for line in error_lines(output):
        match = _CONFLICT_RE.search(line)
        if not match:
            continue
        option, uri, suite, first, second = match.groups()
        files = [path for path, text in sorted(sources.items())
                 if any(_same_uri(uri, line_uri) and suite == line_suite
                        for line_uri, line_suite, _signed in lines_of(path, text))]
        found.append({'option': option, 'uri': uri, 'suite': suite, 'values': [first, second], 'files': files,
                      'line': line})
    return found


def real_paths(output, mapping):
    """apt's output about a private copy, with the private folder's paths put back to the host's ({private: real})."""
    for mine, theirs in sorted(mapping.items(), key=lambda item: -len(item[0])):
        output = output.replace(mine, theirs)
    return output


def explain(output, sources, written=()):
    """One sentence: what apt refused and in which files, the ones this run would write told apart."""
    parts = []
    for item in conflicts(output, sources):
        files = ', '.join('%s (%s)' % (path, 'this run would write it' if path in written else 'already on the host')
                          for path in item['files']) or 'files apt names no file of'
        parts.append('%s and %s are set for %s of the same repository %s %s in %s' % (
            item['values'][0], item['values'][1], item['option'], item['uri'], item['suite'], files))
    if parts:
        return '; '.join(parts)
    lines = error_lines(output)
    return '; '.join(lines) if lines else 'apt-cache policy failed without a message'


def foreign_files(output, sources, written):
    """The files of apt's complaint that this run does not write: the host's own that conflict with the new ones."""
    named = set()
    for item in conflicts(output, sources):
        named.update(item['files'])
    for line in error_lines(output):
        named.update(match.group(1) for match in _LIST_FILE_RE.finditer(line))
    return sorted(path for path in named if path not in written)
