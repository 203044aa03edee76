# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpulab-gpu-health: read the node (sysfs, /dev, rocminfo, amd-smi, each tool with a timeout), run the checks of
health.py, write /var/lib/gpulab/health/last.json, exit 0 healthy, 1 unhealthy, 2 could not run.

Runs on the node without Ansible: rocm_health copies this file and the module_utils it imports into
/usr/lib/gpulab/python with the package layout, and /usr/sbin/gpulab-gpu-health calls main(). Standard library only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import argparse
import errno
import fcntl
import grp
import json
import os
import re
import shutil
import socket
import stat
import subprocess
import sys
import time

from ansible_collections.gpulab.rocm.plugins.module_utils.node import health, kernel_log, kernel_log_rules
from ansible_collections.gpulab.rocm.plugins.module_utils.parsers import amd_smi, gpu_sysfs, gpu_tools, pci
from ansible_collections.gpulab.rocm.plugins.module_utils.parsers._facts_common import (
    MAX_OUTPUT_BYTES, NEW_GROUP, ParseError, read_bounded, stop_message, tool_dirs,
)
from ansible_collections.gpulab.rocm.plugins.module_utils.host.root_files import write_atomic

DATA = '/etc/gpulab/health.json'
STATE_DIR = '/var/lib/gpulab/health'
MAX_DATA_BYTES = 1024 * 1024
EXIT = {'healthy': 0, 'unhealthy': 1, 'error': 2}
# A kernel's module list (modules.dep) is about 1 MiB on a distribution kernel; read at most this much of it.
MODULES_DEP_MAX = 16 << 20
# Seconds a run waits for the kernel log's lock (another check, the prolog or an acknowledgement holds it).
LOCK_WAIT = 10.0
_RELEASE = re.compile(r'^[A-Za-z0-9._+~-]{1,200}$')
_BDF_DIR = re.compile(r'^[0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$')


class Timeout(Exception):
    pass


class OutputTooLarge(Timeout):
    """The tool printed more than MAX_OUTPUT_BYTES on a stream and was stopped; the message says so, in bytes."""


def run_tool(argv, timeout):
    """(rc, stdout, stderr) of argv, bounded while it runs (_facts_common.read_bounded): at most MAX_OUTPUT_BYTES of
    each stream are read; the tool's whole process group is stopped (SIGTERM, SIGKILL 5 s later) after timeout
    seconds (Timeout), when it prints more (OutputTooLarge, a Timeout too) or when a process it started holds its
    output open 5 s after it exited (Timeout); the run never waits for the end of a stopped tool's output."""
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                               env=dict(os.environ, LC_ALL='C'), **NEW_GROUP)
    out, err, stopped, cut = read_bounded(process, timeout, MAX_OUTPUT_BYTES)
    if stopped == 'output_cut':
        raise OutputTooLarge(stop_message([os.path.basename(argv[0])] + list(argv[1:]), stopped, timeout, cut,
                                          MAX_OUTPUT_BYTES))
    if stopped:
        raise Timeout(argv[0])
    return process.returncode, out.decode('utf-8', 'replace'), err.decode('utf-8', 'replace')


def run_bounded(argv, timeout, limit):
    """(rc, stdout bytes, stderr bytes, stopped) of argv, its output read to at most limit bytes per stream while it
    runs and the tool stopped past that or past timeout (read_bounded, as run_tool): the kernel log's journalctl,
    whose output is used up to the cut (its last complete entry), not refused. rc is None where the tool was stopped
    and had not exited yet."""
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                               env=dict(os.environ, LC_ALL='C', SYSTEMD_PAGER='', SYSTEMD_COLORS='0'), **NEW_GROUP)
    out, err, stopped, _cut = read_bounded(process, timeout, limit)
    return process.returncode, out, err, stopped


def find_tool(name, path=None):
    """The tool in PATH, else in the ROCm folders, legacy or Core SDK (_facts_common.tool_dirs)."""
    search = os.pathsep.join([path or os.environ.get('PATH') or '/usr/sbin:/usr/bin:/sbin:/bin'] + tool_dirs())
    return shutil.which(name, path=search)


