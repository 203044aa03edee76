#!/usr/bin/env python3
"""Jobs through the execution environment's image, the way AWX runs a job in a container group: the control side
streams the private data dir with `ansible-runner transmit`, the image's own `ansible-runner worker` runs the
playbook inside a container and streams the events and the artifacts folder back, `ansible-runner process` writes
them into the private data dir, where AWX reads them. Then what AWX would record is checked.

Called by tests/runner/ee.sh once the image is built and the node is up and prepared:

    tests/runner/ee_jobs.py IMAGE WORKDIR [--jobs provision,provision-again,facts,navigator]

Each job is, with PDD = WORKDIR/jobs/<job>, a copy of the private data dir WORKDIR/base (below) with the job's
env/extravars:

    ansible-runner transmit PDD -p PLAYBOOK -i JOB \\
      | docker run -i --rm --network host IMAGE ansible-runner worker --private-data-dir=/runner \\
      | ansible-runner process PDD -i JOB

(the worker's arguments are those of AWX's container-group pods: the private data dir is /runner, and the
container goes away with it). The private data dir, laid out as AWX lays it out (tests/runner/awx_jobs.py):
- project/        a copy of the repository's files;
- inventory/hosts an executable that prints tests/runner/ee/inventory as AWX stores it (the node, over SSH);
- env/envvars     AWX's own ANSIBLE_ROLES_PATH and ANSIBLE_COLLECTIONS_PATH (the project's playbooks find the roles
                  and the in-tree collection through playbooks/roles and playbooks/collections; the third-party
                  collections are the image's); ANSIBLE_HOST_KEY_CHECKING=True (ansible-runner's default is off)
                  and GPULAB_EE_KNOWN_HOSTS, the file with the node's host key (below);
- env/ssh_key     the lab key's private half: AWX's machine credential, which ansible-runner loads into an
                  ssh-agent inside the container for the run;
- env/known_hosts the node's host key, read through docker exec by ee.sh;
- env/extravars   the fixture mirror's role variables (what a lab's job template would carry as extra vars),
                  and each job's own.

What each job checks: tests/runner/ee.sh's header and docs/awx.md.
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
import awx_jobs  # noqa: E402  (the private data dir's project and inventory, the stats and report checks)
from awx_jobs import Failed, check, job_runner  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
INVENTORY = ROOT / 'tests' / 'runner' / 'ee' / 'inventory'
BIN = Path(sys.executable).parent
NODE = 'gpulab-ee-node'
ALL_JOBS = ('provision', 'provision-again', 'facts', 'navigator')
# What AWX itself puts in a job's environment (tests/runner/awx_jobs.py, awx-stock-paths).
AWX_ROLES_PATH = '/runner/requirements_roles:~/.ansible/roles:/usr/share/ansible/roles:/etc/ansible/roles'
AWX_COLLECTIONS_PATH = '/runner/requirements_collections:~/.ansible/collections:/usr/share/ansible/collections'
# An arbitrary UID, as OpenShift gives a container group's pod: the image's entrypoint must give it a home.
ARBITRARY_USER = '23456:0'


def mirror_extravars(env):
    """The fixture mirror's role variables, as a lab's job template would set its mirror (tests/harness/mirror)."""
    return {
        'rocm_repo_base_url': env['GPULAB_MIRROR_URL'],
        'rocm_repo_key_fingerprints': [env['GPULAB_MIRROR_FINGERPRINT']],
        'rocm_repo_core_base_url': env['GPULAB_MIRROR_CORE_URL'],
        'rocm_repo_core_key_url': env['GPULAB_MIRROR_CORE_KEY_URL'],
        'rocm_repo_core_key_fingerprints': [env['GPULAB_MIRROR_CORE_FINGERPRINT']],
    }


def build_base(base, keys, known_hosts):
    """The private data dir every job copies: project/, inventory/hosts, env/ (no extravars)."""
    awx_jobs.build_private_data_dir(base, os.environ, INVENTORY)
    envvars = {
        'ANSIBLE_ROLES_PATH': AWX_ROLES_PATH,
        'ANSIBLE_COLLECTIONS_PATH': AWX_COLLECTIONS_PATH,
        'ANSIBLE_FORCE_COLOR': 'False',
        # ansible-runner turns host key checking off unless the job's environment sets it (RunnerConfig, 2.4.3):
        # on, with the node's key in env/known_hosts, a node that answers with another key is unreachable.
        'ANSIBLE_HOST_KEY_CHECKING': 'True',
        'GPULAB_EE_KNOWN_HOSTS': '/runner/env/known_hosts',
    }
    (base / 'env' / 'envvars').write_text(json.dumps(envvars, indent=2))
    ssh_key = base / 'env' / 'ssh_key'
    ssh_key.write_text((keys / 'id_ed25519').read_text())
    ssh_key.chmod(0o600)
    shutil.copy(known_hosts, base / 'env' / 'known_hosts')


def worker_job(workdir, image, ident, playbook, extravars, user=None):
    """One job through the image: transmit | docker run ... worker | process. Returns the stats event's data."""
    pdd = workdir / 'jobs' / ident
    if pdd.exists():
        shutil.rmtree(pdd)
    shutil.copytree(workdir / 'base', pdd, symlinks=True)
    (pdd / 'env' / 'extravars').write_text(json.dumps(extravars, indent=2))
    transmit = [str(BIN / 'ansible-runner'), 'transmit', str(pdd), '-p', playbook, '-i', ident]
    worker = ['docker', 'run', '-i', '--rm', '--name', 'gpulab-ee-job-%s' % ident, '--network', 'host']
    worker += ['--user', user] if user else []
    worker += [image, 'ansible-runner', 'worker', '--private-data-dir=/runner']
    process = [str(BIN / 'ansible-runner'), 'process', str(pdd), '-i', ident]
    started = time.monotonic()
    with (pdd.parent / ('%s.process.log' % ident)).open('wb') as out, \
            (pdd.parent / ('%s.worker.log' % ident)).open('wb') as err:
        sender = subprocess.Popen(transmit, stdout=subprocess.PIPE)
        container = subprocess.Popen(worker, stdin=sender.stdout, stdout=subprocess.PIPE, stderr=err)
        sender.stdout.close()
        receiver = subprocess.Popen(process, stdin=container.stdout, stdout=out, stderr=subprocess.STDOUT)
        container.stdout.close()
        codes = [receiver.wait(timeout=900), container.wait(timeout=60), sender.wait(timeout=60)]
    elapsed = time.monotonic() - started
    artifacts = pdd / 'artifacts' / ident
    rc = (artifacts / 'rc').read_text().strip() if (artifacts / 'rc').is_file() else None
    status = (artifacts / 'status').read_text().strip() if (artifacts / 'status').is_file() else None
    stdout = (artifacts / 'stdout').read_text() if (artifacts / 'stdout').is_file() else ''
    # The worker exits with the playbook's rc; transmit and process with 0.
    check(codes[0] == 0 and codes[2] == 0 and str(codes[1]) == str(rc),
          '%s: exit codes process=%s worker=%s transmit=%s, rc file %s (logs %s.*.log); last output:\n%s' % (
              ident, codes[0], codes[1], codes[2], rc, pdd.parent / ident, stdout[-3000:]))
    check(rc == '0' and status == 'successful', '%s: rc=%s status=%s; last output:\n%s' % (
        ident, rc, status, stdout[-3000:]))
    stats = awx_jobs.stats_event(pdd, ident)
    print('  %-26s %-28s rc=%s status=%-10s %5.1f s  changed=%d%s' % (
        ident, playbook, rc, status, elapsed, sum(stats['changed'].values()),
        '  (user %s)' % user if user else ''), flush=True)
    ran_in_the_container(pdd, ident)
    check(not stats['failures'] and not stats['dark'] and NODE in stats['processed'],
          '%s: recap failures %s, unreachable %s, processed %s' % (ident, stats['failures'], stats['dark'],
                                                                   stats['processed']))
    return pdd, stats


