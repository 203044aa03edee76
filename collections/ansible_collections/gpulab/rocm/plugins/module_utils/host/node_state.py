# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Readers of a node's state for the probe (gpulab.rocm.node_probe): files, packages, users, apt, alternatives.

Read-only. Each reader takes the filesystem root (tests point it at a fixture tree) and returns plain data; the
parsers among them are pure functions of text. Nothing here runs a command: the module passes command output in.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import hashlib
import os
import re
import stat

# Every file the roles manage; the probe reads each, the planner compares them with what is wanted.
SOURCES_FILE = '/etc/apt/sources.list.d/rocm.list'
AMDGPU_SOURCES_FILE = '/etc/apt/sources.list.d/amdgpu.list'
# The ROCm Core SDK's deb822 sources, named as AMD's 10.0 install page names it.
CORE_SOURCES_FILE = '/etc/apt/sources.list.d/amdrocm-stable.sources'
# The sources files the roles write: the probe reads the keyrings they name and whether apt has their lists.
ROCM_SOURCES_FILES = (SOURCES_FILE, AMDGPU_SOURCES_FILE, CORE_SOURCES_FILE)
PIN_FILE = '/etc/apt/preferences.d/rocm-pin-600'
KEYRING = '/etc/apt/keyrings/rocm.gpg'
# The Core SDK's keyring (rocm_release.CORE_KEYRING; the probe reads both even where no source names them yet).
CORE_KEYRING = '/etc/apt/keyrings/amdrocm.gpg'
PROFILE_FILE = '/etc/profile.d/rocm.sh'
LDCONFIG_FILE = '/etc/ld.so.conf.d/rocm.conf'
ADDUSER_CONF = '/etc/adduser.conf'
# gpulab.rocm.apt_source keeps the last sources apt accepted here while it changes them (see that module).
APT_JOURNAL = '/var/lib/gpulab-rocm/apt-source.journal'
# rocm_driver touches this once it rebooted the host for a new driver, or marked the reboot (module_utils/plan_driver).
DRIVER_REBOOT_RECORD = '/var/lib/gpulab-rocm/driver-reboot'
MANAGED_FILES = (SOURCES_FILE, AMDGPU_SOURCES_FILE, CORE_SOURCES_FILE, PIN_FILE, PROFILE_FILE, LDCONFIG_FILE,
                 ADDUSER_CONF)
# Files read whole: small, root-owned, no secrets. Larger ones are described by checksum only.
CONTENT_LIMIT = 256 * 1024
# The most bytes root reads of any file it checksums (a user's ~/.bashrc can be a 64 GiB sparse file: no disk, no
# quota); a larger file gets no checksum ('sha1': None, 'over_limit': True) and counts as differing.
HASH_LIMIT = 16 << 20
# The most of a user's ~/.bashrc the probe reads for the markers; a larger one is left alone, with a notice.
BASHRC_LIMIT = 4 << 20
# The most of a keyring the probe reads (as the key download: a signing key is a few KiB).
KEYRING_LIMIT = 1 << 20
# The most of one of apt's package lists the probe searches (Ubuntu's universe list is about 100 MiB).
PACKAGES_LIMIT = 1 << 30
BASHRC_BEGIN = '# BEGIN gpulab.rocm environment'
BASHRC_END = '# END gpulab.rocm environment'

_ARCHES = {'x86_64': 'amd64', 'aarch64': 'arm64', 'ppc64le': 'ppc64el', 's390x': 's390x', 'i686': 'i386'}


def at(root, path):
    """path (absolute, as on the host) under root."""
    return os.path.join(root, path.lstrip('/')) if root not in ('', '/') else path


def parse_os_release(text):
    """/etc/os-release -> {'id', 'distribution', 'version_id', 'codename', 'name'} (Ansible's distribution names)."""
    values = {}
    for line in (text or '').splitlines():
        match = re.match(r'^([A-Z_][A-Z0-9_]*)=(.*)$', line.strip())
        if match:
            value = match.group(2).strip()
            if len(value) >= 2 and value[0] == value[-1] and value[0] in '"\'':
                value = value[1:-1]
            values[match.group(1)] = value
    os_id = values.get('ID', '').lower()
    names = {'debian': 'Debian', 'ubuntu': 'Ubuntu', 'linuxmint': 'Linux Mint', 'pop': 'Pop!_OS'}
    return {
        'id': os_id or None,
        'distribution': names.get(os_id) or (os_id.capitalize() if os_id else None),
        'version_id': values.get('VERSION_ID') or None,
        'codename': values.get('VERSION_CODENAME') or values.get('UBUNTU_CODENAME') or None,
        'name': values.get('PRETTY_NAME') or None,
    }


SUDO_PATHS = ('/usr/bin/sudo', '/bin/sudo', '/usr/sbin/sudo', '/usr/local/bin/sudo')


def os_facts(root='/', uname_release=None, machine=None):
    """OS, kernel and architecture; 'version' is what apt suites are keyed on (12 for Debian, 22.04 for Ubuntu)."""
    info = parse_os_release(read_text(at(root, '/etc/os-release')) or read_text(at(root, '/usr/lib/os-release')))
    version = info['version_id']
    if info['distribution'] == 'Debian' and version:
        version = version.split('.')[0]
    point = (read_text(at(root, '/etc/debian_version')) or '').strip() if info['distribution'] == 'Debian' else None
    info.update(
        version=version,
        full_version=point if point and point[:1].isdigit() else info['version_id'],
        kernel=uname_release,
        architecture=_ARCHES.get(machine or '', machine),
        machine_id=(read_text(at(root, '/etc/machine-id')) or '').strip() or None,
        euid=os.geteuid() if hasattr(os, 'geteuid') else None,
        # Whether sudo is installed: the roles write users' files as the user, through sudo or else su (root needs
        # no password for either; a minimal Ubuntu or Debian host may lack sudo).
        sudo=any(os.path.isfile(at(root, path)) and os.access(at(root, path), os.X_OK) for path in SUDO_PATHS),
        # Whether systemd runs the host (sd_booted(3): this folder exists): a container's has none.
        systemd=os.path.isdir(at(root, '/run/systemd/system')),
    )
    return info


