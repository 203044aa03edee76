# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The kernel log of the GPU health check: read what the kernel logged since the last run, match it against the rules
(kernel_log_rules.py), tie each finding to its GPU, and keep the state between runs (docs/health.md, "The kernel log").

Three sources, each read only from where the last run stopped and never more than max_bytes (4 MiB) and MAX_LINES a
run; what is left is read by the next run (`truncated` says so):

- the systemd journal: `journalctl -k -b -o json --after-cursor=<saved>` (the first run on a boot: `-k -b`, the whole
  boot), run with a timeout and its output bounded while it runs (health_run.run_bounded);
- /dev/kmsg: the kernel's records `prio,seq,usec,flags;text` read without blocking, those after the saved sequence
  number (a new boot: every record still in the ring buffer); EPIPE (records overwritten before they were read) and a
  gap in the sequence numbers say that messages were lost;
- a plain file (a site that ships its logs; the tests): the bytes appended since the saved offset; a file that shrank
  or was replaced starts again at 0, and a file seen the first time is read from its last max_bytes. Only a regular
  file, never through a link, not one every user can write.

The pure parts (parse_line, parse_kmsg_record, parse_journal_line, match, reset_loops, holds_after, summary) decide;
the readers take their file functions and command runner as arguments, so the tests give them real-format input.
health_run.py runs all of this under a lock and writes the state, /var/lib/gpulab/health/kernel-log.json. Standard
library only: this runs on the node without Ansible.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import calendar
import errno
import json
import os
import re
import stat
import time

from ansible_collections.gpulab.rocm.plugins.module_utils.node import kernel_log_rules

SCHEMA = 1
STATE_FILE = 'kernel-log.json'
LOCK_FILE = 'kernel-log.lock'
SOURCES = ('auto', 'journal', 'kmsg', 'none')
KMSG_PATH = '/dev/kmsg'
BOOT_ID_PATH = '/proc/sys/kernel/random/boot_id'
DEFAULT_MAX_BYTES = 4 << 20
MIN_MAX_BYTES = 64 << 10
MAX_MAX_BYTES = 64 << 20
# A kernel record is at most about 1 KiB of text (PRINTK_MESSAGE_MAX); longer lines are cut for matching.
MAX_LINE_CHARS = 4096
MAX_LINES = 200000
# Seconds journalctl may take (Slurm kills the whole check at 60 s; rocminfo and amd-smi have 20 + 2 x 15).
JOURNAL_TIMEOUT = 5
# /dev/kmsg hands out one record per read(); the buffer must hold the largest (text plus its dictionary lines).
KMSG_READ = 16384
MAX_SKIPPED_RECORDS = 1 << 21
MAX_HOLDS = 256
MAX_RESET_TIMES = 256
MAX_ACKS = 20
MAX_SHOWN = 160
ACK_CODE = re.compile(r'^KLOG_[A-Z0-9]+(?:_[A-Z0-9]+)*$')

_BDF = re.compile(r'\b([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\b')
_SYSLOG_ISO = re.compile(r'^(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)(?:[.,](\d+))?(Z|[+-]\d\d:?\d\d)?\s+\S+\s+'
                         r'kernel:\s?')
_SYSLOG_SHORT = re.compile(r'^\S{3,}\s{1,2}\d{1,2}\s\d\d:\d\d:\d\d\s+(?:\S+\s+)?kernel:\s?')
_KERNEL_TAG = re.compile(r'^kernel:\s?')
_DMESG_T = re.compile(r'^\[([A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4})\]\s?')
_DMESG_SECONDS = re.compile(r'^\[\s*(\d+\.\d+)\]\s?')
_CALLER = re.compile(r'^\[\s*[TC]\d+\]\s?')


# --- one line, record or JSON object -> {'text', 'mono', 'wall', 'device'} ----------------------------------------