def stat_node(path):
    """{'path', 'exists', 'char', 'group'} of a device node, never following a link."""
    try:
        info = os.lstat(path)
    except OSError:
        return {'path': path, 'exists': False, 'char': False, 'group': None}
    try:
        group = grp.getgrgid(info.st_gid).gr_name
    except KeyError:
        group = str(info.st_gid)
    return {'path': path, 'exists': True, 'char': stat.S_ISCHR(info.st_mode), 'group': group}


def rocminfo_result(timeout, find=find_tool, run=run_tool):
    try:
        facts = gpu_tools.read_rocminfo(lambda argv: run(argv, timeout), find)
    except OutputTooLarge as exc:
        return {'status': 'error', 'message': str(exc)}
    except Timeout:
        return {'status': 'timeout', 'seconds': timeout}
    except ParseError as exc:
        return {'status': 'error', 'message': str(exc)}
    if not facts['present']:
        return {'status': 'absent'}
    return {'status': 'ok', 'facts': facts}


def amd_smi_result(binary, args, timeout, run=run_tool):
    """{'status': 'ok', 'entries'} or {'status': 'fail', 'message'}: amd-smi that hangs, exits non-zero or prints
    what is no amd-smi output is a failed check (fail closed)."""
    argv = [binary] + args
    shown = ['amd-smi'] + args
    try:
        rc, out, err = run(argv, timeout)
    except OutputTooLarge as exc:
        return {'status': 'fail', 'argv': shown, 'message': str(exc)}
    except Timeout:
        return {'status': 'fail', 'argv': shown, 'message': 'did not finish within %s s' % timeout}
    if rc != 0:
        first = next((line.strip() for line in (err + '\n' + out).splitlines() if line.strip()), 'no output')
        return {'status': 'fail', 'argv': shown, 'message': 'exit status %d: %s' % (rc, first[:200])}
    try:
        return {'status': 'ok', 'entries': amd_smi.read_entries(out)}
    except ParseError as exc:
        return {'status': 'fail', 'argv': shown, 'message': str(exc)}


def amdgpu_module(root='/', release=None, limit=MODULES_DEP_MAX):
    """Whether the running kernel has an amdgpu module: {'release', 'path', 'status': 'listed' (modules.dep names an
    amdgpu.ko, .ko.xz, .ko.zst...), 'missing' (it names none), 'absent' (no modules.dep) or 'error', 'entry',
    'message'}. modules.dep is read under root (tests), never through a link, at most limit bytes."""
    release = release or os.uname()[2]
    shown = '/lib/modules/%s/modules.dep' % release
    result = {'release': release, 'path': shown, 'status': 'error', 'entry': None, 'message': None}
    if not _RELEASE.match(release):
        result['message'] = 'the kernel release %r is not one a path can be made of' % release
        return result
    path = os.path.join(root, 'lib', 'modules', release, 'modules.dep')
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        result.update(status='absent' if exc.errno == errno.ENOENT else 'error',
                      message='%s: %s' % (shown, exc.strerror or exc))
        return result
    with os.fdopen(fd, 'rb') as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            result['message'] = '%s is not a regular file' % shown
            return result
        size, rest = 0, b''
        while size <= limit:
            chunk = handle.read(1 << 20)
            if not chunk:
                break
            size += len(chunk)
            lines = (rest + chunk).split(b'\n')
            rest = lines.pop()
            for line in lines:
                module = line.split(b':', 1)[0].strip()
                name = module.rsplit(b'/', 1)[-1]
                if name == b'amdgpu.ko' or name.startswith(b'amdgpu.ko.'):
                    result.update(status='listed', entry=module.decode('utf-8', 'replace'))
                    return result
        if size > limit:
            result['message'] = '%s is larger than %d bytes: not read to its end' % (shown, limit)
            return result
    result['status'] = 'missing'
    return result


def pci_parents(device_dir):
    """The PCI functions above a function (its sysfs path's PCI addresses, nearest last): the ports a PCIe message
    may name for it."""
    parts = os.path.realpath(device_dir).split(os.sep)
    return [part for part in parts[:-1] if _BDF_DIR.match(part)]