def read_text(path, limit=CONTENT_LIMIT):
    """Text of a regular file (its first limit bytes), never following a symlink; None when absent or not a regular
    file."""
    data = read_bytes(path, limit)
    return None if data is None else data[:limit].decode('utf-8', 'replace')


def describe_file(path, with_content=True):
    """{'exists', 'type', 'mode', 'uid', 'gid', 'size', 'sha1', 'content'} of one path, without following it.

    type: file, symlink, directory or other; sha1 and content only for regular files (content up to CONTENT_LIMIT).
    """
    try:
        info = os.lstat(path)
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ENOTDIR):
            return {'exists': False, 'type': None}
        return {'exists': None, 'type': None, 'error': str(exc)}
    kind = file_type(info.st_mode)
    result = {'exists': True, 'type': kind, 'mode': '%04o' % stat.S_IMODE(info.st_mode), 'uid': info.st_uid,
              'gid': info.st_gid, 'size': info.st_size, 'mtime': info.st_mtime}
    if kind == 'symlink':
        result['target'] = os.readlink(path)
    if kind == 'file':
        digest = hashlib.sha1()
        head = read_bytes(path, HASH_LIMIT, digest.update)
        if head is not None and len(head) > HASH_LIMIT:
            result.update(sha1=None, over_limit=True)
        elif head is not None:
            result['sha1'] = digest.hexdigest()
            if with_content and len(head) <= CONTENT_LIMIT:
                result['content'] = head.decode('utf-8', 'replace')
    return result


def file_type(mode):
    """The kind of a file from its lstat mode, in words a message can use."""
    for test, name in ((stat.S_ISLNK, 'symlink'), (stat.S_ISREG, 'file'), (stat.S_ISDIR, 'directory'),
                       (stat.S_ISFIFO, 'FIFO'), (stat.S_ISSOCK, 'socket'), (stat.S_ISCHR, 'character device'),
                       (stat.S_ISBLK, 'block device')):
        if test(mode):
            return name
    return 'other'


def read_bytes(path, limit, feed=None, keep=True):
    """At most limit + 1 bytes of a regular file (more than limit: the file is larger), never following a link and
    never blocking on a FIFO; None when absent or not a regular file. feed(chunk) sees the first limit bytes as
    they are read (a checksum without a second copy); keep=False keeps none of them (b'' or b'x' (over the limit)
    is returned: feed had it all). The one bounded reader of the probe: every file root reads where a user may have
    put something goes through here or read_text()."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, 'O_NOFOLLOW', 0) | getattr(os, 'O_NONBLOCK', 0))
    except OSError:
        return None
    chunks, size = [], 0
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            if feed is not None:
                feed(chunk[:limit - size])
            if keep:
                chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    return b''.join(chunks) if keep else (b'x' if size > limit else b'')


def parse_dpkg_status(text):
    """/var/lib/dpkg/status -> {name: [abbrev, version]} of every package dpkg knows that is not purged.

    abbrev is dpkg-query's ${db:Status-Abbrev} (want, state, error): 'ii ', 'hi ' (held), 'rc ' (config files
    left), 'iU ' (unpacked), 'iF ' (half configured), 'iH ' (half installed), 'iRR'... Of several architectures of
    one name, the installed one wins.
    """
    want_codes = {'unknown': 'u', 'install': 'i', 'hold': 'h', 'deinstall': 'r', 'purge': 'p'}
    state_codes = {'not-installed': 'n', 'config-files': 'c', 'half-installed': 'H', 'unpacked': 'U',
                   'half-configured': 'F', 'triggers-awaited': 'W', 'triggers-pending': 't', 'installed': 'i'}
    packages = {}
    for stanza in re.split(r'\n\s*\n', text or ''):
        fields = {}
        for line in stanza.splitlines():
            if line[:1] in (' ', '\t') or ':' not in line:
                continue
            key, value = line.split(':', 1)
            if key in ('Package', 'Status', 'Version'):
                fields[key] = value.strip()
        name, status = fields.get('Package'), fields.get('Status', '').split()
        if not name or len(status) != 3:
            continue
        want, flag, state = status
        code = state_codes.get(state, '?')
        if code == 'n':
            continue
        abbrev = want_codes.get(want, '?') + code + (' ' if flag == 'ok' else 'R')
        previous = packages.get(name)
        if previous is None or previous[0][1] != 'i':
            packages[name] = [abbrev, fields.get('Version', '')]
    return packages


def dpkg_pending(root, packages):
    """What an interrupted dpkg run left: packages neither installed nor removed, and a non-empty journal."""
    half = sorted(name for name, (abbrev, _version) in packages.items() if abbrev[1] not in 'inc' or abbrev[2] != ' ')
    updates = at(root, '/var/lib/dpkg/updates')
    try:
        journal = sorted(entry for entry in os.listdir(updates) if entry[:1].isdigit())
    except OSError:
        journal = []
    return {'packages': half, 'journal': bool(journal)}


def alternative(root, name):
    """update-alternatives' state of one link group: {'mode', 'value', 'choices'}; None when not registered."""
    text = read_text(at(root, '/var/lib/dpkg/alternatives/' + name))
    if text is None:
        return None
    lines = text.split('\n')
    mode = lines[0].strip() if lines else None
    # Header: mode, link, then (slave name, slave link) pairs until a blank line; then per choice: path, priority,
    # one line per slave.
    position = 2
    slaves = 0
    while position < len(lines) and lines[position].strip():
        position += 2
        slaves += 1
    position += 1
    choices = []
    while position < len(lines) and lines[position].strip():
        choices.append(lines[position].strip())
        position += 2 + slaves
    try:
        value = os.readlink(at(root, '/etc/alternatives/' + name))
    except OSError:
        value = None
    return {'mode': mode, 'value': value, 'choices': choices}


