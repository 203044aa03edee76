# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Small pure helpers shared by the GPU facts parsers (no AnsibleModule here).

The parsers raise ParseError (a ValueError) for input they cannot read; the modules turn it into a failed
result with the message. Everything else returns plain data: dicts, lists, str, int, float, bool, None, and every
number in it is finite and within MAX_NUMBER, so the facts pass json.dumps(..., allow_nan=False).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import math
import os
import re
import selectors
import signal
import subprocess
import sys
import time


class ParseError(ValueError):
    """The input is not a form the parser knows, or it was cut short. The message says which and what to do."""


# What to do when a GPU device node is not accessible; every facts module says it the same way.
PERMISSION_HINT = (
    'add the user to the render and video groups (role rocm_access) and start a new login session: group '
    'membership only applies to processes of a new login'
)

# Ways the tools spell "no value" (fixtures NOTES.md, "Unsupported is spelled many ways").
_NA = frozenset([
    '', 'n/a', 'na', 'none', 'unsupported', 'unknown', 'not supported', 'not available', '-1',
    '4294967295', '18446744073709551615',
])

# The tools print C integers of at most 64 bits; a number beyond that is damage, not a value. The converters below
# give None for it, so that no fact is a 300-digit int, a float Infinity or an overflow later on (bytes = MB * 2**20).
MAX_NUMBER = 2 ** 64
# Longer number texts are not converted at all (Python refuses ints over 4300 digits with a ValueError, and a
# 64-bit number with a unit and a hex part fits well within this).
_MAX_NUMBER_TEXT = 64
# No tool nests its JSON or its indented text more than a few levels; deeper input is refused before any
# recursive code (the json module, the readers) could end in RecursionError.
MAX_DEPTH = 32

_ANSI_RE = re.compile(r'\x1b\[[0-9;?]*[A-Za-z]')
_NUM_RE = re.compile(r'[-+]?\d+(?:\.\d+)?')
_BDF_RE = re.compile(r'^(?:([0-9a-fA-F]{4,8}):)?([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\.([0-7])$')


def strip_ansi(text):
    """rocminfo colours its error lines (ESC[31m ... ESC[0m) even when stdout is not a terminal."""
    return _ANSI_RE.sub('', text) if '\x1b' in text else text


def is_na(value):
    if value is None:
        return True
    if isinstance(value, str):
        return value.strip().lower() in _NA
    return False


def in_range(number):
    """number when it is a finite int or float of magnitude below MAX_NUMBER, else None."""
    if number is None or isinstance(number, bool) or not isinstance(number, (int, float)):
        return None
    if isinstance(number, float) and not math.isfinite(number):
        return None
    return number if -MAX_NUMBER < number < MAX_NUMBER else None


def to_int(value, base=10):
    """An int from 42, '42', ' 42 ', '0x2a' (base 16 implied) or '42(0x2a)'; None for N/A, junk or out of range."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        return in_range(value)
    if isinstance(value, float):
        value = in_range(value)
        return None if value is None else int(value)
    text = str(value).strip()
    if is_na(text) or len(text) > _MAX_NUMBER_TEXT:
        return None
    if '(' in text:
        text = text.split('(', 1)[0].strip()
    try:
        if text.lower().startswith('0x'):
            return in_range(int(text, 16))
        return in_range(int(text, base))
    except ValueError:
        return None


def to_float(value):
    """The first number in '28.0°C', '13.0W', '(1725Mhz)', 55 or 'N/A' (None); None when out of range."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        value = in_range(value)
        return None if value is None else float(value)
    text = str(value)
    if is_na(text):
        return None
    match = _NUM_RE.search(text)
    if not match or len(match.group(0)) > _MAX_NUMBER_TEXT:
        return None
    return in_range(float(match.group(0)))


