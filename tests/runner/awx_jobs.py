#!/usr/bin/env python3
"""Run the project's playbooks the way AWX runs a job, with ansible-runner, and check what AWX would record.

Called by tests/runner/run.sh once the containers and the fixture mirror are up:

    tests/runner/awx_jobs.py PRIVATE_DATA_DIR [--jobs provision,drift,validate,facts,...]

The private data dir is laid out as AWX lays out /runner for a job:
- project/      a copy of the repository's files (tracked and untracked, not ignored), as a project update checks
                it out; nothing outside it is used;
- inventory/hosts  an executable that prints the inventory as JSON: what `ansible-inventory --list --export`
                gives for tests/runner/inventory, which is what an AWX inventory import stores;
- env/envvars   ANSIBLE_ROLES_PATH=<project>/roles and ANSIBLE_COLLECTIONS_PATH=<project>/collections (AWX
                sets both, overriding ansible.cfg), plus the fixture mirror's address and fingerprint;
- env/extravars the job's extra vars (survey answers), written per job;
- artifacts/<job>/  what ansible-runner writes: rc, status, stdout, job_events/*.json. set_stats data is the
                event_data.artifact_data of the playbook_on_stats event (ansible-runner's awx_display
                callback), which AWX stores as the job's artifacts.

Each job asserts rc, status, per-host recap counts and the artifacts. Exit status 1 with the reasons on failure.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import ansible_runner

ROOT = Path(__file__).resolve().parents[2]
INVENTORY = ROOT / 'tests' / 'runner' / 'inventory'
ALL_JOBS = ('awx-stock-paths', 'provision', 'provision-again', 'drift', 'validate', 'validate-under-threshold',
            'facts', 'facts-again', 'facts-offline', 'upgrade', 'uninstall')
PLAYBOOKS = ('site.yml', 'playbooks/provision.yml', 'playbooks/facts.yml', 'playbooks/validate.yml',
             'playbooks/upgrade.yml', 'playbooks/uninstall.yml', 'playbooks/slurm.yml')
# provision-again (AWX re-running the provision template: changed=0) takes as long as the first run on these
# machines; the drift job (check mode on the converged nodes) and Molecule's idempotence step cover the same ground.
# uninstall (last: it takes ROCm off one node, which the fleet report then shows) is opt-in for the same reason.
DEFAULT_JOBS = tuple(job for job in ALL_JOBS if job not in ('provision-again', 'uninstall'))
H200_REPORT = 'collections/ansible_collections/gpulab/rocm/tests/unit/plugins/filter/fixtures/gpu_bench-nvidia-h200-2026-11-29.json'
SLOW_REPORT = ('collections/ansible_collections/gpulab/rocm/tests/unit/plugins/filter/fixtures/'
               'gpu_bench-rx6900xt-canned-slow-resnet50.json')
STATS_KEYS = {'gpu_count', 'gfx_targets', 'rocm_version', 'problems'}


class Failed(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Failed(message)


def build_private_data_dir(pdd, env, inventory=INVENTORY):
    """project/, inventory/hosts and env/envvars, as AWX prepares them before a job."""
    if pdd.exists():
        shutil.rmtree(pdd)
    project = pdd / 'project'
    files = subprocess.run(['git', 'ls-files', '-z', '--cached', '--others', '--exclude-standard'], cwd=ROOT,
                           check=True, capture_output=True).stdout.decode().split('\0')
    for name in filter(None, files):
        source = ROOT / name
        if not source.exists() and not source.is_symlink():
            continue  # deleted in the working tree, not yet committed
        target = project / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            os.symlink(os.readlink(source), target)
        else:
            shutil.copy2(source, target)
    exported = subprocess.run([str(Path(sys.executable).parent / 'ansible-inventory'), '-i', str(inventory),
                               '--list', '--export'], check=True, capture_output=True, text=True).stdout
    (pdd / 'inventory').mkdir(parents=True)
    hosts = pdd / 'inventory' / 'hosts'
    hosts.write_text('#!/usr/bin/env python3\n# Written by tests/runner/awx_jobs.py: the inventory as AWX stores '
                     'it (ansible-inventory --list --export of %s).\nimport sys\n'
                     'sys.stdout.write(%r)\n' % (inventory, exported))
    hosts.chmod(0o755)
    (pdd / 'env').mkdir()
    envvars = {
        'ANSIBLE_ROLES_PATH': str(project / 'roles'),
        'ANSIBLE_COLLECTIONS_PATH': str(project / 'collections'),
        'ANSIBLE_FORCE_COLOR': 'False',
        'GPULAB_MIRROR_URL': env['GPULAB_MIRROR_URL'],
        'GPULAB_MIRROR_FINGERPRINT': env['GPULAB_MIRROR_FINGERPRINT'],
    }
    (pdd / 'env' / 'envvars').write_text(json.dumps(envvars, indent=2))
    return project


def stats_event(pdd, ident):
    """The playbook_on_stats event of a job, read from its job_events files as AWX reads them."""
    events_dir = pdd / 'artifacts' / ident / 'job_events'
    for path in sorted(events_dir.glob('*.json')):
        event = json.loads(path.read_text())
        if event.get('event') == 'playbook_on_stats':
            return event['event_data']
    raise Failed('%s: no playbook_on_stats event in %s' % (ident, events_dir))


def job_runner(jobs, failures):
    """job(name, body): runs body(name) when name is among the chosen jobs; a Failed is listed in failures and
    printed, and the next job runs."""
    def job(name, body):
        if name not in jobs:
            return
        try:
            body(name)
        except Failed as error:
            failures.append(str(error))
            print('  %-26s FAILED: %s' % (name, str(error).splitlines()[0]), flush=True)
    return job


def run_job(pdd, ident, playbook, extravars=None, cmdline=None):
    """One job: env/extravars and env/cmdline written, ansible-runner run, (rc, status, stats event) returned."""
    (pdd / 'env' / 'extravars').write_text(json.dumps(extravars or {}, indent=2))
    # As AWX does, per job. Never through run(cmdline=...): ansible-runner would write it to env/cmdline
    # itself when the file is missing, and every later job would inherit it.
    cmdline_file = pdd / 'env' / 'cmdline'
    if cmdline:
        cmdline_file.write_text(cmdline)
    elif cmdline_file.exists():
        cmdline_file.unlink()
    started = time.monotonic()
    runner = ansible_runner.run(private_data_dir=str(pdd), playbook=playbook, ident=ident, quiet=True)
    elapsed = time.monotonic() - started
    artifacts = pdd / 'artifacts' / ident
    rc_file, status_file = (artifacts / 'rc').read_text().strip(), (artifacts / 'status').read_text().strip()
    check(rc_file == str(runner.rc) and status_file == runner.status,
          '%s: artifacts rc/status files (%s, %s) differ from the runner (%s, %s)' % (
              ident, rc_file, status_file, runner.rc, runner.status))
    # A syntax check plays nothing, so it has no stats event.
    stats = None if cmdline == '--syntax-check' else stats_event(pdd, ident)
    print('  %-26s %-28s rc=%s status=%-10s %5.1f s%s' % (
        ident, playbook + (' ' + cmdline if cmdline else ''), runner.rc, runner.status, elapsed,
        '  changed=%d' % sum(stats['changed'].values()) if stats else ''))
    return runner, stats


def expect_success(ident, runner, stats, hosts):
    stdout = (Path(runner.config.artifact_dir) / 'stdout').read_text()
    check(runner.rc == 0 and runner.status == 'successful',
          '%s: rc=%s status=%s; last output:\n%s' % (ident, runner.rc, runner.status, stdout[-3000:]))
    check(not stats['failures'] and not stats['dark'], '%s: failures %s, unreachable %s' % (
        ident, stats['failures'], stats['dark']))
    check(set(hosts) <= set(stats['processed']), '%s: hosts %s not processed' % (
        ident, sorted(set(hosts) - set(stats['processed']))))


def report_matches_stats(ident, report_dir, artifact, hosts):
    report = json.loads((report_dir / 'fleet-report.json').read_text())
    check((report_dir / 'fleet-report.html').is_file(), '%s: no fleet-report.html in %s' % (ident, report_dir))
    check(sorted(h['name'] for h in report['hosts']) == sorted(hosts),
          '%s: report hosts %s, expected %s' % (ident, [h['name'] for h in report['hosts']], sorted(hosts)))
    nodes = artifact.get('rocm_report_nodes')
    check(isinstance(nodes, dict) and sorted(nodes) == sorted(hosts),
          '%s: artifact rocm_report_nodes has %s, expected %s' % (ident, sorted(nodes or {}), sorted(hosts)))
    for host in report['hosts']:
        node = nodes[host['name']]
        check(set(node) == STATS_KEYS, '%s: %s artifact keys %s' % (ident, host['name'], sorted(node)))
        check(isinstance(node['gpu_count'], int) and isinstance(node['gfx_targets'], list)
              and isinstance(node['problems'], list), '%s: %s artifact types %r' % (ident, host['name'], node))
        check(node == {key: host[key] for key in STATS_KEYS},
              '%s: %s artifact %r differs from the report %r' % (ident, host['name'], node, host))
    return report


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('pdd', type=Path)
    parser.add_argument('--jobs', default=','.join(DEFAULT_JOBS), help='comma-separated, or "all"; default: %(default)s')
    args = parser.parse_args()
    jobs = ALL_JOBS if args.jobs == 'all' else args.jobs.split(',')
    unknown = sorted(set(jobs) - set(ALL_JOBS))
    if unknown:
        parser.error('unknown job(s) %s; known: %s' % (', '.join(unknown), ', '.join(ALL_JOBS)))
    pdd = args.pdd.resolve()
    project = build_private_data_dir(pdd, os.environ)
    inventory = json.loads(subprocess.run([str(pdd / 'inventory' / 'hosts')], check=True, capture_output=True,
                                          text=True).stdout)
    nodes = sorted(inventory['rocm_nodes']['hosts'])
    offline = sorted(inventory['offline_nodes']['hosts'])
    report_dir = pdd / 'fleet-report'
    print('awx_jobs: private data dir %s, %d nodes' % (pdd, len(nodes)))
    failures = []

    job = job_runner(jobs, failures)

    verified = {}

    def awx_stock_paths(ident):
        # What AWX itself puts in the job environment (ansible/awx#11302, #8143): roles and collections from the
        # project update's requirements folders, not the project's roles/ and collections/, and ansible.cfg's
        # paths overridden. A playbook under playbooks/ then finds roles only through playbooks/roles and the
        # in-tree collection only through playbooks/collections (or collections/requirements.yml).
        envvars_file = pdd / 'env' / 'envvars'
        saved = envvars_file.read_text()
        stock = dict(json.loads(saved),
                     ANSIBLE_ROLES_PATH='%s/requirements_roles:~/.ansible/roles:/usr/share/ansible/roles:'
                                        '/etc/ansible/roles' % pdd,
                     ANSIBLE_COLLECTIONS_PATH='%s/requirements_collections:~/.ansible/collections:'
                                              '/usr/share/ansible/collections' % pdd)
        envvars_file.write_text(json.dumps(stock, indent=2))
        broken = []
        try:
            for playbook in PLAYBOOKS:
                if not (project / playbook).exists():
                    continue
                runner, _stats = run_job(pdd, '%s-%s' % (ident, Path(playbook).stem), playbook, cmdline='--syntax-check')
                if runner.rc != 0:
                    stdout = (Path(runner.config.artifact_dir) / 'stdout').read_text()
                    stdout = re.sub(r'\x1b\[[0-9;]*m', '', stdout)  # the display's colours
                    reason = [line for line in stdout.splitlines() if 'ERROR' in line or 'not found' in line]
                    broken.append('%s: %s' % (playbook, (reason or ['rc %s' % runner.rc])[0].strip()))
        finally:
            envvars_file.write_text(saved)
        check(not broken, '%s: with AWX\'s own ANSIBLE_ROLES_PATH/ANSIBLE_COLLECTIONS_PATH these playbooks do not load '
                          '(add playbooks/roles -> ../roles and playbooks/collections -> ../collections links): %s'
              % (ident, '; '.join(broken)))

    def provision(ident):
        runner, stats = run_job(pdd, ident, 'playbooks/provision.yml')
        expect_success(ident, runner, stats, nodes)
        # rocm_verify's set_stats: per host at least the keys the fleet report also records.
        nodes_stats = stats['artifact_data'].get('rocm_verify_nodes')
        check(isinstance(nodes_stats, dict) and sorted(nodes_stats) == nodes
              and all(STATS_KEYS <= set(entry) for entry in nodes_stats.values()),
              '%s: artifact rocm_verify_nodes %r' % (ident, nodes_stats))
        verified.update(nodes_stats)
        if ident == 'provision-again':
            check(not any(stats['changed'].values()), '%s: a second run changed %s' % (ident, stats['changed']))

    def drift(ident):
        # AWX job_type "check" with diff mode: ansible-playbook --check --diff on the converged nodes.
        runner, stats = run_job(pdd, ident, 'site.yml', cmdline='--check --diff')
        expect_success(ident, runner, stats, nodes)
        check(not any(stats['changed'].values()), '%s: drift found on converged nodes: %s' % (ident, stats['changed']))

    def validate(ident):
        report = str(project / H200_REPORT)
        runner, stats = run_job(pdd, ident, 'playbooks/validate.yml',
                                {'rocm_validate_report_src': report, 'rocm_validate_fetch_dest': str(pdd / 'validation')})
        expect_success(ident, runner, stats, nodes)
        results = stats['artifact_data'].get('rocm_validate_results') or {}
        check(sorted(results) == nodes and all(r['model'] == 'NVIDIA H200' and r['failures'] == []
                                               for r in results.values()),
              '%s: artifact rocm_validate_results %r' % (ident, results))

    def validate_under_threshold(ident):
        runner, stats = run_job(pdd, ident, 'playbooks/validate.yml',
                                {'rocm_validate_report_src': str(project / SLOW_REPORT),
                                 'rocm_validate_fetch_dest': str(pdd / 'validation'),
                                 'rocm_validate_hosts': nodes[0]})
        check(runner.rc == 2 and runner.status == 'failed', '%s: rc=%s status=%s, expected a failed job (rc 2)' % (
            ident, runner.rc, runner.status))
        results = stats['artifact_data'].get('rocm_validate_results') or {}
        failures = (results.get(nodes[0]) or {}).get('failures') or []
        check(stats['failures'] == {nodes[0]: 1} and any('resnet50' in f for f in failures),
              '%s: recap failures %s, artifact %r' % (ident, stats['failures'], results))

    def facts(ident):
        runner, stats = run_job(pdd, ident, 'playbooks/facts.yml', {'rocm_report_dest': str(report_dir)})
        expect_success(ident, runner, stats, nodes)
        report = report_matches_stats(ident, report_dir, stats['artifact_data'], nodes)
        by_name = {host['name']: host for host in report['hosts']}
        check(all(host['rocm_version'] == '6.2.4' for host in report['hosts']),
              '%s: ROCm versions %s' % (ident, [(h['name'], h['rocm_version']) for h in report['hosts']]))
        for name, entry in verified.items():
            check(entry['gpu_count'] == by_name[name]['gpu_count'] and entry['gfx_targets'] == by_name[name]['gfx_targets'],
                  '%s: %s: rocm_verify found %s %s, the report %s %s' % (
                      ident, name, entry['gpu_count'], entry['gfx_targets'], by_name[name]['gpu_count'],
                      by_name[name]['gfx_targets']))
        dead = by_name.get('gpulab-runner-5', {})
        check(dead.get('degraded_links') == 4 and dead.get('gpu_count') == 0,
              '%s: gpulab-runner-5 should show the four degraded MI50 links of the sysfs fixture: %r' % (ident, dead))
        if ident == 'facts-again':
            check(not any(stats['changed'].values()), '%s: the report changed with no change on the fleet: %s' % (
                ident, stats['changed']))

    def facts_offline(ident):
        runner, stats = run_job(pdd, ident, 'playbooks/facts.yml',
                                {'rocm_report_dest': str(pdd / 'fleet-report-offline'),
                                 'gpulab_hosts': 'rocm_nodes:offline_nodes'})
        # Unreachable, or failed when pipelining runs the first module straight through `docker exec`.
        lost = sorted(set(stats['dark']) | set(stats['failures']))
        check(runner.rc != 0 and runner.status == 'failed' and lost == offline,
              '%s: rc=%s status=%s unreachable=%s failed=%s, expected a failed job that lost only %s' % (
                  ident, runner.rc, runner.status, stats['dark'], stats['failures'], offline))
        report = report_matches_stats(ident, pdd / 'fleet-report-offline', stats['artifact_data'], nodes + offline)
        entry = [host for host in report['hosts'] if host['name'] == offline[0]][0]
        check(entry['reachable'] is False and entry['problems'], '%s: offline host entry %r' % (ident, entry))

    def upgrade(ident):
        if not (project / 'playbooks' / 'upgrade.yml').exists():
            print('  %-26s skipped: playbooks/upgrade.yml does not exist yet' % ident)
            return
        # The release the nodes already have, on two of them in one batch: the job as AWX runs it, not the roll
        # itself (tests/scale/run.sh measures serial batches; the lifecycle scenario tests the upgrade).
        runner, stats = run_job(pdd, ident, 'playbooks/upgrade.yml',
                                {'rocm_version': '6.2.4', 'rocm_upgrade_serial': 2},
                                cmdline='--limit %s' % ','.join(nodes[:2]))
        expect_success(ident, runner, stats, nodes[:2])

    def uninstall(ident):
        target = nodes[0]
        runner, stats = run_job(pdd, ident, 'playbooks/uninstall.yml', cmdline='--limit %s' % target)
        expect_success(ident, runner, stats, [target])
        runner, stats = run_job(pdd, ident + '-report', 'playbooks/facts.yml',
                                {'rocm_report_dest': str(pdd / 'fleet-report-uninstalled')})
        expect_success(ident + '-report', runner, stats, nodes)
        node = stats['artifact_data']['rocm_report_nodes'][target]
        check(node['rocm_version'] is None and node['gpu_count'] == 0
              and any('rocminfo was not found' in problem for problem in node['problems']),
              '%s: after the uninstall the report says %r' % (ident, node))

    job('awx-stock-paths', awx_stock_paths)
    job('provision', provision)
    job('provision-again', provision)
    job('drift', drift)
    job('validate', validate)
    job('validate-under-threshold', validate_under_threshold)
    job('facts', facts)
    job('facts-again', facts)
    job('facts-offline', facts_offline)
    job('upgrade', upgrade)
    job('uninstall', uninstall)
    if failures:
        print('awx_jobs: %d job(s) failed:' % len(failures), file=sys.stderr)
        for failure in failures:
            print('- ' + failure, file=sys.stderr)
        return 1
    print('awx_jobs: all jobs passed; fleet report in %s' % report_dir)
    return 0


if __name__ == '__main__':
    sys.exit(main())