def parse_ldconfig_p(text):
    """`ldconfig -p` -> the set of library paths in the linker cache."""
    paths = set()
    for line in (text or '').splitlines():
        if '=>' in line:
            paths.add(line.split('=>', 1)[1].strip())
    return paths


def ldconfig_state(root, conf_path, cached_paths):
    """The directories of a linker conf file, and the shared libraries in them that the linker cache lacks."""
    text = read_text(at(root, conf_path))
    dirs = [line.strip() for line in (text or '').splitlines()
            if line.strip() and not line.strip().startswith('#') and not line.strip().startswith('include')]
    missing = []
    for directory in dirs:
        try:
            names = sorted(os.listdir(at(root, directory)))
        except OSError:
            continue
        for entry in names:
            # What ldconfig caches: lib*.so.N (sonames); plain lib*.so links are for the build tools.
            if re.match(r'^lib.+\.so\.\d', entry) and os.path.join(directory, entry) not in cached_paths:
                missing.append(os.path.join(directory, entry))
    return {'dirs': dirs, 'missing': missing[:50], 'missing_count': len(missing)}


def disk_free(root, path):
    """Free bytes (for an unprivileged user too, as df's Available) on the filesystem of path or its nearest parent."""
    checked = path
    while checked and not os.path.exists(at(root, checked)):
        parent = os.path.dirname(checked.rstrip('/')) or '/'
        if parent == checked:
            break
        checked = parent
    try:
        info = os.statvfs(at(root, checked or '/'))
    except OSError as exc:
        return {'path': path, 'checked': checked, 'free_bytes': None,
                'error': 'cannot read the free space of %s: %s' % (checked, exc)}
    return {'path': path, 'checked': checked, 'free_bytes': info.f_bavail * info.f_frsize, 'error': None}


def secure_boot(sysfs_root):
    """Secure Boot from the SecureBoot EFI variable (4 attribute bytes, then 1 = on); None without EFI variables."""
    path = os.path.join(sysfs_root, 'firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-e0b1b14db5a2')
    data = read_bytes(path, 4096)
    if not data or len(data) < 5:
        return None
    return bool(bytearray(data)[-1])


def source_lines(text):
    """The one-line apt sources of a .list file: [{'options', 'uri', 'suite', 'components'}] (deb lines only)."""
    lines = []
    for raw in (text or '').splitlines():
        line = raw.split('#', 1)[0].strip()
        match = re.match(r'^deb\s+(?:\[([^\]]*)\]\s+)?(\S+)\s+(\S+)(.*)$', line)
        if match:
            options = dict(item.split('=', 1) for item in (match.group(1) or '').split() if '=' in item)
            lines.append({'options': options, 'uri': match.group(2), 'suite': match.group(3),
                          'components': match.group(4).split()})
    return lines


def deb822_sources(text):
    """The deb sources of a deb822 .sources file (sources.list(5)) in source_lines()' form: one entry per URI and
    suite of each stanza of type deb that is not disabled, its Signed-By (when a path or fingerprints, not a key
    block) and Architectures as the one-line options signed-by and arch."""
    found = []
    for stanza in re.split(r'\n[ \t]*\n', text or ''):
        fields, key = {}, None
        for raw in stanza.splitlines():
            if raw.startswith('#'):
                continue
            if raw[:1] in (' ', '\t') and key:
                fields[key] += '\n' + raw.strip()
            elif ':' in raw:
                key, value = raw.split(':', 1)
                key = key.strip().lower()
                fields[key] = value.strip()
        if 'deb' not in fields.get('types', '').split() or fields.get('enabled', 'yes').lower() == 'no':
            continue
        options = {}
        signed_by = fields.get('signed-by', '').strip()
        if signed_by and '\n' not in signed_by:
            options['signed-by'] = signed_by
        if fields.get('architectures'):
            options['arch'] = ','.join(fields['architectures'].split())
        for uri in fields.get('uris', '').split():
            for suite in fields.get('suites', '').split():
                found.append({'options': dict(options), 'uri': uri, 'suite': suite,
                              'components': fields.get('components', '').split()})
    return found


def sources_of(path, text):
    """The deb sources of one file of sources.list.d by its name: deb822 for *.sources, one-line for *.list."""
    return deb822_sources(text) if path.endswith('.sources') else source_lines(text)


def uri_to_filename(uri):
    """apt's URItoFileName: the name of a list file in /var/lib/apt/lists for a URI (apt-pkg/contrib/strutl.cc).

    The scheme and any user:password@ go; the characters apt quotes become %XX; '/' becomes '_'.
    """
    rest = re.sub(r'^[A-Za-z][A-Za-z0-9+.-]*:(//)?', '', uri)
    if '@' in rest.split('/', 1)[0]:
        rest = rest.split('@', 1)[1]
    quoted = []
    for char in rest:
        code = ord(char)
        if char in '\\|{}[]<>"^~_=!@#$%^&*' or code <= 0x20 or code >= 0x7F:
            quoted.extend('%%%02x' % byte for byte in char.encode('utf-8'))
        else:
            quoted.append(char)
    return ''.join(quoted).replace('/', '_')


def release_list_file(uri, suite):
    """The InRelease list file apt keeps for one source line (a flat suite 'x/' has no dists/)."""
    base = uri.rstrip('/')
    if suite.endswith('/'):
        return uri_to_filename('%s/%sInRelease' % (base, suite))
    return uri_to_filename('%s/dists/%s/InRelease' % (base, suite))