def hex_id(value, width=4):
    """'0x740f' from 29711, '0x740F', '740f' or '29711(0x740f)'; None for N/A or junk."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        number = value
    else:
        text = str(value).strip()
        if is_na(text):
            return None
        if '(0x' in text:
            text = text.split('(0x', 1)[1].rstrip(')')
            number = _int_or_none(text, 16)
        elif text.lower().startswith('0x'):
            number = _int_or_none(text[2:], 16)
        elif re.match(r'^[0-9a-fA-F]+$', text):
            number = _int_or_none(text, 16)
        else:
            number = None
    if number is None or number < 0 or number >= MAX_NUMBER:
        return None
    return '0x{0:0{1}x}'.format(number, width)


def _int_or_none(text, base):
    try:
        return int(text, base)
    except ValueError:
        return None


def bdf_from_location(location_id, domain=0):
    """PCI address from rocminfo BDFID / KFD location_id (bus<<8 | dev<<3 | fn): 1280 -> '0000:05:00.0'."""
    location_id = to_int(location_id)
    if location_id is None or location_id <= 0 or location_id > 0xffff:
        return None
    domain = to_int(domain) or 0
    bus, device, function = location_id >> 8, (location_id >> 3) & 0x1f, location_id & 0x7
    return '{0:04x}:{1:02x}:{2:02x}.{3:x}'.format(domain, bus, device, function)


def normalize_bdf(value):
    """'0000:0b:00.0' (lower case, with domain) from '0000:0B:00.0' or '0b:00.0'; None when it is no address."""
    if not isinstance(value, str):
        return None
    match = _BDF_RE.match(value.strip())
    if not match:
        return None
    domain = match.group(1) or '0000'
    return '{0}:{1}:{2}.{3}'.format(domain.lower(), match.group(2).lower(), match.group(3).lower(),
                                    match.group(4))


def find_json_start(text):
    """Index of the JSON document in output that may start with warnings, or -1.

    rocm-smi prints 'WARNING: No AMD GPUs specified' before its JSON on the same stream, and amd-smi can print
    Python SyntaxWarnings first, so the document starts at the first line that begins with '{' or '['.
    """
    stripped = text.lstrip()
    if stripped[:1] in ('{', '['):
        return len(text) - len(stripped)
    for match in re.finditer(r'^[ \t]*[\[{]', text, re.M):
        return match.end() - 1
    return -1


_JSON_TOKEN_RE = re.compile(r'"(?:[^"\\]|\\.)*"?|[\[\]{}]')


def _json_depth_over(text, start, limit):
    """True when the JSON text from start opens more than limit arrays/objects inside each other."""
    depth = 0
    for match in _JSON_TOKEN_RE.finditer(text, start):
        token = match.group(0)
        if token in '[{':
            depth += 1
            if depth > limit:
                return True
        elif token in ']}':
            depth -= 1
            if depth <= 0:
                return False  # the end of the first document; raw_decode reads no further
    return False


def json_too_deep(text, limit=MAX_DEPTH):
    """Whether a JSON text nests more than limit arrays/objects (json.loads would end in RecursionError)."""
    start = find_json_start(text)
    return start >= 0 and _json_depth_over(text, start, limit)


def _json_number(text):
    """json's parse_float/parse_int: a number out of range (1e999, 400 digits) is no value, like N/A."""
    if len(text) > _MAX_NUMBER_TEXT:
        return None
    try:
        number = float(text) if any(char in text for char in '.eE') else int(text)
    except ValueError:
        return None
    return in_range(number)


def load_json(text, start, tool, command):
    """The JSON document that starts at text[start] (found by find_json_start); ParseError with the reason.

    "Cut short" is said only when the document was well formed up to the end of the text; text that merely
    starts with '{' or '[' and goes on with something else is "not JSON". NaN and Infinity, which Python tools
    print, and numbers out of range become None, like the tools' N/A.
    """
    if _json_depth_over(text, start, MAX_DEPTH):
        raise ParseError('{0} output is not JSON it prints: it nests more than {1} levels of arrays or objects. '
                         'Give the output of `{2}`.'.format(tool, MAX_DEPTH, command))
    decoder = json.JSONDecoder(parse_float=_json_number, parse_int=_json_number,
                               parse_constant=lambda _name: None)
    try:
        data, _end = decoder.raw_decode(text, start)
    except ValueError as exc:
        pos = getattr(exc, 'pos', None)
        msg = getattr(exc, 'msg', str(exc))
        if pos is not None and (pos >= len(text.rstrip()) or msg.startswith('Unterminated string')):
            raise ParseError('{0} JSON output is cut short: it ends inside the document ({1}). Save the whole '
                             'output of `{2}` and try again.'.format(tool, exc, command))
        where = ' at line {0} column {1}'.format(exc.lineno, exc.colno) if pos is not None else ''
        near = repr(text[pos:pos + 30]) if pos is not None else ''
        raise ParseError('{0} output is not valid JSON: {1}{2} (near {3}). This is not the output of `{4}`, or it '
                         'was damaged.'.format(tool, msg, where, near, command))
    return data