def gather(want, find=find_tool, run=run_tool, root='/', release=None):
    """Everything the checks read, from want's sysfs_root and dev_root and the tools."""
    sysfs, dev = want['sysfs_root'], want['dev_root']
    facts = pci.gather_pci(sysfs_root=sysfs)
    kfd_gpu_nodes = [node for node in facts['kfd_nodes'] if node['type'] == 'gpu']
    index = {}
    for number, node in enumerate(kfd_gpu_nodes):
        index.setdefault(node['bdf'], number)
    devices_dir = os.path.join(sysfs, 'bus', 'pci', 'devices')
    gpus = []
    for device in facts['amd']:
        device_dir = os.path.join(devices_dir, device['bdf'])
        render = device['render_node']
        gpus.append({
            'bdf': device['bdf'], 'gpu': index.get(device['bdf']), 'device_id': device['device_id'],
            'driver': device['driver'], 'link': device['link'],
            'aer': gpu_sysfs.aer_totals(gpu_sysfs.read_aer(device_dir)),
            'replay': gpu_sysfs.read_int(os.path.join(device_dir, 'pcie_replay_count')),
            'parents': pci_parents(device_dir),
            'render': stat_node(os.path.join(dev, 'dri', os.path.basename(render))) if render else None,
        })
    inputs = {
        'kfd_physical_gpus': facts['kfd_physical_gpus'] if facts['kfd_present'] else None,
        'kfd_gpu_nodes': len(kfd_gpu_nodes),
        'gpus': gpus,
        'amdgpu_loaded': os.path.isdir(os.path.join(sysfs, 'module', 'amdgpu')),
        'amdgpu_module': None,
        'kfd': stat_node(os.path.join(dev, 'kfd')),
        'rocminfo': rocminfo_result(want['rocminfo_timeout'], find, run),
        'amd_smi': None,
    }
    inputs['amdgpu_module'] = (amdgpu_module(root, release) if gpus and not inputs['amdgpu_loaded']
                               else {'release': release or os.uname()[2]})
    binary = find('amd-smi')
    if binary:
        inputs['amd_smi'] = {
            'metric': amd_smi_result(binary, ['metric', '--json'], want['amd_smi_timeout'], run),
            'bad_pages': amd_smi_result(binary, ['bad-pages'], want['amd_smi_timeout'], run),
        }
    return inputs


def checks(want, inputs, previous_aer, previous_replay=None, kernel=None):
    """The entries of every check, in the order docs/health.md lists them."""
    gpus = inputs['gpus']
    entries = health.check_gpu_count(inputs['kfd_physical_gpus'], len(gpus), want['gpu_count'])
    if not gpus and not inputs['kfd_gpu_nodes'] and want['gpu_count'] in (0, -1):
        return entries  # no AMD GPU expected or found: the driver, device node and tool checks do not apply
    entries += health.check_amdgpu(inputs['amdgpu_loaded'], gpus)
    entries += health.check_amdgpu_module(inputs['amdgpu_loaded'], inputs.get('amdgpu_module') or {})
    entries += health.check_device_nodes(inputs['kfd'], [dict(gpu, node=gpu['render']) for gpu in gpus], want)
    entries += health.check_rocminfo(inputs['rocminfo'], inputs['kfd_gpu_nodes'])
    entries += health.check_links(gpus, want)
    entries += health.check_aer(gpus, previous_aer, want)
    entries += health.check_pcie_replay(gpus, previous_replay or {})
    if inputs['amd_smi'] is not None:  # where amd-smi is installed
        entries += health.check_ecc(inputs['amd_smi']['metric'], want)
        entries += health.check_bad_pages(inputs['amd_smi']['bad_pages'], want)
        entries += health.check_xgmi(inputs['amd_smi']['metric'])
    if kernel is not None:
        entries += health.check_kernel_log(kernel)
    return entries


def lock_kernel_log(state_dir, wait=None, sleep=time.sleep):
    """An exclusive lock on the kernel log's state (kernel-log.lock in state_dir, root's folder), waited for at most
    wait seconds; the open file descriptor, or None when another run kept it."""
    fd = os.open(os.path.join(state_dir, kernel_log.LOCK_FILE),
                 os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | getattr(os, 'O_CLOEXEC', 0), 0o600)
    deadline = time.time() + (LOCK_WAIT if wait is None else wait)
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EACCES) or time.time() >= deadline:
                os.close(fd)
                return None
        sleep(0.1)