def apt_lists(root, source_texts):
    """For each source of the given sources files ({path: text}, .list or .sources): its InRelease list file and
    whether apt has it.

    Also the newest Release list file of any source (how fresh the distribution's lists are).
    """
    lists_dir = at(root, '/var/lib/apt/lists')
    lists = []
    for path, text in sorted(source_texts.items()):
        for line in sources_of(path, text):
            name = release_list_file(line['uri'], line['suite'])
            full = os.path.join(lists_dir, name)
            lists.append({'source_file': path, 'uri': line['uri'], 'suite': line['suite'], 'file': name,
                          'exists': os.path.exists(full) or os.path.exists(full[:-len('InRelease')] + 'Release')})
    newest = None
    try:
        for entry in os.listdir(lists_dir):
            if entry.endswith('Release'):
                mtime = os.stat(os.path.join(lists_dir, entry)).st_mtime
                newest = mtime if newest is None else max(newest, mtime)
    except OSError:
        pass
    return {'sources': lists, 'newest_release_mtime': newest}


def has_package_lists(root):
    """Whether apt has any package list at all (a fresh container or cloud image has none until apt-get update)."""
    try:
        return any(entry.endswith('_Packages') or '_Packages.' in entry
                   for entry in os.listdir(at(root, '/var/lib/apt/lists')))
    except OSError:
        return False


def _package_search(found, wanted, overlap):
    """A reader of one list's pieces that adds to found each wanted name whose needle it sees, across two pieces."""
    state = {'tail': b'\n'}

    def search(chunk):
        data = state['tail'] + chunk
        found.update(name for name, needle in wanted.items() if name not in found and needle in data)
        state['tail'] = data[-overlap:]
    return search


def listed_packages(root, names):
    """The names among `names` that some package list of apt offers (its *_Packages files), read without building
    apt's cache: a byte search for the "Package: NAME" line of each. Compressed lists are not read."""
    wanted = dict((name, ('\nPackage: %s\n' % name).encode('utf-8')) for name in names)
    found = set()
    lists_dir = at(root, '/var/lib/apt/lists')
    try:
        entries = sorted(os.listdir(lists_dir))
    except OSError:
        return found
    overlap = max([len(needle) for needle in wanted.values()] or [0])
    for entry in entries:
        if not entry.endswith('_Packages') or len(found) == len(wanted):
            continue
        # Root's own files (apt writes them), read in 1 MiB pieces (a list of every Ubuntu package is some hundred
        # MiB), each searched with the end of the one before, and no more than PACKAGES_LIMIT of one file.
        read_bytes(os.path.join(lists_dir, entry), PACKAGES_LIMIT, _package_search(found, wanted, overlap), keep=False)
    return found


_CONFLICT_RE = re.compile(r'Conflicting values set for option \S+ regarding source (\S+)')


def apt_source_error(root, text):
    """apt's own lines about sources it could not read (Malformed entry ... in list file X, Conflicting values
    ... regarding source URL, ...), each Conflicting line with the files under sources.list.d that name the URL
    (apt names the source, not the file); None when apt said nothing of the kind."""
    lines = [line.strip() for line in (text or '').splitlines() if line.strip().startswith(('E:', 'W:'))]
    wanted = [line for line in lines if 'Malformed' in line or 'Conflicting values' in line
              or 'could not be read' in line or 'list file' in line or 'sources.list' in line]
    if not wanted:
        return None
    folder = at(root, '/etc/apt/sources.list.d')
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        names = []
    shown = []
    for line in wanted:
        match = _CONFLICT_RE.search(line)
        if match:
            uri = match.group(1).rstrip('/').rstrip(':')
            holders = ['/etc/apt/sources.list.d/' + name for name in names if name.endswith(('.list', '.sources'))
                       and uri in (read_text(os.path.join(folder, name)) or '')]
            line += ' (named in %s)' % ', '.join(holders) if holders else ''
        shown.append(line)
    return '; '.join(shown)


def parse_simulated_removals(text):
    """`apt-get --simulate autoremove` (or purge) -> the package names apt would remove ("Remv name [version]")."""
    return sorted(set(match.group(1) for match in re.finditer(r'^(?:Remv|Purg) (\S+)', text or '', re.M)))


def bashrc_block(path, text):
    """The gpulab.rocm block of a user's ~/.bashrc, never the rest of the file (it is the user's, and may hold
    secrets): {'block': text between the markers or None, 'markers': 'none' | 'one' | 'broken' | 'inexact'}.

    A marker counts only as ansible.builtin.blockinfile (the writer) matches it: the whole line, ended by '\n'.
    A line that is a marker but for spaces around it, a '\r' or a missing last newline would not be found by the
    writer, which would append a second block: 'inexact', with the line numbers, and the file is left alone."""
    lines = (text or '').split('\n')
    # The last element has no '\n' after it: a marker there is not one blockinfile matches.
    begins = [i for i, line in enumerate(lines[:-1]) if line == BASHRC_BEGIN]
    ends = [i for i, line in enumerate(lines[:-1]) if line == BASHRC_END]
    near = [i + 1 for i, line in enumerate(lines) if line.strip() in (BASHRC_BEGIN, BASHRC_END)
            and (i in begins) == (i in ends)]
    if near:
        return {'block': None, 'markers': 'inexact', 'inexact_lines': near}
    if not begins and not ends:
        return {'block': None, 'markers': 'none'}
    if len(begins) == 1 and len(ends) == 1 and begins[0] < ends[0]:
        return {'block': '\n'.join(lines[begins[0] + 1:ends[0]]), 'markers': 'one'}
    return {'block': None, 'markers': 'broken', 'begin_lines': [i + 1 for i in begins],
            'end_lines': [i + 1 for i in ends]}


# --- container engines (rocm_containers) --------------------------------------------------------------------------