def parse_line(line):
    """A line of a log file or of dmesg's output: the kernel's message with its prefixes cut off (a syslog or
    journalctl header, rsyslog's ISO time, dmesg -T's date, the kernel's [seconds], the printk caller id), and the
    times they gave: 'mono' (seconds since boot) and 'wall' (Unix seconds), None where the line had none."""
    text = line.rstrip('\r\n')
    wall = mono = None
    match = _SYSLOG_ISO.match(text)
    if match:
        wall = _iso_seconds(match)
        text = text[match.end():]
    else:
        match = _SYSLOG_SHORT.match(text) or _KERNEL_TAG.match(text)
        if match:
            text = text[match.end():]
    match = _DMESG_T.match(text)
    if match:
        try:
            wall = time.mktime(time.strptime(match.group(1), '%a %b %d %H:%M:%S %Y'))
        except (ValueError, OverflowError):
            wall = None
        text = text[match.end():]
    match = _DMESG_SECONDS.match(text)
    if match:
        mono = float(match.group(1))
        text = text[match.end():]
    match = _CALLER.match(text)
    if match:
        text = text[match.end():]
    return {'text': text[:MAX_LINE_CHARS], 'mono': mono, 'wall': wall, 'device': None}


def _iso_seconds(match):
    year, month, day, hour, minute, second = (int(match.group(number)) for number in range(1, 7))
    try:
        seconds = calendar.timegm((year, month, day, hour, minute, second, 0, 0, 0))
    except (ValueError, OverflowError):
        return None
    fraction = match.group(7)
    if fraction:
        seconds += float('0.' + fraction[:6])
    zone = match.group(8)
    if zone and zone != 'Z':
        sign = -1 if zone[0] == '-' else 1
        digits = zone[1:].replace(':', '')
        seconds -= sign * (int(digits[:2]) * 3600 + int(digits[2:4]) * 60)
    return seconds


def parse_kmsg_record(data):
    """One /dev/kmsg record (Documentation/ABI/testing/dev-kmsg): 'prio,seq,usec,flags[,...];text\\n' and then
    ' KEY=value' dictionary lines (SUBSYSTEM=, DEVICE=+pci:<bdf>). None for what is no such record."""
    head, separator, rest = data.partition(b';')
    if not separator:
        return None
    fields = head.split(b',')
    try:
        prio, seq, usec = int(fields[0]), int(fields[1]), int(fields[2])
    except (ValueError, IndexError):
        return None
    lines = rest.split(b'\n')
    device = None
    for extra in lines[1:]:
        if extra.startswith(b' DEVICE=+pci:'):
            device = extra[len(b' DEVICE=+pci:'):].strip().decode('ascii', 'replace').lower()
    return {'text': lines[0].decode('utf-8', 'replace')[:MAX_LINE_CHARS], 'mono': usec / 1e6, 'wall': None,
            'device': device, 'seq': seq, 'facility': prio >> 3}


def parse_journal_line(line):
    """One object of `journalctl -o json` (systemd's Journal JSON Format: MESSAGE a string, an array of byte values
    when it is not text, or null when it was too large): the message, its times and its PCI device. None for a line
    that is no JSON object (a line cut where the output was stopped)."""
    try:
        item = json.loads(line.decode('utf-8') if isinstance(line, bytes) else line)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(item, dict):
        return None
    message = item.get('MESSAGE')
    if isinstance(message, list):
        if message and all(isinstance(value, int) and not isinstance(value, bool) for value in message):
            message = bytes(bytearray(value & 0xff for value in message[:MAX_LINE_CHARS])).decode('utf-8', 'replace')
        else:
            message = next((value for value in message if isinstance(value, str)), None)
    device = item.get('_KERNEL_DEVICE')
    device = device[len('+pci:'):].lower() if isinstance(device, str) and device.startswith('+pci:') else None
    cursor = item.get('__CURSOR')
    return {'text': message[:MAX_LINE_CHARS] if isinstance(message, str) else '', 'device': device,
            'wall': _micro(item.get('__REALTIME_TIMESTAMP')), 'mono': _micro(item.get('__MONOTONIC_TIMESTAMP')),
            'cursor': cursor if isinstance(cursor, str) and len(cursor) < 512 else None}