def read_state(path):
    """A state file of ours, or None where it is absent or not one we can use (a new state is made)."""
    try:
        return read_json(path)
    except health.DataError:
        return None


def kernel_log_step(want, state_dir, inputs, io, now):
    """The kernel log's run (kernel_log.collect) under its lock, its state read and written: the result
    health.check_kernel_log reads, with last.json's "kernel_log" in result['summary']. A node with no AMD GPU reads
    no log (and reports none); where another run holds the lock, this one reads nothing and reports the held
    findings."""
    io = dict({'find': find_tool, 'run': run_bounded}, **(io or {}))
    path = os.path.join(state_dir, kernel_log.STATE_FILE)
    where = kernel_log.topology(inputs['gpus'], dict((gpu['bdf'], gpu.get('parents') or []) for gpu in inputs['gpus']))
    wanted = bool(inputs['gpus'] or inputs['kfd_gpu_nodes'] or want['gpu_count'] > 0)
    lock = lock_kernel_log(state_dir)
    try:
        boot_id = kernel_log.read_boot_id(io.get('boot_id_path') or kernel_log.BOOT_ID_PATH)
        boot_time = io['boot_time'] if io.get('boot_time') is not None else time.time() - time.monotonic()
        try:
            result, state = kernel_log.collect(want, read_state(path), now, boot_id, boot_time, where, io,
                                               read=wanted and lock is not None)
        except (ValueError, TypeError, KeyError, AttributeError, re.error) as exc:
            # A fault of the reader itself (a state or a log no test foresaw): the other checks still run; the entry
            # warns with it, and the state is left as it was for the next run.
            return kernel_log_failed(want, '%s: %s' % (type(exc).__name__, str(exc)[:200]))
        if lock is None:
            result['problem'] = 'another check holds the kernel log (%s): the held findings are reported' % (
                os.path.join(state_dir, kernel_log.LOCK_FILE))
        else:
            write_json(path, state)
    finally:
        if lock is not None:
            os.close(lock)
    return result


def kernel_log_failed(want, why):
    """The kernel log's result where its reader failed: a warning entry that says why, nothing counted."""
    got = kernel_log._result('none', problem='the kernel log reader failed (%s)' % why)
    codes = kernel_log_rules.severities()
    return dict(got, explicit=True, note=None, findings=[], held=[], stale=[], read=True,
                summary=kernel_log.summary(got, {}, {}, codes),
                want=dict((key, want[key]) for key in ('kernel_log_source', 'kernel_log_hold_hours',
                                                       'kernel_log_reset_loop_count',
                                                       'kernel_log_reset_loop_minutes')))


def ack_kernel_log(state_dir, codes, now=None, out=None):
    """gpulab-gpu-health --ack-kernel-log [CODE...]: end the holds of those codes (all without one) so that the next
    check passes again (gpulab-slurm-health then resumes the node it drained). 0 when something was acknowledged or
    nothing was held, 1 when codes were named and none is held, 2 for a code that is no code."""
    out = out or sys.stdout
    now = time.time() if now is None else now
    if not os.path.isdir(state_dir):
        say('gpulab-gpu-health: nothing is held (no %s)' % state_dir, out)
        return 0
    lock = lock_kernel_log(state_dir, wait=30.0)
    if lock is None:
        say('gpulab-gpu-health: another check holds %s; try again' % kernel_log.LOCK_FILE, sys.stderr)
        return 2
    try:
        path = os.path.join(state_dir, kernel_log.STATE_FILE)
        state = kernel_log.usable_state(read_state(path), now)
        who = os.environ.get('SUDO_USER') or str(os.geteuid())
        try:
            state, removed = kernel_log.acknowledge(state, list(codes), now, who if re.match(r'^[\w.-]{1,64}$', who)
                                                    else '?')
        except ValueError as exc:
            say('gpulab-gpu-health: %s' % exc, sys.stderr)
            return 2
        write_json(path, state)
    finally:
        os.close(lock)
    for hold in removed:
        seen = time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(hold.get('last') or 0))
        say('acknowledged %s on %s (last seen %s)' % (hold.get('code'), hold.get('bdf') or 'the node', seen), out)
    if removed:
        say('the next check passes for these; gpulab-slurm-health resumes a node it drained for them', out)
        return 0
    say('gpulab-gpu-health: nothing held%s' % (' for %s' % ', '.join(codes) if codes else ''), out)
    return 1 if codes else 0