DOCKER_DAEMON_JSON = '/etc/docker/daemon.json'
CDI_DIRS = ('/etc/cdi', '/var/run/cdi')
# The spec files the engines read (the CDI library reads .json and .yaml files of these folders).
_CDI_FILE = re.compile(r'^[A-Za-z0-9][A-Za-z0-9._-]*\.(json|yaml|yml)$')
_CDI_KIND = re.compile(r'^\s*"?kind"?\s*:\s*"?([A-Za-z0-9./_-]+)"?\s*,?\s*$', re.M)
DRM_MAJOR = 226


def device_node(path):
    """{'exists', 'type': char|block|symlink|directory|file|other, 'major', 'minor', 'mode', 'uid', 'gid'} of one
    device path, without following it."""
    try:
        info = os.lstat(path)
    except OSError:
        return {'exists': False, 'type': None}
    mode = info.st_mode
    kind = ('char' if stat.S_ISCHR(mode) else 'block' if stat.S_ISBLK(mode) else 'symlink' if stat.S_ISLNK(mode)
            else 'directory' if stat.S_ISDIR(mode) else 'file' if stat.S_ISREG(mode) else 'other')
    result = {'exists': True, 'type': kind, 'mode': '%04o' % stat.S_IMODE(mode), 'uid': info.st_uid,
              'gid': info.st_gid}
    if kind in ('char', 'block'):
        result.update(major=os.major(info.st_rdev), minor=os.minor(info.st_rdev))
    return result


def gpu_device_nodes(root='/'):
    """/dev/kfd and every entry of /dev/dri, each described by device_node()."""
    nodes = {'/dev/kfd': device_node(at(root, '/dev/kfd'))}
    try:
        names = sorted(os.listdir(at(root, '/dev/dri')))
    except OSError:
        names = []
    for name in names:
        nodes['/dev/dri/' + name] = device_node(at(root, '/dev/dri/' + name))
    return nodes


def cdi_specs(root='/'):
    """The CDI spec files of /etc/cdi and /var/run/cdi: {path: describe_file(...) plus 'kind'} (the kind read from
    the text, JSON or YAML; None when no kind line is found). Also each folder as {'folder': describe_file}."""
    specs, folders = {}, {}
    for folder in CDI_DIRS:
        folders[folder] = describe_file(at(root, folder), with_content=False)
        try:
            names = sorted(os.listdir(at(root, folder)))
        except OSError:
            continue
        for name in names:
            if not _CDI_FILE.match(name):
                continue
            path = folder + '/' + name
            info = describe_file(at(root, path))
            match = _CDI_KIND.search(info.get('content') or '')
            info['kind'] = match.group(1) if match else None
            specs[path] = info
    return specs, folders


def parse_engine_version(text):
    """`podman --version` ('podman version 5.4.2') or `docker --version` ('Docker version 26.1.5+dfsg1, build
    a72d7cd') -> '5.4.2' / '26.1.5+dfsg1'; None when no version is printed."""
    match = re.search(r'\bversion\s+v?(\d+\.\d+(?:\.\d+)?[^\s,]*)', text or '', re.I)
    return match.group(1) if match else None


def process_start_time(proc_root, pid):
    """When a process started, in seconds since the epoch (its /proc stat start time plus the boot time); None."""
    stat_text = read_text(os.path.join(proc_root, str(pid), 'stat')) if pid else None
    boot = read_text(os.path.join(proc_root, 'stat'))
    try:
        ticks = int(stat_text.rsplit(')', 1)[1].split()[19])
        btime = int(re.search(r'^btime\s+(\d+)$', boot, re.M).group(1))
        return btime + float(ticks) / os.sysconf('SC_CLK_TCK')
    except (AttributeError, IndexError, ValueError, TypeError, OSError):
        return None


def driver_boot_state(root, proc_root, package):
    """{'driver_installed_at': when dpkg last unpacked package (its .list file), 'booted_at': this boot (btime),
    'reboot_recorded_at': when rocm_driver last rebooted or marked the host for it (DRIVER_REBOOT_RECORD),
    'reboot_recorded_for': the driver code that record names (None in a record from before it named one),
    'reboot_marked': whether /run/reboot-required exists}; None for what is unknown."""
    def mtime(path):
        try:
            return os.lstat(at(root, path)).st_mtime
        except OSError:
            return None
    match = re.search(r'^btime\s+(\d+)$', read_text(os.path.join(proc_root, 'stat')) or '', re.M)
    # The record's text names the driver the reboot was for (the code its amdgpu-dkms version carries, 30300400):
    # a node that came back without that driver is not rebooted again for it (planning/plan_driver.py).
    record = (read_text(at(root, DRIVER_REBOOT_RECORD), limit=256) or '').split()
    return {'driver_installed_at': mtime('/var/lib/dpkg/info/%s.list' % package),
            'booted_at': int(match.group(1)) if match else None,
            'reboot_recorded_at': mtime(DRIVER_REBOOT_RECORD),
            'reboot_recorded_for': record[-1] if len(record) > 1 and record[-1].isdigit() else None,
            'reboot_marked': os.path.lexists(at(root, '/run/reboot-required'))}


# --- the kernel side of the driver (rocm_driver's guard, planning/driver_guard.py) ----------------------------------
# Every path is read under a root (the probe's kernel_root: / on a host; tests and the Molecule scenario lay out a
# tree elsewhere). All of it is root's own (the kernel packages, DKMS); still, entries are taken by lstat, a link is
# read as a link (readlink) and resolved under the root, never followed out of it.

MODULES_DIR = '/lib/modules'
DKMS_DIR = '/var/lib/dkms'
BOOT_DIR = '/boot'
# Where each kernel's amdgpu module lies: the kernel's own (in-tree) build, and the one DKMS installs on Debian and
# Ubuntu (dkms override_dest_module_location: /updates/dkms for debian* and ubuntu*).
AMDGPU_IN_TREE = 'kernel/drivers/gpu/drm/amd/amdgpu'
AMDGPU_DKMS = 'updates/dkms'
# A module file as the kernel packages and DKMS write it: plain, or compressed as the kernel's config says (Ubuntu
# from 23.10: zstd; Debian: xz).
KO_SUFFIXES = ('', '.zst', '.xz', '.gz')
# The most of each listing the probe takes (a host has a handful of kernels and DKMS trees).
KERNEL_LIMIT = 64
DKMS_LIMIT = 64
# The packages that may hold a kernel's image, by the names Debian and Ubuntu give them.
IMAGE_PACKAGES = ('linux-image-%s', 'linux-image-unsigned-%s', 'linux-image-%s-unsigned')


