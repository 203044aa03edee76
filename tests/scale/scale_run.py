#!/usr/bin/env python3
"""One rolling provision of many containers as an AWX-style job, then what its events show about serial and forks.

Called by tests/scale/run.sh once the containers are up and prepared:

    tests/scale/scale_run.py PRIVATE_DATA_DIR INVENTORY --serial N --forks N [--playbook P] [--report-dir D]

The job runs under ansible-runner exactly as tests/runner/awx_jobs.py runs them (same private data dir). From
its job_events (what AWX stores), per host and task: when the worker started it (runner_on_start) and when it
ended (the result's `end`). Checked:
- serial: the play starts once per batch; the batches hold `serial` hosts (the last one the rest), in inventory
  order, and no host of a batch starts a task before every host of the batch before has finished its last one;
- forks: at no instant do more than `forks` hosts have a command running (Docker's exec_start/exec_die events of
  the containers: each fork runs its host's commands one after the other), and some instant has `forks` of them
  (the limit is used, not just respected). The job events cannot show this: a fork is freed when its process
  exits, before the callback records the result's end, so their intervals overlap by that lag.
Prints the wall time, the batches with their spans, and the most hosts seen running one task at once.
Then the fleet report job (playbooks/facts.yml) over the same hosts, when --report-dir is given.
"""

import argparse
import json
import os
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import ansible_runner

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / 'runner'))
import awx_jobs  # noqa: E402  (the AWX-style private data dir of tests/runner)

RESULT_EVENTS = ('runner_on_ok', 'runner_on_failed', 'runner_on_skipped', 'runner_on_unreachable')


def parse_time(text):
    """awx_display writes ISO times (UTC, microseconds); naive ones are taken as UTC too."""
    moment = datetime.fromisoformat(text.replace('Z', '+00:00'))
    return (moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)).timestamp()


def load_events(pdd, ident):
    events = [json.loads(path.read_text()) for path in (pdd / 'artifacts' / ident / 'job_events').glob('*.json')]
    return sorted(events, key=lambda event: event['counter'])


def analyse(events, serial, hosts):
    """(batches, their time windows, problems) from a job's events."""
    problems = []
    batches = []       # [[host, ...], ...] in the order the plays started
    spans = {}         # (batch index, task uuid, host) -> [start, end]
    for event in events:
        data = event.get('event_data', {})
        if event['event'] == 'playbook_on_play_start':
            batches.append([])
        elif event['event'] == 'runner_on_start':
            host = data['host']
            if host not in batches[-1]:
                batches[-1].append(host)
            spans[(len(batches) - 1, data['task_uuid'], host)] = [parse_time(event['created']), None]
        elif event['event'] in RESULT_EVENTS:  # loop items have runner_item_on_* events; this is the task's end
            key = (len(batches) - 1, data['task_uuid'], data['host'])
            if key in spans and data.get('end'):
                spans[key][1] = parse_time(data['end'])
    batches = [batch for batch in batches if batch]
    expected = [hosts[i:i + serial] for i in range(0, len(hosts), serial)]
    if [sorted(batch) for batch in batches] != [sorted(batch) for batch in expected]:
        problems.append('batches %s, expected %s (serial %d)' % (batches, expected, serial))
    windows = []
    for index in range(len(batches)):
        times = [t for (b, _task, _host), (start, end) in spans.items() if b == index for t in (start, end) if t]
        windows.append((min(times), max(times)))
    for index in range(1, len(windows)):
        if windows[index][0] < windows[index - 1][1]:
            problems.append('batch %d started at %.2f before batch %d ended at %.2f' % (
                index + 1, windows[index][0], index, windows[index - 1][1]))
    return batches, windows, problems


def watch_docker(path):
    """Start streaming Docker's container events into path (the daemon keeps only the last few hundred)."""
    log = open(path, 'w')
    return subprocess.Popen(['docker', 'events', '--filter', 'type=container', '--format', '{{json .}}'],
                            stdout=log, text=True), log


def docker_execs(watcher, hosts):
    """[(start, end, container)] of every command Docker ran in the containers while it was watched."""
    process, log = watcher
    time.sleep(1)  # the last exec_die events
    process.terminate()
    process.wait()
    log.close()
    started, spans = {}, []
    with open(log.name) as handle:
        for line in handle:
            event = json.loads(line)
            name = event['Actor']['Attributes'].get('name')
            exec_id = event['Actor']['Attributes'].get('execID')
            if name not in hosts or not exec_id:
                continue
            moment = event['timeNano'] / 1e9
            if event['Action'].startswith('exec_start'):
                started[exec_id] = moment
            elif event['Action'] == 'exec_die' and exec_id in started:
                spans.append((started.pop(exec_id), moment, name))
    return spans