def read_json(path, limit=MAX_DATA_BYTES):
    """A JSON file read without following a link, at most limit bytes; None when it is absent. Only a regular file
    is read (open does not wait for a FIFO's writer; a device such as /dev/zero is refused before any read)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        if not os.path.lexists(path):
            return None
        raise health.DataError('cannot open %s: %s' % (path, exc))
    with os.fdopen(fd, 'rb') as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise health.DataError('%s is not a regular file: not read' % path)
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise health.DataError('%s is larger than %d bytes' % (path, limit))
    try:
        return json.loads(data.decode('utf-8'))
    except ValueError as exc:
        raise health.DataError('%s is not JSON: %s' % (path, exc))


def read_result(path=STATE_DIR + '/last.json'):
    """The last result as the fleet report shows it: {'verdict', 'time', 'failing': ['CODE: reason'], 'error'};
    None where the check never ran. The file is refused when it is a link, not root's, writable by group or other,
    or over 1 MiB (the same rules as the metrics textfile's reader)."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    refused = ('a link' if stat.S_ISLNK(info.st_mode) else 'not a file' if not stat.S_ISREG(info.st_mode)
               else 'not owned by root' if info.st_uid != 0 else 'writable by group or other'
               if info.st_mode & 0o022 else None)
    if refused:
        return {'verdict': None, 'time': None, 'failing': [], 'error': '%s is %s: not read' % (path, refused)}
    try:
        result = read_json(path)
        entries = [item for item in result.get('checks') or [] if isinstance(item, dict)]
        return {'verdict': str(result.get('verdict')), 'time': result.get('time'), 'error': None,
                'failing': ['%s: %s' % (item.get('code'), item.get('reason')) for item in entries
                            if item.get('status') in ('fail', 'error')]}
    except (health.DataError, AttributeError) as exc:
        return {'verdict': None, 'time': None, 'failing': [], 'error': '%s: %s' % (path, exc)}


def read_recorded_count(path=DATA):
    """The GPU count the data file records (rocm_health keeps it: a GPU that fell off the bus must not lower what the
    check expects), or None where there is no such file or it is not a root-owned JSON object with one."""
    try:
        info = os.lstat(path)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != 0:
            return None
        count = (read_json(path) or {}).get('gpu_count')
    except (OSError, health.DataError, AttributeError):
        return None
    return count if isinstance(count, int) and not isinstance(count, bool) else None


def write_json(path, value):
    owner = (0, 0) if os.geteuid() == 0 else None
    write_atomic(path, (json.dumps(value, indent=1, sort_keys=True) + '\n').encode('utf-8'), 0o644, owner)


def run(data_path=DATA, state_dir=STATE_DIR, find=find_tool, runner=run_tool, io=None, now=None, root='/',
        release=None):
    """The result object (docs/health.md, the interface with the metrics); writes last.json and the state: the AER
    counters (aer.json), the PCIe replay counts (replay.json) and the kernel log's (kernel-log.json). io: the kernel
    log's readers (kernel_log.read_source; the tests give theirs); root and release: where and for which kernel
    modules.dep is read (the tests)."""
    now = time.time() if now is None else now
    if not os.path.isdir(state_dir):
        os.makedirs(state_dir, 0o755)
    kernel = None
    try:
        data = read_json(data_path)
        if data is None:
            raise health.DataError('%s is missing (role rocm_health writes it)' % data_path)
        want = health.expected(data)
        previous = read_state(os.path.join(state_dir, 'aer.json')) or {}
        replays = read_state(os.path.join(state_dir, 'replay.json')) or {}
        inputs = gather(want, find, runner, root, release)
        kernel = kernel_log_step(want, state_dir, inputs, io, now)
        entries = checks(want, inputs, previous if isinstance(previous, dict) else {},
                         replays if isinstance(replays, dict) else {}, kernel)
    except (health.DataError, IOError, OSError) as exc:
        inputs, entries = None, [health.entry('health_data', 'error', 'the check could not run: %s' % exc)]
    result = {'schema': health.SCHEMA, 'time': round(now, 3), 'host': socket.gethostname().split('.')[0],
              'verdict': health.verdict(entries), 'checks': entries}
    if kernel is not None:
        result['kernel_log'] = kernel['summary']
    if inputs is not None:
        write_json(os.path.join(state_dir, 'aer.json'), dict((gpu['bdf'], gpu['aer']) for gpu in inputs['gpus']))
        write_json(os.path.join(state_dir, 'replay.json'), dict((gpu['bdf'], gpu['replay']) for gpu in inputs['gpus']
                                                                if gpu['replay'] is not None))
    write_json(os.path.join(state_dir, 'last.json'), result)
    return result