def kernel_sort_key(release):
    """A kernel release as `ls -v` and dpkg order it: numbers by value ('6.8.0-101-generic' after '6.8.0-45-generic',
    '6.14' after '6.8')."""
    return [(0, int(part), '') if part.isdigit() else (1, 0, part) for part in re.findall(r'\d+|\D+', release)]


def _lstat(path):
    try:
        return os.lstat(path)
    except OSError:
        return None


def _under_root(root, link_path, target):
    """Where a link at link_path (a path on the host) points, as a path under root: an absolute target is taken
    under root, a relative one beside the link."""
    if target.startswith('/'):
        return at(root, target)
    return os.path.join(os.path.dirname(at(root, link_path)), target)


def _host_path(root, target):
    """A link's absolute target that lies inside root (a tree made there with dkms --dkmstree/--sourcetree) as the
    path on the host it stands for; any other target as it is."""
    if target and root not in ('', '/') and target.startswith('/'):
        for base in set((root.rstrip('/'), os.path.realpath(root))):
            if target.startswith(base + '/'):
                return target[len(base):]
    return target


def _link_target(root, path):
    """A symlink's target (as written), or None when path is no symlink."""
    info = _lstat(at(root, path))
    if info is None or not stat.S_ISLNK(info.st_mode):
        return None
    try:
        return os.readlink(at(root, path))
    except OSError:
        return None


def installed_kernels(root='/'):
    """The kernel releases installed under /lib/modules, oldest first: each folder (not a link) with a modules.dep
    (depmod writes it when the kernel is installed, its package's removal deletes it, so a folder left with only
    DKMS leftovers does not count). The newest KERNEL_LIMIT."""
    folder = at(root, MODULES_DIR)
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    found = []
    for name in names:
        info = _lstat(os.path.join(folder, name))
        dep = _lstat(os.path.join(folder, name, 'modules.dep'))
        if info is not None and stat.S_ISDIR(info.st_mode) and dep is not None and stat.S_ISREG(dep.st_mode):
            found.append(name)
    return sorted(found, key=kernel_sort_key)[-KERNEL_LIMIT:]


def headers_packages(root, running):
    """The headers packages DKMS needs: the running kernel's, then every installed kernel's (oldest first)."""
    names = ['linux-headers-' + running]
    names += ['linux-headers-' + release for release in installed_kernels(root)
              if 'linux-headers-' + release not in names]
    return names


def module_file(root, release, folder, name='amdgpu.ko'):
    """The path (on the host) of a kernel's module file in one of its module folders, compressed or not; None."""
    base = '%s/%s/%s/%s' % (MODULES_DIR, release, folder, name)
    for suffix in KO_SUFFIXES:
        info = _lstat(at(root, base + suffix))
        if info is not None and stat.S_ISREG(info.st_mode):
            return base + suffix
    return None


def kernel_headers_present(root, release):
    """Whether the kernel's build folder has its headers: /lib/modules/<release>/build/include, which is what DKMS
    checks before it builds for a kernel (dkms_common.postinst, _check_kernel_dir). build is a link to
    /usr/src/linux-headers-<release> when the headers package is installed; resolved under root."""
    link = '%s/%s/build' % (MODULES_DIR, release)
    target = _link_target(root, link)
    path = _under_root(root, link, target) if target is not None else at(root, link)
    return os.path.isdir(os.path.join(path, 'include'))


def _module_files(folder):
    """The amdgpu.ko* in a DKMS module folder (a path here), or None."""
    for suffix in KO_SUFFIXES:
        info = _lstat(os.path.join(folder, 'amdgpu.ko' + suffix))
        if info is not None and stat.S_ISREG(info.st_mode):
            return 'amdgpu.ko' + suffix
    return None


def _listdir(path, limit):
    try:
        names = sorted(os.listdir(path))
    except OSError:
        return [], False
    return names[:limit], len(names) > limit


