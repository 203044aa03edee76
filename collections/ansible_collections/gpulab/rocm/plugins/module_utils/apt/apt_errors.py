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

KINDS = ('permission', 'lock', 'disk_full', 'dpkg_interrupted', 'clock', 'release_expired', 'integrity', 'signature',
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
     'Another process held the dpkg lock for longer than the lock timeout ({holder}). Wait for it to finish '
     '(unattended-upgrades, another apt run) or raise the lock timeout, then run again.'),
    ('disk_full', re.compile(r'No space left on device', re.I),
     'The disk filled up during the install ({detail}). Free space on the filesystems of /opt and '
     '/var/cache/apt/archives, then run again: the next run finishes the interrupted install.'),
    ('disk_full', re.compile(r"You don't have enough free space", re.I), _advice_free_space),
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