def ran_in_the_container(pdd, ident):
    """The artifacts the worker streamed back say where the playbook ran: in the image's /runner, with the job's key
    in an ssh-agent (AWX's machine credential), and every event belongs to this job."""
    command = json.loads((pdd / 'artifacts' / ident / 'command').read_text())
    argv = command['command']
    check(command['cwd'] == '/runner/project', '%s: the playbook ran in %s, not the worker\'s /runner/project' % (
        ident, command['cwd']))
    check(argv[0] == 'ssh-agent' and 'ssh-add' in ' '.join(argv),
          '%s: env/ssh_key did not go through ssh-agent: %s' % (ident, argv))
    check(command['env'].get('HOME') == '/runner', '%s: HOME=%s, not the entrypoint\'s /runner' % (
        ident, command['env'].get('HOME')))
    events = [json.loads(path.read_text()) for path in (pdd / 'artifacts' / ident / 'job_events').glob('*.json')]
    check(events and all(event.get('runner_ident') == ident for event in events),
          '%s: events of another job among %d' % (ident, len(events)))
    # Nothing of the host's Python: the events' playbook path is the worker's copy.
    starts = [e for e in events if e.get('event') == 'playbook_on_start']
    check(len(starts) == 1 and starts[0]['event_data'].get('playbook', '').startswith('playbooks/'),
          '%s: playbook_on_start %r' % (ident, [e.get('event_data') for e in starts]))