def dkms_trees(root='/'):
    """Every DKMS module tree under /var/lib/dkms (dkms's own layout: <module>/<version>/source links to
    /usr/src/<module>-<version>; <module>/<version>/<kernel>/<arch>/module holds what it built;
    <module>/kernel-<kernel>-<arch> links to the version installed for that kernel). Returns (trees, cut): each tree
    {'module', 'version', 'source' (the link's target, or None), 'source_ok' (the source has its dkms.conf),
    'built' ['<kernel>/<arch>'], 'installed' ['<kernel>/<arch>'], 'amdgpu_ko' {'<kernel>/<arch>': file name}};
    cut: a listing was longer than the probe takes."""
    base = at(root, DKMS_DIR)
    trees, cut = [], False
    modules, more = _listdir(base, DKMS_LIMIT)
    cut = cut or more
    for module in modules:
        folder = os.path.join(base, module)
        info = _lstat(folder)
        if info is None or not stat.S_ISDIR(info.st_mode):
            continue
        entries, more = _listdir(folder, DKMS_LIMIT)
        cut = cut or more
        installed = {}
        for entry in entries:
            if entry.startswith('kernel-'):
                target = _link_target(root, '%s/%s/%s' % (DKMS_DIR, module, entry))
                parts = (target or '').rstrip('/').split('/')
                if target and len(parts) >= 3:
                    # <version>/<kernel>/<arch> (dkms 3), or the same under an absolute path (older dkms).
                    installed.setdefault(parts[-3], []).append('%s/%s' % (parts[-2], parts[-1]))
        for version in entries:
            path = os.path.join(folder, version)
            info = _lstat(path)
            if version.startswith('kernel-') or version == 'original_module' or info is None \
                    or not stat.S_ISDIR(info.st_mode):
                continue
            source = _host_path(root, _link_target(root, '%s/%s/%s/source' % (DKMS_DIR, module, version)))
            source_path = _under_root(root, '%s/%s/%s/source' % (DKMS_DIR, module, version), source) \
                if source is not None else os.path.join(path, 'source')
            tree = {'module': module, 'version': version, 'source': source,
                    'source_ok': os.path.isfile(os.path.join(source_path, 'dkms.conf')),
                    'built': [], 'installed': sorted(installed.get(version, [])), 'amdgpu_ko': {}}
            kernels, more = _listdir(path, KERNEL_LIMIT)
            cut = cut or more
            for kernel in kernels:
                if kernel in ('source', 'build', 'log', 'tarball', 'driver_disk', 'rpm', 'deb'):
                    continue
                arches, _more = _listdir(os.path.join(path, kernel), 8)
                for arch in arches:
                    module_dir = os.path.join(path, kernel, arch, 'module')
                    info = _lstat(module_dir)
                    if info is None or not stat.S_ISDIR(info.st_mode):
                        continue
                    tree['built'].append('%s/%s' % (kernel, arch))
                    name = _module_files(module_dir)
                    if name:
                        tree['amdgpu_ko']['%s/%s' % (kernel, arch)] = name
            trees.append(tree)
    return trees, cut


def loaded_module(sysfs_root, name='amdgpu'):
    """The loaded module as sysfs shows it: {'present', 'initstate', 'version', 'srcversion', 'amdkcl'}. AMD's
    amdgpu-dkms build declares MODULE_VERSION (ROCm/amdgpu amdgpu_drv.c: MODULE_VERSION(AMDGPU_VERSION)), so it has
    a version file; the kernel's own amdgpu has none (upstream amdgpu_drv.c declares no MODULE_VERSION). The DKMS
    build also loads AMD's kernel compatibility layer, the module amdkcl (lsmod in ROCm/ROCm#5624)."""
    base = os.path.join(sysfs_root, 'module', name)

    def first_line(entry):
        text = (read_text(os.path.join(base, entry), limit=256) or '').strip()
        return text.splitlines()[0].strip() if text else None
    present = os.path.isdir(base)
    return {'present': present, 'initstate': first_line('initstate') if present else None,
            'version': first_line('version') if present else None,
            'srcversion': first_line('srcversion') if present else None,
            'amdkcl': os.path.isdir(os.path.join(sysfs_root, 'module', 'amdkcl'))}


def installed_package(packages, names):
    """The first of names that dpkg has installed, or None."""
    for name in names:
        if ((packages or {}).get(name) or ['  '])[0][1] == 'i':
            return name
    return None


def driver_state(root, sysfs_root, running, arch, packages):
    """The kernel side of the driver, for rocm_driver's guard and rocm_verify: the installed kernels (each with its
    headers package, whether its build folder has headers, its image package, its in-tree and its DKMS amdgpu.ko),
    the running kernel, every DKMS tree, the loaded amdgpu and the free space of /boot and /var/lib/dkms."""
    kernels = []
    for release in installed_kernels(root):
        kernels.append({
            'release': release,
            'headers_package': 'linux-headers-' + release,
            'headers_present': kernel_headers_present(root, release),
            'image_package': installed_package(packages, [name % release for name in IMAGE_PACKAGES]),
            'amdgpu_in_tree': module_file(root, release, AMDGPU_IN_TREE),
            'amdgpu_dkms': module_file(root, release, AMDGPU_DKMS),
        })
    trees, cut = dkms_trees(root)
    return {'root': root, 'running': running, 'arch': arch, 'kernels': kernels,
            'dkms': trees, 'dkms_cut': cut, 'loaded': loaded_module(sysfs_root),
            'free': {BOOT_DIR: disk_free(root, BOOT_DIR), DKMS_DIR: disk_free(root, DKMS_DIR)}}


def running_dkms_module(state):
    """The path (on the host) of the amdgpu.ko that DKMS built for the running kernel in the amdgpu tree installed
    for it (the one a reboot loads), or None: the probe reads its srcversion with modinfo."""
    wanted = '%s/%s' % (state.get('running'), state.get('arch'))
    for tree in state.get('dkms') or []:
        if tree['module'] == 'amdgpu' and wanted in tree['installed'] and wanted in tree['amdgpu_ko']:
            return '%s/amdgpu/%s/%s/module/%s' % (DKMS_DIR, tree['version'], wanted, tree['amdgpu_ko'][wanted])
    return None


def modinfo_field(text):
    """`modinfo -F <field> <file>` -> the value (its first line), or None."""
    lines = [line.strip() for line in (text or '').splitlines() if line.strip()]
    return lines[0] if lines else None


def docker_daemon(root='/', proc_root='/proc'):
    """Whether dockerd runs (its pid file names a live dockerd), its pid and when it started."""
    for path in ('/run/docker.pid', '/var/run/docker.pid'):
        text = (read_text(at(root, path)) or '').strip()
        if text.isdigit():
            comm = (read_text(os.path.join(proc_root, text, 'comm')) or '').strip()
            if comm == 'dockerd':
                return {'running': True, 'pid': int(text), 'started_at': process_start_time(proc_root, int(text))}
    return {'running': False, 'pid': None, 'started_at': None}


SUBID_FILES = ('/etc/subuid', '/etc/subgid')


def parse_subids(text):
    """/etc/subuid or /etc/subgid -> [[owner (a name or a uid), first id, count]] of its valid lines."""
    ranges = []
    for line in (text or '').splitlines():
        parts = line.strip().split(':')
        if len(parts) == 3 and parts[0] and parts[1].isdigit() and parts[2].isdigit():
            ranges.append([parts[0], int(parts[1]), int(parts[2])])
    return ranges