# --- shared by the facts modules (plain data in, plain data out; host/facts_module.py makes the module calls) ---

_CORE_DIR = re.compile(r'^core-(\d+)\.(\d+)$')
# Where tool_dirs() looks, for messages.
TOOL_DIRS_TEXT = '/opt/rocm/bin, /opt/rocm/core/bin, /opt/rocm/core-X.Y/bin'


def newest_core(rocm_path='/opt/rocm'):
    """The newest ROCm Core SDK release folder under rocm_path (/opt/rocm/core-10.1: what /opt/rocm/core links to),
    or None."""
    try:
        names = os.listdir(rocm_path)
    except OSError:
        return None
    releases = []
    for name in names:
        match = _CORE_DIR.match(name)
        if match:
            releases.append((int(match.group(1)), int(match.group(2)), name))
    return os.path.join(rocm_path, max(releases)[2]) if releases else None


def _core_paths(rocm_path, *parts):
    """<rocm_path>/core/<parts>, then <newest core-X.Y>/<parts> (for a node whose /opt/rocm/core link is missing)."""
    newest = newest_core(rocm_path)
    return [os.path.join(rocm_path, 'core', *parts)] + ([os.path.join(newest, *parts)] if newest else [])


def tool_dirs(rocm_path='/opt/rocm'):
    """Where the ROCm tools are when PATH lacks them (docs/rocm-reference.md 13): <rocm_path>/bin - the legacy
    release's own folder behind the /opt/rocm link (/opt/rocm-X.Y.Z/bin), or on a ROCm Core SDK node an
    update-alternatives link to the newest Core release's bin -, then <rocm_path>/core/bin (core links to the newest
    release, core-X.Y), then that release's bin."""
    return [os.path.join(rocm_path, 'bin')] + _core_paths(rocm_path, 'bin')


def rocm_version_files(rocm_path='/opt/rocm'):
    """The installed ROCm's version file, in the order to read them: the legacy stream's <rocm_path>/.info/version
    (/opt/rocm links to /opt/rocm-X.Y.Z), then the ROCm Core SDK's <rocm_path>/core/.info/version (core links to the
    newest release, core-X.Y; TheRock#5475), then that release's own. A Core file holds the release and its build
    ('10.1.0-2')."""
    return [os.path.join(rocm_path, '.info', 'version')] + _core_paths(rocm_path, '.info', 'version')


def missing_tool(tool, package=None):
    """The `error` of a host without the tool: not a failure, `present` is false. package None: an optional tool
    (rocm-smi), which the error says the facts do without."""
    where = '{0} was not found in PATH or {1}'.format(tool, TOOL_DIRS_TEXT)
    if package is None:
        return ('{0}: it is optional. amd-smi replaces it, and the ROCm Core SDK is dropping it (TheRock stopped '
                'building it in July 2026, TheRock#6852); the GPU facts come from rocminfo, amd-smi and '
                'sysfs.'.format(where))
    return ('{0}: install ROCm (role rocm_sdk; the legacy stream\'s {1} package, a ROCm Core SDK release\'s '
            'amdrocm<X.Y>) or point `executable` at it.'.format(where, package))


def read_src(path):
    """Text of a saved tool output; IOError/OSError propagate with the path in the message."""
    with open(path, 'rb') as handle:
        data = handle.read()
    return data.decode('utf-8', 'replace')


def combined(stdout, stderr):
    """stdout, then stderr: the tools print their error messages on either stream."""
    stdout, stderr = stdout or '', stderr or ''
    return stdout + ('\n' + stderr if stderr.strip() else '')


# --- what every module returns: valid UTF-8, and tools that cannot hang a run -------------------------------------

# A byte that is not UTF-8 in a tool's output or a file name reaches Python as a lone surrogate (surrogateescape),
# and ansible-core refuses a module reply holding one. Each is replaced by U+FFFD and the place named.
_NOT_UTF8_RE = re.compile(u'[\ud800-\udfff]')
REPLACEMENT = u'\ufffd'
# Seconds a GPU tool may run (rocminfo, rocm-smi, amd-smi take one or two on a healthy node; a wedged GPU or
# driver makes them block for ever). coreutils' timeout sends TERM, then KILL KILL_AFTER seconds later.
TOOL_TIMEOUT = 60
KILL_AFTER = 5
_TIMED_OUT = (124, 137)