def peak_concurrency(spans):
    """The most spans open at one instant, and the hosts behind them."""
    points = sorted([(start, 1, name) for start, _end, name in spans] + [(end, -1, name) for _start, end, name in spans])
    running, peak, peak_hosts, open_hosts = 0, 0, [], []
    for _moment, step, name in points:  # an end sorts before a start at the same instant
        running += step
        if step > 0:
            open_hosts.append(name)
        else:
            open_hosts.remove(name)
        if running > peak:
            peak, peak_hosts = running, sorted(open_hosts)
    return peak, peak_hosts




def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('pdd', type=Path)
    parser.add_argument('inventory', type=Path)
    parser.add_argument('--serial', type=int, required=True)
    parser.add_argument('--forks', type=int, required=True)
    parser.add_argument('--playbook', default='playbooks/upgrade.yml')
    parser.add_argument('--serial-var', default='rocm_upgrade_serial',
                        help='the extra var the playbook reads its serial from')
    parser.add_argument('--report-dir', type=Path)
    args = parser.parse_args()
    pdd = args.pdd.resolve()
    awx_jobs.build_private_data_dir(pdd, os.environ, args.inventory.resolve())
    inventory = json.loads(subprocess.run([str(pdd / 'inventory' / 'hosts')], check=True, capture_output=True,
                                          text=True).stdout)
    hosts = inventory['rocm_nodes']['hosts']  # inventory order: the order serial cuts batches in
    (pdd / 'env' / 'extravars').write_text(json.dumps({args.serial_var: args.serial}))
    (pdd / 'env' / 'cmdline').write_text('--forks %d' % args.forks)  # env/cmdline, as AWX passes job options
    watcher = watch_docker(pdd / 'docker-events.jsonl')
    started = time.monotonic()
    runner = ansible_runner.run(private_data_dir=str(pdd), playbook=args.playbook, ident='scale', quiet=True)
    wall = time.monotonic() - started
    events = load_events(pdd, 'scale')
    batches, windows, problems = analyse(events, args.serial, hosts)
    execs = docker_execs(watcher, set(hosts))
    peak, peak_hosts = peak_concurrency(execs)
    if peak > args.forks:
        problems.append('%d hosts ran a command at once (%s), forks is %d' % (peak, ' '.join(peak_hosts), args.forks))
    if peak < min(args.forks, max(len(batch) for batch in batches)):
        problems.append('at most %d hosts ran a command at once: forks %d was never used' % (peak, args.forks))
    for index in range(1, len(batches)):
        previous = [end for _start, end, name in execs if name in batches[index - 1]]
        current = [start for start, _end, name in execs if name in batches[index]]
        if previous and current and min(current) < max(previous):
            problems.append('a host of batch %d ran a command before batch %d was done' % (index + 1, index))
    stats = [e for e in events if e['event'] == 'playbook_on_stats'][-1]['event_data']
    print('scale: %s on %d hosts, serial %d, forks %d: rc=%s status=%s, wall %.0f s, changed %d, failed %s' % (
        args.playbook, len(hosts), args.serial, args.forks, runner.rc, runner.status, wall,
        sum(stats['changed'].values()), stats['failures'] or 'none'))
    for index, (batch, (start, end)) in enumerate(zip(batches, windows)):
        print('scale:   batch %d: %-70s %6.1f s .. %6.1f s' % (
            index + 1, ' '.join(batch), start - windows[0][0], end - windows[0][0]))
    print('scale:   %d commands in the containers (docker exec); most running at once: %d (forks %d), on %s' % (
        len(execs), peak, args.forks, ' '.join(peak_hosts)))
    if runner.rc != 0 or runner.status != 'successful':
        problems.append('the job ended rc=%s status=%s (see %s)' % (runner.rc, runner.status,
                                                                   pdd / 'artifacts' / 'scale' / 'stdout'))
    if args.report_dir:
        (pdd / 'env' / 'extravars').write_text(json.dumps({'rocm_report_dest': str(args.report_dir.resolve())}))
        started = time.monotonic()
        report = ansible_runner.run(private_data_dir=str(pdd), playbook='playbooks/facts.yml', ident='scale-facts',
                                    quiet=True)
        print('scale: playbooks/facts.yml on %d hosts, forks %d: rc=%s status=%s, wall %.0f s' % (
            len(hosts), args.forks, report.rc, report.status, time.monotonic() - started))
        if report.rc != 0:
            problems.append('the fleet report job failed (rc %s)' % report.rc)
    for problem in problems:
        print('scale: FAIL: ' + problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