def say(text, stream=None):
    """One line to stdout (or stream): the program's output (this runs as a program, not in a module)."""
    stream = stream or sys.stdout
    stream.write(text + '\n')
    stream.flush()


def wait_devices(data_path, seconds, sleep=time.sleep):
    """Wait until /dev/kfd and every AMD GPU's render node exist (amdgpu and udev make them after boot). Exit 0
    either way: slurmd then starts and its health check drains a node whose GPUs did not come up."""
    try:
        want = health.expected(read_json(data_path) or {})
    except (health.DataError, IOError, OSError):
        want = health.expected({})
    deadline = time.time() + seconds
    while True:
        try:
            facts = pci.gather_pci(sysfs_root=want['sysfs_root'])
            nodes = [os.path.join(want['dev_root'], 'kfd')] if facts['amd'] else []
            nodes += [os.path.join(want['dev_root'], 'dri', os.path.basename(device['render_node']))
                      for device in facts['amd'] if device['render_node']]
            missing = [path for path in nodes if not stat_node(path)['char']]
            if not missing and all(device['render_node'] for device in facts['amd']):
                return 0
        except (IOError, OSError):
            missing = ['sysfs']
        if time.time() >= deadline:
            say('gpulab-gpu-health: still missing after %d s: %s'
                % (seconds, ', '.join(missing) or 'a render node in sysfs'), sys.stderr)
            return 0
        sleep(1)


def main(argv=None):
    parser = argparse.ArgumentParser(prog='gpulab-gpu-health', description='Check the GPUs of this node (gpulab.rocm '
                                     'docs/health.md). Exit 0 healthy, 1 unhealthy, 2 the check could not run.')
    parser.add_argument('--json', action='store_true', help='print the result object as JSON')
    parser.add_argument('--data', default=DATA, help='the expected values (default %(default)s)')
    parser.add_argument('--state-dir', default=STATE_DIR, help='last.json and the AER counters (default %(default)s)')
    parser.add_argument('--ack-kernel-log', nargs='*', metavar='CODE', help='acknowledge the fatal kernel-log '
                        'findings held for these codes (all without a code): the next check passes for them, and '
                        'gpulab-slurm-health resumes a node it drained for them (docs/health.md)')
    parser.add_argument('--wait-devices', type=int, metavar='SECONDS', help='only wait (at most SECONDS) until '
                        '/dev/kfd and the render node of every AMD GPU on the bus exist, then exit 0 (slurmd\'s '
                        'systemd drop-in runs this before slurmd starts)')
    args = parser.parse_args(argv)
    if args.wait_devices is not None:
        return wait_devices(args.data, args.wait_devices)
    if args.ack_kernel_log is not None:
        return ack_kernel_log(args.state_dir, args.ack_kernel_log)
    try:
        result = run(args.data, args.state_dir)
    except (IOError, OSError) as exc:
        say('gpulab-gpu-health: cannot write %s: %s' % (args.state_dir, exc), sys.stderr)
        return 2
    if args.json:
        say(json.dumps(result, indent=1, sort_keys=True))
    else:
        for item in result['checks']:
            if item['status'] != 'pass':
                say('%s %s: %s' % (item['status'].upper(), item['code'], item['reason']))
        say('%s: %s' % (result['host'], result['verdict']))
    return EXIT[result['verdict']]