# The most bytes of each of a tool's two streams kept, counted while reading (rocm-smi --showall --json on eight GPUs
# prints about 100 KiB, amd-smi metric --json some hundreds): a tool that prints more is stopped and its output cut
# there. Before, the whole output was read first, and a tool printing without end ran the module out of memory.
MAX_OUTPUT_BYTES = 16 << 20
# Seconds the run still waits for the end of the output once the tool itself exited: a process it started that keeps
# its stdout or stderr open (a daemon, `sleep 30 &`) is killed with the tool's process group then.
LINGER = KILL_AFTER
# Seconds the output is still read after the group got SIGKILL: then the pipes are closed, whoever still holds them
# (a process that left the group, one stuck in the kernel), and the run returns.
DRAIN = 1.0
_READ_SIZE = 1 << 16
# Popen's arguments that start a tool as the leader of a process group of its own, which read_bounded kills whole:
# process_group=0 where Python has it (3.11): start_new_session's setsid() keeps Popen from using vfork(), about 3 ms
# more per run (tests/bench/command_runner.py).
NEW_GROUP = {'process_group': 0} if sys.version_info >= (3, 11) else {'start_new_session': True}


class ToolTimeout(Exception):
    """A tool did not finish within its time and was stopped; the message names it and the time."""


class ToolOutputCut(ToolTimeout):
    """A tool printed more than MAX_OUTPUT_BYTES on a stream and was stopped; the message names it and the bytes."""


class ToolHeldOpen(ToolTimeout):
    """A tool exited, but a process it started kept its output open and was killed; the output may be incomplete."""


class RunResult(tuple):
    """(rc, stdout, stderr) as process_run returns it, with how the run ended: stopped is None (the tool ended and its
    output was read to the end), 'timeout', 'output_cut' or 'held_open'; cut maps a stream to the bytes the tool
    printed on it before it was stopped, where that was over the limit; message says what was done, in words."""

    def __new__(cls, rc, stdout, stderr, stopped=None, cut=None, message=None):
        result = tuple.__new__(cls, (rc, stdout, stderr))
        result.stopped, result.cut, result.message = stopped, cut or {}, message
        return result


def _kill_group(pgid, sig):
    try:
        os.killpg(pgid, sig)
    except OSError:
        pass  # the group is gone already