def _micro(value):
    return int(value) / 1e6 if isinstance(value, str) and value.isdigit() and len(value) < 20 else None


# --- the readers (I/O; their file functions and runner are arguments) -----------------------------------------------

def _result(source, **values):
    result = {'source': source, 'records': [], 'bytes': 0, 'lines': 0, 'truncated': False, 'lost': False,
              'problem': None, 'position': None}
    result.update(values)
    return result


def read_file(path, saved, max_bytes):
    """The complete lines appended to path since saved ({'path', 'dev', 'ino', 'offset'} or None), at most
    max_bytes. A line cut at the end (a writer mid-line, or the bound) is left for the next run; a single line longer
    than max_bytes is skipped. Returns the reader result; 'position' is what to save."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, 'O_NOFOLLOW', 0) | getattr(os, 'O_NONBLOCK', 0))
    except OSError as exc:
        why = 'it is a link (not followed)' if exc.errno == errno.ELOOP else exc.strerror or str(exc)
        return _result('file', problem='%s cannot be read: %s' % (path, why), position=saved)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return _result('file', problem='%s is not a regular file: not read' % path, position=saved)
        if info.st_mode & 0o002:
            return _result('file', problem='%s is writable by every user: not trusted, not read' % path,
                           position=saved)
        saved = saved if isinstance(saved, dict) else {}
        offset = saved.get('offset')
        same = (saved.get('path') == path and saved.get('dev') == info.st_dev and saved.get('ino') == info.st_ino
                and isinstance(offset, int) and 0 <= offset <= info.st_size)
        first = not saved
        if not same:
            # Seen the first time: its last max_bytes. Replaced or shrunk (rotated, truncated): from 0.
            offset = max(0, info.st_size - max_bytes) if first else 0
        os.lseek(fd, offset, os.SEEK_SET)
        data = _read_upto(fd, max_bytes)
    finally:
        os.close(fd)
    skip = 0
    if first and offset > 0:  # started inside the file: the first line is a fragment
        cut = data.find(b'\n')
        skip = cut + 1 if cut >= 0 else len(data)
    end = data.rfind(b'\n')
    if end < skip:
        consumed = len(data) if len(data) >= max_bytes else skip  # one line longer than the bound: skipped
        body = b''
    else:
        consumed, body = end + 1, data[skip:end + 1]
    records, used = [], skip
    for raw in body.split(b'\n')[:-1]:
        if len(records) >= MAX_LINES:
            break
        used += len(raw) + 1
        records.append(parse_line(raw.decode('utf-8', 'replace')))
    if len(records) >= MAX_LINES:
        consumed = used
    truncated = offset + consumed < info.st_size or (first and offset > 0)
    return _result('file', records=records, bytes=consumed - skip, lines=len(records), truncated=truncated,
                   position={'path': path, 'dev': info.st_dev, 'ino': info.st_ino, 'offset': offset + consumed})


def _read_upto(fd, limit):
    chunks, size = [], 0
    while size < limit:
        chunk = os.read(fd, min(1 << 20, limit - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b''.join(chunks)


def read_kmsg(after_seq, max_bytes, path=KMSG_PATH, open_fn=os.open, read_fn=os.read, close_fn=os.close):
    """The kernel's records after sequence number after_seq (None: every record in the ring buffer), read without
    blocking, at most max_bytes of them; only the kernel's own (facility 0: not what user space wrote into
    /dev/kmsg). EPIPE or a jump in the sequence numbers: messages were lost ('lost')."""
    try:
        fd = open_fn(path, os.O_RDONLY | getattr(os, 'O_NONBLOCK', 0) | getattr(os, 'O_NOFOLLOW', 0))
    except OSError as exc:
        return _result('kmsg', problem='%s cannot be read: %s' % (path, exc.strerror or exc),
                       position={'seq': after_seq})
    result = _result('kmsg', position={'seq': after_seq})
    expected, skipped = None, 0
    try:
        while True:
            try:
                data = read_fn(fd, KMSG_READ)
            except OSError as exc:
                if exc.errno == errno.EPIPE:  # overwritten before it was read: the next read gives the oldest left
                    result['lost'] = True
                    continue
                if exc.errno == errno.EINTR:
                    continue
                if exc.errno != errno.EAGAIN:
                    result['problem'] = '%s: read failed: %s' % (path, exc.strerror or exc)
                break
            if not data:
                break
            record = parse_kmsg_record(data)
            if record is None:
                continue
            if after_seq is not None and record['seq'] <= after_seq:
                skipped += 1
                if skipped > MAX_SKIPPED_RECORDS:
                    break
                continue
            if (expected is None and after_seq is not None and record['seq'] > after_seq + 1) or \
                    (expected is not None and record['seq'] > expected):
                result['lost'] = True
            expected = record['seq'] + 1
            if result['bytes'] + len(data) > max_bytes or result['lines'] >= MAX_LINES:
                result['truncated'] = True
                break
            result['bytes'] += len(data)
            result['position'] = {'seq': record['seq']}
            if record['facility'] == 0:
                result['records'].append(record)
                result['lines'] += 1
    finally:
        close_fn(fd)
    return result


def journal_argv(binary, cursor, fields=True):
    argv = [binary, '-k', '-b', '-o', 'json', '--all', '--no-pager', '-q']
    if fields:
        argv.append('--output-fields=MESSAGE,_KERNEL_DEVICE')
    return argv + (['--after-cursor=' + cursor] if cursor else [])


def read_journal(binary, cursor, max_bytes, run, timeout=JOURNAL_TIMEOUT):
    """The kernel's entries of this boot after cursor (None: the whole boot). run(argv, timeout, limit) gives
    (rc, stdout bytes, stderr bytes, stopped) with stdout bounded to limit bytes while the tool runs; an output cut
    at the bound or at the timeout is used up to its last complete entry, and the next run goes on from there."""
    argv = journal_argv(binary, cursor)
    rc, out, err, stopped = run(argv, timeout, max_bytes)
    note = None
    if rc != 0 and not out.strip() and b'output-fields' in err:  # a journalctl older than systemd 236
        argv = journal_argv(binary, cursor, fields=False)
        rc, out, err, stopped = run(argv, timeout, max_bytes)
    if rc != 0 and not out.strip() and cursor:  # a cursor the journal no longer knows: the whole boot again
        note = 'the saved journal cursor was refused; read from the start of the boot'
        argv = journal_argv(binary, None)
        rc, out, err, stopped = run(argv, timeout, max_bytes)
        cursor = None
    if stopped == 'timeout' and not out.strip():
        return _result('journal', problem='journalctl did not answer within %s s' % timeout,
                       position={'cursor': cursor})
    if rc not in (0, None) and not out.strip():
        first = next((line.strip() for line in err.decode('utf-8', 'replace').splitlines() if line.strip()),
                     'no output')
        return _result('journal', problem='journalctl exit status %s: %s' % (rc, first[:200]),
                       position={'cursor': cursor})
    lines = out.split(b'\n')
    complete = lines[:-1]  # the last piece is empty, or an entry cut where the output was stopped
    result = _result('journal', truncated=bool(stopped) or len(complete) > MAX_LINES, note=note,
                     position={'cursor': cursor})
    for raw in complete[:MAX_LINES]:
        record = parse_journal_line(raw)
        if record is None:
            continue
        result['bytes'] += len(raw) + 1
        result['lines'] += 1
        result['records'].append(record)
        if record.get('cursor'):
            result['position'] = {'cursor': record['cursor']}
    return result


def read_boot_id(path=BOOT_ID_PATH):
    try:
        with open(path, 'rb') as handle:
            value = handle.read(64).decode('ascii', 'replace').strip()
    except (IOError, OSError):
        return None
    return value if re.match(r'^[0-9a-f-]{32,36}$', value) else None


def read_source(want, state, boot_id, io):
    """Read the configured source (kernel_log_source) from where the state says the last run stopped. io: {'find':
    find_tool, 'run': a bounded runner, 'kmsg_path', 'kmsg_open', 'kmsg_read', 'kmsg_close'}. Returns the reader
    result with 'explicit' (the source was named, not chosen) and 'choice' (what 'auto' chose this boot)."""
    source = want['kernel_log_source']
    max_bytes = want['kernel_log_max_bytes']
    same_boot = bool(boot_id) and state.get('boot_id') == boot_id
    journal_pos = state.get('journal') if same_boot and isinstance(state.get('journal'), dict) else {}
    cursor = journal_pos.get('cursor') if isinstance(journal_pos.get('cursor'), str) else None
    kmsg_pos = state.get('kmsg') if same_boot and isinstance(state.get('kmsg'), dict) else {}
    seq = kmsg_pos.get('seq') if isinstance(kmsg_pos.get('seq'), int) else None

    def kmsg():
        return read_kmsg(seq, max_bytes, io.get('kmsg_path') or KMSG_PATH, io.get('kmsg_open') or os.open,
                         io.get('kmsg_read') or os.read, io.get('kmsg_close') or os.close)

    def journal(binary):
        return read_journal(binary, cursor, max_bytes, io['run'], io.get('journal_timeout') or JOURNAL_TIMEOUT)

    if source == 'none':
        return dict(_result('none'), explicit=True, choice=None)
    if source.startswith('/'):
        return dict(read_file(source, state.get('file'), max_bytes), explicit=True, choice=None)
    binary = io['find']('journalctl') if source in ('auto', 'journal') else None
    if source == 'journal':
        if not binary:
            return dict(_result('journal', problem='journalctl is not installed'), explicit=True, choice=None)
        return dict(journal(binary), explicit=True, choice=None)
    if source == 'kmsg':
        return dict(kmsg(), explicit=True, choice=None)
    choice = state.get('auto') if same_boot else None
    journal_result, why_not_journal = None, 'not tried (/dev/kmsg was this boot\'s source)'
    if choice != 'kmsg':
        if binary:
            journal_result = journal(binary)
            if not journal_result['problem'] and (journal_result['records'] or cursor or choice == 'journal'):
                return dict(journal_result, explicit=False, choice='journal')
            why_not_journal = journal_result['problem'] or 'the journal holds no kernel message of this boot'
        else:
            why_not_journal = 'journalctl is not installed'
    kmsg_result = kmsg()
    if not kmsg_result['problem']:
        return dict(kmsg_result, explicit=False, choice='kmsg')
    if journal_result is not None and not journal_result['problem']:
        return dict(journal_result, explicit=False, choice='journal')  # a journal with nothing yet; no /dev/kmsg
    return dict(_result('none', problem='no journal (%s) and no readable /dev/kmsg (%s)'
                        % (why_not_journal, kmsg_result['problem'])), explicit=False, choice=None)


# --- matching -------------------------------------------------------------------------------------------------------

def topology(gpus, parents):
    """{'gpus': {bdf: KFD index or None}, 'ports': {port bdf: [GPU bdfs below it]}} from the AMD GPU functions
    (health_run.gather's gpus) and each one's PCI parents (its sysfs path's BDF components above it)."""
    ports = {}
    for bdf, above in parents.items():
        for port in above:
            ports.setdefault(port, [])
            if bdf not in ports[port]:
                ports[port].append(bdf)
    return {'gpus': dict((gpu['bdf'], gpu.get('gpu')) for gpu in gpus), 'ports': ports}


def locate(record, scope, where):
    """(GPU key, KFD index, port) of a matched line, or None when it does not count (scope 'gpu' and the address is
    no AMD GPU of this node nor a port above one). The key is the GPU's PCI address, the port's where the port is
    above several GPUs, or '' for a line that names no device on a node with several GPUs."""
    match = _BDF.search(record['text'])
    address = match.group(1).lower() if match else record.get('device')
    gpus, ports = where['gpus'], where['ports']
    if address is None:
        if len(gpus) == 1:
            only = next(iter(gpus))
            return only, gpus[only], None
        return None if scope == 'gpu' else ('', None, None)
    if address in gpus:
        return address, gpus[address], None
    below = ports.get(address)
    if below:
        if len(below) == 1:
            return below[0], gpus.get(below[0]), address
        return address, None, address
    return None if scope == 'gpu' else (address, None, None)


def event_time(record, now, boot_time):
    """When the line was logged, in Unix seconds: its wall time, else boot time plus its seconds since boot, else
    now; never later than now."""
    if record.get('wall') is not None:
        moment = record['wall']
    elif record.get('mono') is not None and boot_time is not None:
        moment = boot_time + record['mono']
    else:
        moment = now
    return min(moment, now)


def anchor_file_times(records, now):
    """A shipped log file's lines are taken as current when they are read: the stamps of another boot or host
    (the kernel's [seconds], dmesg -T, syslog) keep only their spacing, the newest line of each kind at now."""
    for key in ('mono', 'wall'):
        stamps = [record[key] for record in records if record.get(key) is not None]
        if stamps:
            newest = max(stamps)
            for record in records:
                if record.get(key) is not None:
                    record['wall'] = now - (newest - record[key])
                    record['mono'] = None


def match(records, rules, where, now, boot_time):
    """{(code, key): finding} of this run: a finding is {'code', 'severity', 'description', 'bdf', 'gpu', 'via',
    'lines' (the distinct messages: a line repeated with another timestamp counts once), 'last' (the newest such
    message), 'time' (when it was logged), 'events' (the distinct (time, message) pairs, for the reset loop)}."""
    findings = {}
    for record in records:
        text = record['text']
        if not text:
            continue
        seen = set()
        for rule in rules:
            if rule['code'] in seen or not rule['regex'].search(text):
                continue
            seen.add(rule['code'])
            place = locate(record, rule.get('scope', 'any'), where)
            if place is None:
                continue
            key, gpu, via = place
            moment = event_time(record, now, boot_time)
            finding = findings.setdefault((rule['code'], key), {
                'code': rule['code'], 'severity': rule['severity'], 'description': rule['description'],
                'bdf': key or None, 'gpu': gpu, 'via': via, 'lines': set(), 'last': text, 'time': moment,
                'events': set()})
            if len(finding['lines']) < 1000:
                finding['lines'].add(text)
            if moment >= finding['time']:  # the newest line tells the finding
                finding.update(last=text, time=moment, via=via, description=rule['description'])
            if len(finding['events']) < MAX_RESET_TIMES:
                finding['events'].add((round(moment, 6), text))
    return findings


def reset_loops(previous, last_loops, events, count, window):
    """Reset loops: a GPU that reset count times within window seconds. previous: {key: [times]} kept from earlier
    runs; last_loops: {key: the time of its last loop}; events: {key: [times]} of this run's resets. A loop is counted
    once per window: after one, the next needs a reset a whole window later. Returns ({key: loops this run},
    {key: the times to keep}, {key: last loop time})."""
    loops, kept, last_out = {}, {}, {}
    for key in set(previous) | set(events):
        old = [moment for moment in previous.get(key) or [] if isinstance(moment, (int, float))]
        new = sorted(set(events.get(key) or []))
        times = sorted(set(old) | set(new))
        last = last_loops.get(key) if isinstance(last_loops.get(key), (int, float)) else None
        found = 0
        for moment in new:
            recent = [other for other in times if moment - window < other <= moment]
            if len(recent) >= count and (last is None or moment - last >= window):
                found += 1
                last = moment
        if found:
            loops[key] = found
        if times:
            newest = times[-1]
            kept[key] = [moment for moment in times if newest - moment < window][-MAX_RESET_TIMES:]
        if last is not None and times and times[-1] - last < 2 * window:
            last_out[key] = last
    return loops, kept, last_out


def _hold_key(code, bdf):
    return '%s %s' % (code, bdf or '')


def holds_after(holds, findings, now, hold_hours):
    """The fatal findings held between runs. holds: {key: hold} of the state; findings: this run's (fatal ones are
    added or refreshed). A hold ends hold_hours after its newest line (0: never; an acknowledgement ends it too).
    A fatal line already older than hold_hours when it is read starts no hold (it is reported as a warning).
    Returns (holds to keep, {key: hold} of this run's fatal findings that hold, [findings too old to hold])."""
    kept = dict((key, dict(value)) for key, value in (holds or {}).items()
                if isinstance(value, dict) and isinstance(value.get('last'), (int, float)))
    limit = hold_hours * 3600
    fresh, stale = {}, []
    for finding in findings:
        if finding['severity'] != 'fatal':
            continue
        if limit and now - finding['time'] >= limit:
            stale.append(finding)
            continue
        key = _hold_key(finding['code'], finding['bdf'])
        hold = kept.get(key) or {'code': finding['code'], 'bdf': finding['bdf'], 'first': finding['time'],
                                 'count': 0}
        hold.update(last=max(finding['time'], hold.get('last') or 0), line=finding['last'][:MAX_SHOWN],
                    gpu=finding['gpu'], description=finding['description'],
                    count=int(hold.get('count') or 0) + finding['count'])
        kept[key] = hold
        fresh[key] = hold
    if limit:
        kept = dict((key, hold) for key, hold in kept.items() if now - hold['last'] < limit)
    if len(kept) > MAX_HOLDS:
        kept = dict(sorted(kept.items(), key=lambda item: item[1]['last'])[-MAX_HOLDS:])
    return kept, fresh, stale


def acknowledge(state, codes, now, who):
    """Remove the holds of codes (all when codes is empty) and the reset history behind an acknowledged reset loop;
    record the acknowledgement. Returns (state, [the holds removed]); ValueError for a code that is no code."""
    bad = [code for code in codes if not ACK_CODE.match(code)]
    if bad:
        raise ValueError('not a kernel-log code: %s (codes look like KLOG_RAS_UNCORRECTABLE)' % ', '.join(bad))
    holds = state.get('holds') if isinstance(state.get('holds'), dict) else {}
    removed = [hold for hold in holds.values() if isinstance(hold, dict) and (not codes or hold.get('code') in codes)]
    state['holds'] = dict((key, hold) for key, hold in holds.items() if hold not in removed)
    for hold in removed:
        if hold.get('code') == 'KLOG_RESET_LOOP':
            for name in ('resets', 'loops'):
                if isinstance(state.get(name), dict):
                    state[name].pop(hold.get('bdf') or '', None)
    acks = [ack for ack in state.get('acks') or [] if isinstance(ack, dict)]
    acks.append({'time': round(now, 3), 'codes': sorted(set(hold.get('code') for hold in removed)),
                 'asked': sorted(codes), 'by': who})
    state['acks'] = acks[-MAX_ACKS:]
    return state, removed


def summary(result, run_counts, totals, codes):
    """last.json's "kernel_log": the interface with the metrics (keep these names)."""
    return {'source': result['source'], 'bytes': int(result['bytes']), 'lines': int(result['lines']),
            'truncated': bool(result['truncated'] or result.get('lost')),
            'run': dict((code, int(run_counts.get(code, 0))) for code in sorted(codes)),
            'totals': dict((code, int(totals.get(code, 0))) for code in sorted(set(codes) | set(totals))),
            'severity': dict(sorted(codes.items()))}


def new_state(now):
    return {'schema': SCHEMA, 'created': round(now, 3), 'boot_id': None, 'auto': None, 'journal': None,
            'kmsg': None, 'file': None, 'totals': {}, 'holds': {}, 'resets': {}, 'loops': {}, 'acks': []}


def usable_state(state, now):
    """The saved state when it is one (schema 1, an object), else a new one."""
    if not isinstance(state, dict) or state.get('schema') != SCHEMA:
        return new_state(now)
    for key, value in new_state(now).items():
        if isinstance(value, (dict, list)) and not isinstance(state.get(key), type(value)):
            state[key] = value
    return state


def collect(want, state, now, boot_id, boot_time, where, io, read=True):
    """One run of the kernel log: read the source (unless read is False: another check holds the lock, or the node
    has no AMD GPU), match, count resets and loops, update holds and totals.

    Returns (result, state): result is {'source', 'bytes', 'lines', 'truncated', 'lost', 'problem', 'explicit',
    'note', 'findings': [this run's findings], 'held': [holds not seen this run], 'stale': [fatal findings too old to
    hold], 'summary': last.json's kernel_log, 'want': the data file's values health.check_kernel_log reads}."""
    state = usable_state(state, now)
    extra = kernel_log_rules.validate_extra(want.get('kernel_log_extra_rules') or [])
    codes = kernel_log_rules.severities(extra)
    if read:
        got = read_source(want, state, boot_id, io)
    else:
        got = dict(_result('none'), explicit=False, choice=None)
    if got['source'] == 'file':
        anchor_file_times(got['records'], now)
    findings = match(got['records'], kernel_log_rules.compiled(extra), where, now, boot_time)
    listed = []
    for finding in findings.values():
        finding['count'] = len(finding['lines'])
        listed.append(finding)
    events = dict((finding['bdf'] or '', [moment for moment, _text in finding['events']])
                  for finding in listed if finding['code'] == 'KLOG_GPU_RESET')
    window = want['kernel_log_reset_loop_minutes'] * 60
    loops, state['resets'], state['loops'] = reset_loops(state.get('resets') or {}, state.get('loops') or {}, events,
                                                         want['kernel_log_reset_loop_count'], window)
    derived = kernel_log_rules.DERIVED[0]
    for key, number in loops.items():
        reset = next(finding for finding in listed if finding['code'] == 'KLOG_GPU_RESET' and
                     (finding['bdf'] or '') == key)
        listed.append({'code': derived['code'], 'severity': derived['severity'], 'bdf': key or None,
                       'gpu': reset['gpu'], 'via': reset['via'], 'count': number, 'time': reset['time'],
                       'last': reset['last'], 'resets': len(state['resets'].get(key) or []),
                       'description': 'the GPU reset %d times within %d min'
                                      % (want['kernel_log_reset_loop_count'], want['kernel_log_reset_loop_minutes'])})
    state['holds'], fresh, stale = holds_after(state.get('holds'), listed, now, want['kernel_log_hold_hours'])
    seen = set(_hold_key(finding['code'], finding['bdf']) for finding in listed)
    held = [hold for key, hold in sorted(state['holds'].items()) if key not in seen]
    run_counts = {}
    for finding in listed:
        run_counts[finding['code']] = run_counts.get(finding['code'], 0) + finding['count']
    totals = dict((code, int(count)) for code, count in (state.get('totals') or {}).items()
                  if isinstance(count, int) and ACK_CODE.match(str(code)))
    for code, count in run_counts.items():
        totals[code] = totals.get(code, 0) + count
    state['totals'] = totals
    if read:
        state['boot_id'] = boot_id
        if got.get('choice'):
            state['auto'] = got['choice']
        if got['position'] is not None and got['source'] in ('journal', 'kmsg', 'file'):
            state[got['source']] = got['position']
    for finding in listed:
        finding.pop('lines', None)
        finding.pop('events', None)
        finding['held'] = _hold_key(finding['code'], finding['bdf']) in fresh
    keys = ('source', 'bytes', 'lines', 'truncated', 'lost', 'problem', 'explicit', 'note')
    result = dict((key, got.get(key)) for key in keys)
    result.update(findings=sorted(listed, key=lambda item: (item['code'], item['bdf'] or '')), held=held,
                  stale=stale, read=read, summary=summary(got, run_counts, totals, codes),
                  want=dict((key, want[key]) for key in ('kernel_log_source', 'kernel_log_hold_hours',
                                                         'kernel_log_reset_loop_count',
                                                         'kernel_log_reset_loop_minutes')))
    return result, state