def navigator_job(workdir, image, extravars):
    """The same provision job through ansible-navigator (its own way of running an execution environment: the
    container runs ansible-playbook, the host's ansible-runner reads the events)."""
    navigator = BIN / 'ansible-navigator'
    if not navigator.exists():
        raise Failed('navigator: ansible-navigator is not installed in %s (requirements-test.txt)' % BIN)
    extravars_file = workdir / 'navigator-extravars.json'
    extravars_file.write_text(json.dumps(extravars))
    known_hosts = workdir / 'base' / 'env' / 'known_hosts'
    agent = subprocess.run(['ssh-agent', '-s'], check=True, capture_output=True, text=True).stdout
    agent_env = dict(re.findall(r'(SSH_AUTH_SOCK|SSH_AGENT_PID)=([^;]+);', agent))
    env = dict(os.environ, **agent_env)
    try:
        subprocess.run(['ssh-add', '-q', str(workdir / 'base' / 'env' / 'ssh_key')], env=env, check=True,
                       capture_output=True)
        # The working directory (the checkout) is mounted at its own path, so the inventory's links and the
        # known_hosts file under .cache resolve inside the container; SSH_AUTH_SOCK is passed on by navigator.
        command = [str(navigator), 'run', 'playbooks/provision.yml', '-i', str(INVENTORY),
                   '--ee', 'true', '--ce', 'docker', '--eei', image, '--pp', 'never', '-m', 'stdout',
                   '--pae', 'false', '--lf', str(workdir / 'navigator.log'),
                   '--senv', 'GPULAB_EE_KNOWN_HOSTS=%s' % known_hosts,
                   '--senv', 'ANSIBLE_FORCE_COLOR=False', '--senv', 'ANSIBLE_HOST_KEY_CHECKING=True',
                   # Docker's options for its container: host networking (the node's sshd and the mirror are on
                   # this host's loopback), and a name of ours.
                   '--co=--network=host', '--co=--name=gpulab-ee-navigator',
                   '-e', '@%s' % extravars_file]
        started = time.monotonic()
        result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
        elapsed = time.monotonic() - started
    finally:
        subprocess.run(['ssh-agent', '-k'], env=env, capture_output=True)
    (workdir / 'navigator.stdout').write_text(result.stdout + result.stderr)
    output = re.sub(r'\x1b\[[0-9;]*m', '', result.stdout)
    recap = re.search(r'^%s\s+:\s+(.*)$' % re.escape(NODE), output, re.MULTILINE)
    counts = dict(re.findall(r'(\w+)=(\d+)', recap.group(1))) if recap else {}
    print('  %-26s %-28s rc=%s %5.1f s  changed=%s' % ('navigator', 'playbooks/provision.yml', result.returncode,
                                                        elapsed, counts.get('changed')), flush=True)
    check(result.returncode == 0 and counts.get('failed') == '0' and counts.get('unreachable') == '0',
          'navigator: rc=%s recap %r; output %s:\n%s' % (result.returncode, counts, workdir / 'navigator.stdout',
                                                        (result.stdout + result.stderr)[-3000:]))
    check(counts.get('changed') == '0', 'navigator: a converged node changed: %r' % counts)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('image')
    parser.add_argument('workdir', type=Path)
    parser.add_argument('--jobs', default=','.join(ALL_JOBS), help='comma-separated; default: %(default)s')
    parser.add_argument('--keys', type=Path, default=Path(os.environ.get('GPULAB_SSH_LAB_KEYS', '')),
                        help='the SSH lab key folder (default: $GPULAB_SSH_LAB_KEYS)')
    parser.add_argument('--known-hosts', type=Path, required=True)
    args = parser.parse_args()
    jobs = args.jobs.split(',')
    unknown = sorted(set(jobs) - set(ALL_JOBS))
    if unknown:
        parser.error('unknown job(s) %s; known: %s' % (', '.join(unknown), ', '.join(ALL_JOBS)))
    workdir = args.workdir.resolve()
    build_base(workdir / 'base', args.keys, args.known_hosts)
    extravars = mirror_extravars(os.environ)
    print('ee_jobs: image %s, private data dirs in %s' % (args.image, workdir / 'jobs'), flush=True)
    failures, verified = [], {}

    job = job_runner(jobs, failures)

    def provision(ident):
        # The second run as an arbitrary UID with group 0, as OpenShift runs a container group's pod.
        again = ident == 'provision-again'
        _pdd, stats = worker_job(workdir, args.image, ident, 'playbooks/provision.yml', extravars,
                                 user=ARBITRARY_USER if again else None)
        nodes = stats['artifact_data'].get('rocm_verify_nodes')
        check(isinstance(nodes, dict) and sorted(nodes) == [NODE] and awx_jobs.STATS_KEYS <= set(nodes[NODE])
              and nodes[NODE]['problems'] == [], '%s: artifact rocm_verify_nodes %r' % (ident, nodes))
        verified.update(nodes)
        if again:
            check(not any(stats['changed'].values()), '%s: a second run changed %s' % (ident, stats['changed']))

    def facts(ident):
        # The report files are written into the artifacts folder that the worker streams back: they arrive in the
        # private data dir on this side, beside the events.
        report_dir = '/runner/artifacts/%s/fleet-report' % ident
        pdd, stats = worker_job(workdir, args.image, ident, 'playbooks/facts.yml',
                                dict(extravars, rocm_report_dest=report_dir))
        report = awx_jobs.report_matches_stats(ident, pdd / 'artifacts' / ident / 'fleet-report',
                                               stats['artifact_data'], [NODE])
        host = report['hosts'][0]
        check(host['rocm_version'] == '6.2.4' and host['reachable'] is not False,
              '%s: the report says %r' % (ident, host))
        for name, entry in verified.items():
            check((entry['gpu_count'], entry['gfx_targets']) == (host['gpu_count'], host['gfx_targets']),
                  '%s: %s: rocm_verify found %s %s, the report %s %s' % (
                      ident, name, entry['gpu_count'], entry['gfx_targets'], host['gpu_count'], host['gfx_targets']))

    job('provision', provision)
    job('provision-again', provision)
    job('facts', facts)
    job('navigator', lambda name: navigator_job(workdir, args.image, extravars))
    if failures:
        print('ee_jobs: %d job(s) failed:' % len(failures), file=sys.stderr)
        for failure in failures:
            print('- ' + failure, file=sys.stderr)
        return 1
    print('ee_jobs: all jobs passed')
    return 0


if __name__ == '__main__':
    sys.exit(main())