def read_bounded(proc, timeout=None, limit=MAX_OUTPUT_BYTES, grace=KILL_AFTER, linger=LINGER, drain=DRAIN):
    """(stdout bytes, stderr bytes, stopped, cut) of proc, a Popen started as the leader of its own process group
    (**NEW_GROUP) with both streams piped; proc is reaped where it could be.

    Each stream keeps its first limit bytes; a byte over the limit stops the tool: SIGTERM to its whole process
    group, SIGKILL grace seconds later ('output_cut'). So does the timeout ('timeout'), and the tool exiting while a
    process it started holds its output open for linger seconds more ('held_open', straight to SIGKILL: the tool is
    gone). After the SIGKILL the output is read at most drain seconds more, then the pipes are closed: a process
    that left the group or is stuck in the kernel cannot hold the run. The output is read in 64 KiB pieces as it
    comes, so a tool that ends normally costs no more than communicate()."""
    started = time.monotonic()
    deadline = None if timeout is None else started + timeout
    names = {proc.stdout.fileno(): 'stdout', proc.stderr.fileno(): 'stderr'}
    kept = {'stdout': [], 'stderr': []}
    sizes = {'stdout': 0, 'stderr': 0}
    stopped, exited_at, kill_at, give_up_at = None, None, None, None
    selector = selectors.PollSelector() if hasattr(selectors, 'PollSelector') else selectors.SelectSelector()
    try:
        for fd in names:
            selector.register(fd, selectors.EVENT_READ)
        while True:
            if exited_at is None and proc.poll() is not None:
                exited_at = time.monotonic()
            if not selector.get_map() and exited_at is not None:
                break
            now = time.monotonic()
            if stopped is None and deadline is not None and now >= deadline:
                stopped, kill_at = 'timeout', now + grace
                _kill_group(proc.pid, signal.SIGTERM)
            elif stopped is None and exited_at is not None and now >= exited_at + linger:
                stopped, kill_at = 'held_open', now
            if kill_at is not None and now >= kill_at:
                _kill_group(proc.pid, signal.SIGKILL)
                kill_at, give_up_at = None, now + drain
            if give_up_at is not None and now >= give_up_at:
                break
            wake = [point for point in (deadline if stopped is None else None, kill_at, give_up_at,
                                        exited_at + linger if exited_at is not None and stopped is None else None)
                    if point is not None]
            wait = max(0.0, min(wake) - now) if wake else None
            if not selector.get_map():  # both streams ended: only the tool's exit is awaited, at once when it comes
                try:
                    proc.wait(timeout=wait)
                except subprocess.TimeoutExpired:
                    pass
                continue
            if exited_at is None:
                wait = 0.1 if wait is None else min(wait, 0.1)  # to see the tool exit while its output stays open
            for key, _event in selector.select(wait):
                try:
                    chunk = os.read(key.fd, _READ_SIZE)
                except (BlockingIOError, InterruptedError):
                    continue
                if not chunk:
                    selector.unregister(key.fd)
                    continue
                name = names[key.fd]
                room = limit - sizes[name]
                if room > 0:
                    kept[name].append(chunk[:room] if len(chunk) > room else chunk)
                sizes[name] += len(chunk)
                if sizes[name] > limit and stopped is None:
                    stopped, kill_at = 'output_cut', time.monotonic() + grace
                    _kill_group(proc.pid, signal.SIGTERM)
    finally:
        selector.close()
        proc.stdout.close()
        proc.stderr.close()
    if stopped is not None:
        try:
            proc.wait(timeout=drain)
        except subprocess.TimeoutExpired:
            pass  # stuck in the kernel (a wedged driver): Popen reaps it later, the run does not wait
    else:
        proc.wait()  # both streams ended and the tool exited: at once
    cut = dict((name, size) for name, size in sizes.items() if size > limit)
    return b''.join(kept['stdout']), b''.join(kept['stderr']), stopped, cut


def stop_message(argv, stopped, seconds, cut, limit=MAX_OUTPUT_BYTES, linger=LINGER):
    """What read_bounded did, in words naming the tool (its first three words), the time and the bytes."""
    shown = ' '.join(argv[:3])
    if stopped == 'timeout':
        return '%s did not finish within %s s and was stopped' % (shown, seconds)
    if stopped == 'output_cut':
        return '%s printed more than %d bytes on its %s and was stopped: the output was cut at %d bytes' % (
            shown, limit, ' and '.join(sorted(cut)), limit)
    if stopped == 'held_open':
        return ('%s exited, but a process it started kept its output open %s s later and was killed with its process '
                'group: the output may be incomplete' % (shown, linger))
    return None


def valid_utf8(value, where, places=None):
    """value (a str, or dicts and lists of them) with every character that cannot be UTF-8 replaced by U+FFFD.

    places (a list) gets the path of each replaced string ('where.key.0'), keys included, so the notice can name
    the tool or the file. Everything else is returned as it is."""
    if isinstance(value, str):
        if _NOT_UTF8_RE.search(value):
            if places is not None:
                places.append(where)
            return _NOT_UTF8_RE.sub(REPLACEMENT, value)
        return value
    if isinstance(value, dict):
        return dict((valid_utf8(key, '%s.%s' % (where, key), places),
                     valid_utf8(item, '%s.%s' % (where, key), places)) for key, item in value.items())
    if isinstance(value, (list, tuple)):
        return [valid_utf8(item, '%s.%d' % (where, index), places) for index, item in enumerate(value)]
    return value


def utf8_notice(places):
    """The notice for the places valid_utf8() changed; None when there are none."""
    if not places:
        return None
    shown = [_NOT_UTF8_RE.sub(REPLACEMENT, place) for place in places[:10]]
    more = ' and %d more' % (len(places) - 10) if len(places) > 10 else ''
    return ('bytes that are not UTF-8 were replaced by U+FFFD in %s%s (a file name or a tool output that is not '
            'UTF-8: a flashed card string, a user\'s link)' % (', '.join(shown), more))


