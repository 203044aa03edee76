# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What an apt-get / dpkg failure means and what to do about it, from the messages they print.

classify(text) takes whatever a failed apt task left (the module's msg, stderr, stdout, in any order) and returns
{'kind': ..., 'reason': one sentence with the cause and the fix}. Pure: no module, no I/O.

The patterns are apt's and dpkg's own message strings (their message catalogues, `apt.mo`, `libapt-pkg6.0.mo`,
`dpkg.mo`; the real outputs in tests/unit/plugins/module_utils/fixtures/apt/). Messages are matched in English:
run apt with LC_ALL=C (Ansible's apt module does) for a reason in other words than the fallback.

Error lines are read first, then warnings (W:, N:): `apt-get update` reports an unreachable mirror as a warning,
but a warning about another repository must not hide the error that failed the run.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

# Warnings and notes (W:, N:) and apt's per-item progress lines (Err:, Ign:, Get:, Hit: and the indented lines under
# them): apt-get update reports an unreachable repository there and may still succeed; the summary says what failed.
_SECONDARY_RE = re.compile(r'^(W|N|I):|^(Err|Ign|Get|Hit):\d*\s')
# Lines that look like a failure but are not one (apt prints it for local .deb files, root or not).
_HARMLESS_RE = re.compile(r'Download is performed unsandboxed as root')
_HOLDER_RES = [
    re.compile(r'held by process (\d+(?: \([^)]*\))?)'),
    re.compile(r'locked by another process with pid (\d+)'),
]
_KEY_STATUS_RE = re.compile(
    r'\b(NO_PUBKEY|EXPKEYSIG|KEYEXPIRED|REVKEYSIG|BADSIG|ERRSIG|Missing key)\s+([0-9A-Fa-f]{8,64})')
_FREE_SPACE_RE = re.compile(r"You don't have enough free space in (\S+?)\.?$")

# "Could not get lock PATH. It is held by process N (name)" (apt 2.x), "Unable to lock directory PATH" (the lists and
# archives locks), "Unable to acquire the dpkg frontend lock (PATH)", "Unable to lock the administration directory (DIR)".
_LOCK_PATH_RES = [
    re.compile(r'Could not get lock (/\S+?)\.?(?:\s|$)'),
    re.compile(r'Unable to acquire the dpkg frontend lock \((/[^)]+)\)'),
    re.compile(r'Unable to lock the administration directory \((/[^)]+)\)'),
    re.compile(r'Unable to lock directory (/\S+)'),
]
# "dpkg: error processing package NAME (--configure):" then the reason on the indented line under it.
_DPKG_ERROR_RE = re.compile(r'^dpkg: error processing (?:package|archive) (\S+?)(?::\w+)? \((--[a-z-]+)\):?\s*$')
# dpkg's own progress lines (not what a package's script printed).
_DPKG_PROGRESS_RE = re.compile(r'^(Setting up|Unpacking|Preparing|Processing|Selecting|\(Reading|Removing|dpkg:|Errors were)')
# dpkg --audit's headings (dpkg 1.21 src/main/enquiry.c) and the state each one reports.
_AUDIT_HEADINGS = (
    ('half-configured', 'only half configured'),
    ('unpacked', 'unpacked but not yet configured'),
    ('half-installed', 'only half installed'),
    ('reinstreq', 'in a mess due to serious problems'),
    ('triggers-awaiting', 'awaiting processing of triggers'),
    ('triggers-pending', 'have been triggered, but the trigger processing'),
)
# The second letter of dpkg-query's ${db:Status-Abbrev}: the states a package is left in by an unfinished dpkg run.
UNFINISHED_STATES = {'U': 'unpacked', 'F': 'half-configured', 'H': 'half-installed', 'W': 'triggers-awaiting',
                     't': 'triggers-pending'}

KINDS = ('permission', 'lock', 'disk_full', 'package_failed', 'dpkg_interrupted', 'clock', 'release_expired', 'integrity', 'signature',
         'no_release', 'download', 'not_found', 'dependencies', 'other')


def _advice_signature(text, detail):
    keys = _KEY_STATUS_RE.findall(text)
    found = ' '.join('%s %s' % key for key in dict.fromkeys(keys))
    statuses = set(status for status, _keyid in keys)
    if 'BADSIG' in statuses:
        return ('integrity', 'The repository\'s Release file does not match its signature (%s): the mirror is in the '
                'middle of a sync or something on the way (a proxy, a cache) altered the file; nothing was installed. '
                'Wait for the mirror to finish syncing (or clear the proxy\'s cache, or use another mirror), then run '
                'again; do not turn signature checks off.' % (found or detail))
    if statuses & {'EXPKEYSIG', 'KEYEXPIRED'}:
        return ('The key that signs the repository has expired in the keyring apt uses (%s): vendors re-issue their '
                'key with a new expiry (AMD did several times), so download the key again: rocm_repo does when '
                'the primary key on disk has expired, so run again (an expired signing subkey it does not see: remove '
                'the keyring so that it is fetched), and check that signed-by names that keyring; do not turn '
                'signature checks off.'
                % (found or detail))
    if 'REVKEYSIG' in statuses:
        return ('The repository is signed with a key that its owner revoked (%s): the key URL or the repository '
                'is not the one you trust any more; check both with the vendor. Do not turn signature checks off.'
                % (found or detail))
    return ('apt could not verify the repository\'s signature (%s): the key in the keyring named by signed-by does '
            'not match the key that signed the repository (or the repository is not signed at all). Check that the '
            'key URL and the trusted fingerprints belong to this repository (rocm_repo_key_url, '
            'rocm_repo_key_fingerprints) and run again; do not turn signature checks off (trusted=yes).'
            % (detail if not found or found in detail else '%s; %s' % (detail, found)))


def _advice_free_space(text, detail):
    match = None
    for line in text.splitlines():
        match = _FREE_SPACE_RE.search(line.strip()) or match
    where = match.group(1) if match else '/var/cache/apt/archives'
    return ('There is not enough free space in %s for the packages (%s); apt checked before installing, so nothing '
            'was installed. Free space there (apt-get clean empties /var/cache/apt/archives), then run again.'
            % (where, detail))


def lock_held(text):
    """Which lock apt or dpkg could not take, from their messages: {'lock': 'lists' | 'dpkg' | 'archives' | 'other',
    'path': the lock file, 'holder': 'process N (name)' or None}; None when no line is about a lock.

    apt-get update takes the lists lock (/var/lib/apt/lists/lock) and fails at once when another update holds it (apt
    2.6 does not wait for it, whatever DPkg::Lock::Timeout says); installs and removals take dpkg's lock-frontend and
    lock (/var/lib/dpkg/), for which DPkg::Lock::Timeout waits; downloads the archives lock."""
    text = _as_text(text)
    for pattern in _LOCK_PATH_RES:
        match = pattern.search(text)
        if match:
            path = match.group(1)
            break
    else:
        # dpkg's own words name the lock, not its file (dpkg.mo: "dpkg frontend lock was locked by another process
        # with pid %d", "dpkg status database is locked by another process").
        if re.search(r'dpkg frontend lock', text):
            path = '/var/lib/dpkg/lock-frontend'
        elif re.search(r'dpkg status database is locked|Waiting for cache lock', text):
            path = '/var/lib/dpkg/lock'
        else:
            return None
    folder = path if path.endswith('/') else path.rsplit('/', 1)[0] + '/'
    if '/lists/' in folder:
        lock = 'lists'
    elif '/dpkg/' in folder:
        lock = 'dpkg'
    elif '/archives/' in folder:
        lock = 'archives'
    else:
        lock = 'other'
    if path.endswith('/'):
        path += 'lock'
    holder = None
    for holder_re in _HOLDER_RES:
        found = holder_re.search(text)
        if found:
            holder = 'process %s' % found.group(1)
            break
    return {'lock': lock, 'path': path, 'holder': holder}


def describe_lock(held):
    """'apt's lists lock (/var/lib/apt/lists/lock, held by process 4242 (python3))' for lock_held()'s answer."""
    name = {'lists': "apt's lists lock", 'dpkg': "the dpkg lock", 'archives': "apt's archives lock"}.get(
        held['lock'], 'the lock')
    return '%s (%s%s)' % (name, held['path'], ', held by %s' % held['holder'] if held['holder'] else '')


def _advice_lock(text, detail):
    held = lock_held(text) or {'lock': 'other', 'path': detail, 'holder': None}
    if held['lock'] == 'lists':
        return ('Another process held %s: another apt-get update is running (apt-daily.service, unattended-upgrades, '
                'packagekit or an admin\'s apt run). apt-get update does not wait for that lock; gpulab.rocm waits up '
                'to the lock timeout. Wait for it to finish (systemctl status apt-daily.service) or raise the lock '
                'timeout, then run again.' % describe_lock(held))
    if held['lock'] == 'archives':
        return ('Another process held %s for longer than the lock timeout: another apt run is downloading packages. '
                'Wait for it to finish or raise the lock timeout, then run again.' % describe_lock(held))
    return ('Another process held %s for longer than the lock timeout: another apt or dpkg run is installing '
            '(unattended-upgrades, apt-daily-upgrade.service, an admin\'s apt or dpkg). Wait for it to finish or raise '
            'the lock timeout, then run again.' % describe_lock(held))


def package_errors(text):
    """The packages dpkg failed on, from its output: [{'package', 'action' (--configure, --install, ...),
    'error': dpkg's line under it, 'output': the line the package's script printed just before, or None}]."""
    lines = _as_text(text).splitlines()
    found = []
    for index, raw in enumerate(lines):
        match = _DPKG_ERROR_RE.match(raw.strip())
        if not match:
            continue
        error = lines[index + 1].strip() if index + 1 < len(lines) and lines[index + 1][:1] in (' ', '\t') else ''
        before = lines[index - 1].strip() if index else ''
        output = before if before and not _DPKG_PROGRESS_RE.match(before) else None
        if not any(item['package'] == match.group(1) for item in found):
            found.append({'package': match.group(1), 'action': match.group(2), 'error': error, 'output': output})
    return found


def _advice_package(text, detail):
    failed = package_errors(text)
    if not failed:
        return 'dpkg failed on a package (%s).' % detail
    parts = []
    for item in failed:
        said = '; it printed: %s' % _shorten(item['output'], 160) if item['output'] else ''
        parts.append('%s (dpkg %s: %s%s)' % (item['package'], item['action'], item['error'] or detail, said))
    names = ' '.join(item['package'] for item in failed)
    return ('dpkg could not finish %s: %s. Every apt run configures the packages left pending, so until this is fixed '
            'every install fails on it, whatever it installs. Fix what the package\'s script needs (dpkg --configure '
            '%s shows the error again), or remove the package (apt-get remove %s) if the lab does not need it, then '
            'run again.' % ('this package' if len(failed) == 1 else 'these packages', '; '.join(parts), names, names))


def parse_audit(text):
    """dpkg --audit's output -> {state: [package names]} (states as in _AUDIT_HEADINGS); {} when dpkg is consistent."""
    result, state = {}, None
    for raw in _as_text(text).splitlines():
        if not raw.strip():
            continue
        if raw[:1] == ' ' and state:
            result.setdefault(state, []).append(raw.split()[0])
            continue
        for key, heading in _AUDIT_HEADINGS:
            if heading in raw:
                state = key
                break
    return result


def unfinished(status):
    """{name: state} of the packages an unfinished dpkg run left, from {name: (Status-Abbrev, version)}
    (apt_packages.parse_status)."""
    return dict((name, UNFINISHED_STATES[abbrev[1:2]]) for name, (abbrev, _version) in sorted(status.items())
                if abbrev[1:2] in UNFINISHED_STATES)


# (kind, pattern, advice): the first rule that matches an error line wins, then the same over warning lines.
# {detail} is the matching line, {holder} the process that holds a lock.
_RULES = [
    ('permission',
     re.compile(r'\(13: Permission denied\)|are you root\?|requires superuser privilege|you do not have permission '
                r'to lock|can only be used by root|(^|\s)E: ?.*Permission denied', re.I),
     'apt or dpkg was refused access to its own files ({detail}): it did not run as root. Run the task with '
     'become: true (or as root) and run again; if it did run as root, a read-only or root-squashed filesystem '
     'is refusing it.'),
    ('lock',
     re.compile(r'Could not get lock|Unable to acquire the dpkg frontend lock|Unable to lock the administration '
                r'directory|Unable to lock directory|Failed to lock|Waiting for cache lock|was locked by another '
                r'process|is another process using it\?', re.I),
     _advice_lock),
    ('disk_full', re.compile(r'No space left on device', re.I),
     'The disk filled up during the install ({detail}). Free space on the filesystems of /opt and '
     '/var/cache/apt/archives, then run again: the next run finishes the interrupted install.'),
    ('disk_full', re.compile(r"You don't have enough free space", re.I), _advice_free_space),
    ('package_failed', _DPKG_ERROR_RE, _advice_package),
    ('dpkg_interrupted',
     re.compile(r'dpkg was interrupted|Sub-process /usr/bin/dpkg (exited unexpectedly|received|was killed)', re.I),
     'dpkg stopped in the middle of the install ({detail}). Run again: the next run finishes the interrupted '
     'install (dpkg --configure -a) before anything else.'),
    ('clock', re.compile(r'Release file for .* is not valid yet', re.I),
     'The repository\'s Release file is not valid yet by this host\'s clock ({detail}): the clock is behind. Fix the '
     'clock (NTP: timedatectl set-ntp true, chrony or ntpd), then run again; the repository URL is not the problem.'),
    ('release_expired', re.compile(r'Release file for .* is expired', re.I),
     'The repository\'s Release file has expired ({detail}): the mirror serves a copy past its Valid-Until date '
     '(a mirror that stopped syncing), or this host\'s clock is ahead. Use an up-to-date mirror and check the '
     'clock, then run again.'),
    ('integrity',
     re.compile(r'Hash Sum mismatch|Hash mismatch for|File has unexpected size|Size mismatch|Writing more data than '
                r'expected', re.I),
     'A downloaded file failed its integrity check ({detail}): its hash or size differs from what the repository\'s '
     'signed index promises, so the mirror is in the middle of a sync or something on the way (a proxy, a cache) '
     'altered the files; nothing was installed. This is not a plain download failure: wait for the mirror to finish '
     'syncing (or clear the proxy\'s cache, or use another mirror), then run again.'),
    ('signature',
     re.compile(r'NO_PUBKEY|EXPKEYSIG|KEYEXPIRED|REVKEYSIG|BADSIG|signatures couldn\'t be verified|'
                r'signatures were invalid|is not signed|At least one invalid signature|GPG error|'
                r'OpenPGP signature verification failed|Missing key [0-9A-F]+, which is needed', re.I),
     _advice_signature),
    ('no_release', re.compile(r'does not have a Release file|no longer has a Release file', re.I),
     'The repository has no Release file at that address ({detail}): the URL, the release or the suite (codename) '
     'is wrong, or the mirror does not carry this release. Check the repository URL, release and suite, then run '
     'again.'),
    ('download',
     re.compile(r'Failed to fetch|Unable to fetch some archives|Some files failed to download|Some index files failed '
                r'to download|\b(40[34]|50[0-4])\s+(Not Found|File not found|Forbidden|Internal Server Error|Bad '
                r'Gateway|Service Unavailable|Gateway Time-?out)|\b[45]\d\d\s.*\[IP: |Could not connect to|'
                r'Unable to connect to|Connection refused|'
                r'Connection timed out|Connection failed|Temporary failure resolving|Could not resolve|'
                r'Clearsigned file isn\'t valid', re.I),
     'A package or index file could not be downloaded ({detail}); nothing was installed. Check that the mirror is up '
     'and holds this release\'s pool and that this host reaches it (proxy, firewall, DNS), then run again.'),
    ('not_found',
     re.compile(r'Unable to locate package|Version \'[^\']*\' for \'[^\']*\' was not found|has no installation '
                r'candidate|Couldn\'t find any package', re.I),
     'apt does not know this package or version ({detail}): no configured repository offers it. Check the release '
     'and the repository lines for this OS, run apt-get update, then run again.'),
    ('dependencies',
     re.compile(r'unmet dependencies|held broken packages|Unmet dependencies|Unable to correct problems', re.I),
     'apt could not resolve the dependencies ({detail}); nothing was installed. A package needs a version that no '
     'configured repository offers (releases or sources mixed, a pin), or a held package blocks it: check the '
     'sources and pins for this release and `apt-mark showhold`, then run again.'),
]


def classify(text):
    """Classify what apt-get / dpkg printed: {'kind': one of KINDS, 'reason': one sentence, cause and fix}.

    text: str, bytes, None or a list of lines (msg, stderr and stdout together). Never raises.
    """
    text = _as_text(text)
    errors, secondary, lines = _tiers(text)
    for candidates in (errors, secondary):
        for kind, pattern, advice in _RULES:
            for line in candidates:
                if pattern.search(line):
                    detail = _detail(kind, line, lines)
                    if callable(advice):
                        reason = advice(text, detail)
                        if isinstance(reason, tuple):
                            kind, reason = reason
                    else:
                        reason = advice.format(detail=detail, holder=_holder(text, detail))
                    return {'kind': kind, 'reason': reason}
    first_error = [line for line in errors if re.match(r'^(E:|dpkg: error)', line)]
    chosen = first_error[0] if first_error else (lines[-1] if lines else 'no message')
    return {'kind': 'other', 'reason': 'apt failed: %s' % _shorten(chosen)}


def _tiers(text):
    """(error lines, warning and progress lines, all lines), stripped; an indented line belongs to the line above."""
    errors, secondary, lines = [], [], []
    tier = errors
    for raw in text.splitlines():
        line = raw.strip()
        if not line or _HARMLESS_RE.search(line):
            continue
        if raw[:1] not in (' ', '\t'):
            tier = secondary if _SECONDARY_RE.match(line) else errors
        tier.append(line)
        lines.append(line)
    return errors, secondary, lines


def _detail(kind, line, lines):
    if kind == 'dependencies':
        # The package line under "The following packages have unmet dependencies:" says which and why.
        for index, candidate in enumerate(lines):
            if candidate.endswith('have unmet dependencies:') and index + 1 < len(lines):
                return _shorten(lines[index + 1])
    return _shorten(line)


def _holder(text, detail):
    for pattern in _HOLDER_RES:
        match = pattern.search(text)
        if match:
            return 'held by process %s' % match.group(1)
    return detail


def _as_text(value):
    if value is None:
        return ''
    if isinstance(value, bytes):
        return value.decode('utf-8', 'replace')
    if isinstance(value, (list, tuple)):
        return '\n'.join(_as_text(item) for item in value)
    return str(value)


def _shorten(line, limit=200):
    line = re.sub(r'\s+', ' ', line).strip()
    return line if len(line) <= limit else line[:limit - 3] + '...'