def local_users(root='/'):
    """The names in /etc/passwd (usermod changes only those; a directory service's users are its own)."""
    return sorted(set(line.split(':', 1)[0] for line in (read_text(at(root, '/etc/passwd'), limit=16 << 20) or '')
                      .splitlines() if line and not line.startswith(('#', '+', '-'))))


# --- environment modules (rocm_modules) ---------------------------------------------------------------------------

_RELEASE_DIR = re.compile(r'rocm-(\d+\.\d+\.\d+)')
# The ROCm Core SDK's releases, side by side by X.Y (patch releases in place): /opt/rocm/core-X.Y.
_CORE_DIR = re.compile(r'core-(\d+\.\d+)')
LDCONFIG_DIR = '/etc/ld.so.conf.d'


def modules_state(root='/', modulefiles_dirs=()):
    """What rocm_modules decides on: the releases under /opt (real folders /opt/rocm-X.Y.Z, and the ROCm Core SDK's
    /opt/rocm/core-X.Y, each with its .info/version; a Core release is keyed by its X.Y), where /opt/rocm points (or,
    where /opt/rocm is the Core SDK's folder, where its core link points), the rocm folder of each modulefile folder
    with its files (content included: they are small and the role tells its own from the lab's by their text), and
    the ROCm folders named in ld.so.conf.d."""
    releases = {}
    folders = [('/opt', _RELEASE_DIR)]
    if not os.path.islink(at(root, '/opt/rocm')):  # a legacy /opt/rocm is a link to one release, not Core's folder
        folders.append(('/opt/rocm', _CORE_DIR))
    for parent, pattern in folders:
        try:
            names = sorted(os.listdir(at(root, parent)))
        except OSError:
            names = []
        for name in names:
            match = pattern.fullmatch(name)
            prefix = parent + '/' + name
            if not match or not stat.S_ISDIR(os.lstat(at(root, prefix)).st_mode):
                continue
            version = (read_text(at(root, prefix + '/.info/version'), limit=4096) or '').strip()
            if version:
                releases[match.group(1)] = {'prefix': prefix, 'info_version': version.splitlines()[0]}
    # /opt/rocm -> /etc/alternatives/rocm -> /opt/rocm-X.Y.Z (rocm-core registers the alternative): where it ends.
    # The Core SDK: /opt/rocm is a folder, and /opt/rocm/core points at the newest /opt/rocm/core-X.Y.
    opt_rocm = None
    for link in ('/opt/rocm', '/opt/rocm/core'):
        if os.path.islink(at(root, link)):
            real = os.path.realpath(at(root, link))
            base = os.path.realpath(root) if root not in ('', '/') else ''
            opt_rocm = real[len(base):] if base and real.startswith(base + '/') else (None if base else real)
            break
    dirs = {}
    for folder in modulefiles_dirs:
        rocm = folder.rstrip('/') + '/rocm'
        entry = {'state': describe_file(at(root, folder), with_content=False),
                 'rocm': describe_file(at(root, rocm), with_content=False), 'files': {}}
        if entry['rocm'].get('type') == 'directory':
            for name in sorted(os.listdir(at(root, rocm))):
                entry['files'][name] = describe_file(at(root, rocm + '/' + name))
        dirs[folder] = entry
    linker = {}
    try:
        confs = sorted(name for name in os.listdir(at(root, LDCONFIG_DIR)) if name.endswith('.conf'))
    except OSError:
        confs = []
    for name in confs:
        lines = [line.strip() for line in (read_text(at(root, LDCONFIG_DIR + '/' + name)) or '').splitlines()
                 if line.strip().startswith('/opt/rocm')]
        if lines:
            linker[LDCONFIG_DIR + '/' + name] = lines
    return {'releases': releases, 'opt_rocm': opt_rocm, 'dirs': dirs, 'ld_so_conf': linker}


# The GPU device files a process holds open: amd-smi cannot change a partition while one does (Device busy).
GPU_DEVICE_RE = re.compile(r'^/dev/(kfd|dri/renderD\d{1,4}|dri/card\d{1,4})$')
HOLDER_PROCESSES = 4096   # /proc entries read at most
HOLDER_FDS = 4096         # file descriptors read at most per process


def gpu_holders(proc_root='/proc', processes=HOLDER_PROCESSES, fds=HOLDER_FDS):
    """The processes that hold /dev/kfd, a render node or a card open: [{'pid', 'comm', 'uid', 'devices'}], by pid;
    bounded (at most `processes` processes and `fds` descriptors each; 'truncated' in the second value when a bound
    was hit). Reads /proc/<pid>/fd links only (root sees every process's); never follows them."""
    holders, truncated = [], False
    try:
        pids = sorted(int(entry) for entry in os.listdir(proc_root) if entry.isdigit())
    except OSError:
        return [], False
    if len(pids) > processes:
        pids, truncated = pids[:processes], True
    for pid in pids:
        fd_dir = os.path.join(proc_root, str(pid), 'fd')
        try:
            entries = os.listdir(fd_dir)
        except OSError:
            continue  # gone, or not ours to read
        if len(entries) > fds:
            entries, truncated = entries[:fds], True
        devices = set()
        for entry in entries:
            try:
                target = os.readlink(os.path.join(fd_dir, entry))
            except OSError:
                continue
            if GPU_DEVICE_RE.match(target):
                devices.add(target)
        if devices:
            try:
                uid = os.stat(os.path.join(proc_root, str(pid))).st_uid
            except OSError:
                uid = None
            comm = (read_text(os.path.join(proc_root, str(pid), 'comm'), limit=64) or '').strip()
            holders.append({'pid': pid, 'comm': comm, 'uid': uid, 'devices': sorted(devices)})
    return holders, truncated