def process_run(argv, environ_update=None, timeout=None, limit=MAX_OUTPUT_BYTES):
    """(rc, stdout, stderr) of argv, as AnsibleModule.run_command returns them (text, undecodable bytes kept as
    surrogates), through subprocess: ansible-core 2.19's run_command waits one second more when the process exits
    between its two checks after both pipes closed, and coreutils' timeout closes them before it exits (a few runs in
    a thousand on the host, more in a container: one probe in three took a second longer, docs/performance.md). A
    missing program is rc 127, as in a shell.

    Bounded while reading (read_bounded): each stream keeps at most limit bytes, the tool leads a process group of
    its own and that whole group is stopped at timeout seconds (None: no limit of time), when it prints more
    than limit bytes, or when it exits while a process it started holds its output open. The result is a RunResult:
    its stopped, cut and message say so, and the message ends stderr. A stopped tool's rc is 124, as under
    coreutils' timeout, unless it exited on its own."""
    env = dict(os.environ)
    env.update(environ_update or {})
    # As run_command: the module's own payload is not on a Python child's path (rocm-smi is a Python program).
    paths = [path for path in env.get('PYTHONPATH', '').split(':')
             if path and not path.endswith(('/ansible_modlib.zip', '/debug_dir'))]
    if paths:
        env['PYTHONPATH'] = ':'.join(paths)
    else:
        env.pop('PYTHONPATH', None)
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=env, close_fds=True, **NEW_GROUP)
    except OSError as exc:
        return RunResult(127, '', '%s: %s' % (argv[0], exc.strerror or exc))
    stdout, stderr, stopped, cut = read_bounded(proc, timeout, limit)
    stdout, stderr = stdout.decode('utf-8', 'surrogateescape'), stderr.decode('utf-8', 'surrogateescape')
    message = stop_message(argv, stopped, timeout, cut, limit)
    rc = proc.returncode
    if message:
        stderr += ('\n' if stderr and not stderr.endswith('\n') else '') + message + '\n'
        if stopped == 'timeout' or rc is None:
            rc = 124
    return RunResult(rc, stdout, stderr, stopped, cut, message)


def timed_run(run, timeout_path, seconds=TOOL_TIMEOUT, notices=None):
    """A run(argv, **kwargs) -> (rc, stdout, stderr) like AnsibleModule.run_command's, where each tool runs under
    coreutils' timeout and its output is valid UTF-8 (a replaced byte adds a notice to notices, naming the tool).

    A tool stopped by the timeout raises ToolTimeout; one that printed more than run's limit ToolOutputCut, one
    that exited while a process it started held its output open ToolHeldOpen (both ToolTimeouts: stopped tools).
    run gets timeout=: process_run stops the tool's whole process group itself, at the limit without coreutils and
    KILL_AFTER + 1 s after coreutils' own KILL with it (a process that left coreutils' watch: a daemon it started)."""
    def bounded(argv, **kwargs):
        argv = list(argv)
        limit = kwargs.pop('seconds', None) or seconds
        full = ([timeout_path, '--kill-after=%d' % KILL_AFTER, '%d' % max(1, limit)] if timeout_path else []) + argv
        kwargs.setdefault('timeout', max(1, limit) + (2 * KILL_AFTER + 1 if timeout_path else 0))
        result = run(full, **kwargs)
        rc, stdout, stderr = result
        stopped = getattr(result, 'stopped', None)
        if stopped in ('output_cut', 'held_open'):
            message = stop_message(argv, stopped, limit, result.cut, kwargs.get('limit', MAX_OUTPUT_BYTES))
            raise (ToolOutputCut if stopped == 'output_cut' else ToolHeldOpen)(message)
        if stopped == 'timeout' or (timeout_path and rc in _TIMED_OUT):
            raise ToolTimeout('%s did not finish within %d s and was stopped' % (' '.join(argv[:3]), limit))
        places = []
        stdout, stderr = valid_utf8(stdout, 'stdout', places), valid_utf8(stderr, 'stderr', places)
        if places and notices is not None:
            notices.append('%s printed bytes that are not UTF-8 (in its %s); they were replaced by U+FFFD'
                           % (' '.join(argv[:3]), ' and '.join(sorted(set(places)))))
        return rc, stdout, stderr
    return bounded
