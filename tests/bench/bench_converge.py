#!/usr/bin/env python3
"""Converge speed of site.yml against baselines measured in the same run, on fresh Debian 12 containers and the
fixture mirror (docs/performance.md). Figures, not assertions: run it on a quiet machine.

  no-op    site.yml on a converged host, against a play that only gathers facts on the same host
  check    site.yml --check on the converged host, against the no-op run
  cold     site.yml on a fresh host, against the same key, sources, pin, apt-get update and apt-get install of the
           same packages as raw commands in another fresh container (the two package sets are compared)
  scale    site.yml on N fresh hosts at once (forks from ansible.cfg), side by side with the raw commands in N other
           fresh containers at once (the floor at that size: what this machine's cores allow any tool)
  cpu      the controller's CPU seconds per host of a no-op site.yml over M converged containers: user + system
           time of the ansible-playbook process tree (its reaped children: workers, docker exec or ssh clients), / M

--transport docker (the default) reaches the containers through docker exec as root, the way the Molecule scenarios
do; --transport ssh the way a lab does: over SSH (ansible-core's ControlPersist and pipelining, ansible.cfg) as the
admin account `ops`, which becomes root with sudo (the SSH lab: molecule/shared/ssh_lab.yml, one sshd per container
on its own loopback port), and the raw commands go over the same SSH, through sudo.

Usage: tests/bench/bench_converge.py [--transport docker|ssh] [--hosts 1,4,8,16] [--cpu-hosts 64] [--repeat 3]
                                     [--json FILE]
Needs the test command's set-up (tests/harness/host-setup.sh, tests/harness/mirror/mirror.sh start) and its venv.
"""

import argparse
import json
import os
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
IMAGE = "gpulab/debian:bookworm"
# Container names; GPULAB_BENCH_PREFIX keeps two checkouts' runs on one Docker apart.
PREFIX = os.environ.get("GPULAB_BENCH_PREFIX", "gpulab-bench-")
# The SSH lab's ports: one per container, counted up from here (the containers share the host's network).
SSH_PORTS = iter(range(22400, 22600))
FACTS_ONLY = """- name: Gather facts only
  hosts: rocm_nodes
  gather_facts: true
  tasks: []
"""
RAW = r"""set -e
python3 -c "import urllib.request, sys; sys.stdout.buffer.write(urllib.request.urlopen('$KEY').read())" \
  | gpg --dearmor > /tmp/rocm.gpg
mkdir -p /etc/apt/keyrings && install -m 0644 /tmp/rocm.gpg /etc/apt/keyrings/rocm.gpg
echo "deb [arch=amd64 signed-by=/etc/apt/keyrings/rocm.gpg] $URL/rocm/apt/6.2.4 jammy main" \
  > /etc/apt/sources.list.d/rocm.list
printf 'Package: *\nPin: release o=repo.radeon.com\nPin-Priority: 600\n' > /etc/apt/preferences.d/rocm-pin-600
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $PACKAGES >/dev/null
"""


def sh(argv, **kwargs):
    return subprocess.run(argv, check=True, capture_output=True, text=True, **kwargs)


def mirror_env():
    out = sh([str(ROOT / "tests/harness/mirror/mirror.sh"), "env"]).stdout
    return dict(line.split(" ", 1)[1].split("=", 1) for line in out.splitlines() if line.startswith("export "))


def start(names):
    for name in names:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True)
        sh(["docker", "run", "-d", "--name", name, "--hostname", name, "--network", "host", IMAGE, "sleep",
            "infinity"])


def remove(names):
    if names:
        subprocess.run(["docker", "rm", "-f"] + list(names), capture_output=True)


def inventory(folder, names, ports=None):
    """An inventory of the containers with the scenarios' group_vars (the fixture mirror, users, GPU count, and the
    release the raw apt commands install); with ports ({name: port}), reached over SSH (the SSH lab's group_vars)."""
    (folder / "group_vars").mkdir(parents=True, exist_ok=True)
    for name in ("rocm_nodes.yml", "all.yml", "ssh_lab.yml"):
        link = folder / "group_vars" / name
        if not link.exists():
            link.symlink_to(ROOT / "molecule/shared/group_vars" / name)
    hosts = dict((name, {"gpulab_fixture_profile": "mi250x"}) for name in names)
    groups = {"rocm_nodes": {"hosts": hosts, "vars": {"ansible_connection": "community.docker.docker",
                                                      "ansible_python_interpreter": "/usr/bin/python3"}}}
    if ports:
        for name in names:
            hosts[name].update(ansible_connection="ansible.builtin.ssh", ansible_port=ports[name])
        groups["ssh_lab"] = {"children": {"rocm_nodes": {}}}
    (folder / "hosts.yml").write_text(json.dumps({"all": {"children": groups}}))
    return str(folder / "hosts.yml")


def lab(folder, names, env, transport, prepare=True):
    """The inventory of fresh containers, their SSH lab started where the transport is ssh, and (prepare) the test
    fixture's users and GPU profile, which the raw commands' containers go without; {name: port} (empty for
    docker)."""
    ports = dict((name, next(SSH_PORTS)) for name in names) if transport == "ssh" else {}
    inv = inventory(folder, names, ports)
    if ports:
        playbook(inv, ROOT / "molecule/shared/ssh_lab.yml", env)
    if prepare:
        playbook(inv, ROOT / "molecule/shared/prepare.yml", env)
    return inv, ports


def children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def playbook(inv, path, env, *args, cpu=None):
    """Wall seconds of one ansible-playbook run (and, with cpu=[], its process tree's CPU seconds appended there);
    fails loudly when the run fails."""
    began, cpu_before = time.monotonic(), children_cpu()
    proc = subprocess.run(["ansible-playbook", "-i", inv, str(path)] + list(args), capture_output=True, text=True,
                          cwd=str(ROOT), env=env)
    seconds = time.monotonic() - began
    if cpu is not None:
        cpu.append(children_cpu() - cpu_before)
    if proc.returncode != 0:
        sys.exit("ansible-playbook %s %s failed:\n%s" % (path, " ".join(args), proc.stdout[-4000:] + proc.stderr))
    recap = [line for line in proc.stdout.splitlines() if " changed=" in line]
    return seconds, recap


def raw_run(names, script, env, ports=None):
    """Wall seconds of the raw commands in each container at once: through docker exec as root, or with ports over
    SSH as ops through sudo (the same key and known_hosts as the playbooks)."""
    keys = env.get("GPULAB_SSH_LAB_KEYS", "")
    began = time.monotonic()
    procs = []
    for name in names:
        if ports:
            argv = ["ssh", "-i", keys + "/id_ed25519", "-p", str(ports[name]), "-o", "StrictHostKeyChecking=accept-new",
                    "-o", "UserKnownHostsFile=" + keys + "/known_hosts", "ops@127.0.0.1",
                    "sudo bash -c " + shlex.quote(script)]
        else:
            argv = ["docker", "exec", name, "bash", "-c", script]
        procs.append(subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    for proc in procs:
        out, err = proc.communicate()
        if proc.returncode != 0:
            sys.exit("raw commands failed:\n%s%s" % (out[-2000:], err[-2000:]))
    return time.monotonic() - began


def packages(name):
    return set(sh(["docker", "exec", name, "dpkg-query", "-W", "-f", "${Package}=${Version}\\n"]).stdout.split())


def manual(name):
    return sh(["docker", "exec", name, "apt-mark", "showmanual"]).stdout.split()


def median(values):
    return round(statistics.median(values), 2)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transport", choices=("docker", "ssh"), default="docker",
                        help="docker exec as root, or SSH as ops with sudo")
    parser.add_argument("--hosts", default="1,4,8,16", help="host counts of the scale runs")
    parser.add_argument("--cpu-hosts", type=int, default=64, help="containers of the CPU figure (0: skip it)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per no-op, check and facts-only figure")
    parser.add_argument("--json", help="write the figures here too")
    args = parser.parse_args()
    mirror = mirror_env()
    env = dict(os.environ, **mirror)
    env.update(ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_ROLES_PATH=str(ROOT / "roles"), ANSIBLE_COLLECTIONS_PATH=str(ROOT / "collections"))
    work = Path(tempfile.mkdtemp(prefix="gpulab-bench-"))
    env["GPULAB_SSH_LAB_KEYS"] = str(work / "ssh")
    (work / "facts-only.yml").write_text(FACTS_ONLY)
    results = {"transport": args.transport}
    made = []
    try:
        # Cold: site.yml on one fresh host, and the raw commands on another.
        one, raw = PREFIX + "one", PREFIX + "raw"
        start([one, raw])
        made += [one, raw]
        inv, _ = lab(work / "one", [one], env, args.transport)
        raw_ports = lab(work / "raw", [raw], env, args.transport, prepare=False)[1]
        cold, _ = playbook(inv, ROOT / "site.yml", env)
        ours = packages(one)
        # The packages site.yml asked for (apt marks them manual), installed by name on the raw side.
        wanted = sorted(set(manual(one)) - set(manual(raw)))
        script = RAW.replace("$KEY", mirror["GPULAB_MIRROR_KEY_URL"]).replace("$URL", mirror["GPULAB_MIRROR_URL"])
        script = script.replace("$PACKAGES", " ".join(wanted))
        raw_seconds = raw_run([raw], script, env, raw_ports)
        same = ours == packages(raw)
        results["cold"] = {"site_yml_s": round(cold, 2), "raw_commands_s": round(raw_seconds, 2),
                           "ratio": round(cold / raw_seconds, 2), "packages_installed": len(wanted),
                           "same_package_set": same}
        if not same:
            results["cold"]["package_difference"] = sorted(ours ^ packages(raw))

        # No-op and check mode on the converged host, and the facts-only floor.
        noop, facts, check, recaps = [], [], [], []
        for _ in range(args.repeat):
            seconds, recap = playbook(inv, ROOT / "site.yml", env)
            noop.append(seconds)
            recaps += recap
            facts.append(playbook(inv, work / "facts-only.yml", env)[0])
            check.append(playbook(inv, ROOT / "site.yml", env, "--check")[0])
        unchanged = all(" changed=0 " in line for line in recaps)
        results["noop"] = {"site_yml_s": median(noop), "facts_only_s": median(facts),
                           "ratio": round(median(noop) / median(facts), 2), "changed_0": unchanged}
        results["check"] = {"site_yml_check_s": median(check), "noop_s": median(noop),
                            "ratio": round(median(check) / median(noop), 2)}
        remove(made)
        made = []

        # Scale: N fresh hosts at once, then the raw commands on N other fresh containers at once.
        scale = {}
        for count in [int(n) for n in args.hosts.split(",")]:
            names = ["%ss%d-%d" % (PREFIX, count, i) for i in range(count)]
            start(names)
            made += names
            inv, _ = lab(work / ("scale%d" % count), names, env, args.transport)
            seconds = playbook(inv, ROOT / "site.yml", env)[0]
            remove(names)
            names = ["%sraw%d-%d" % (PREFIX, count, i) for i in range(count)]
            start(names)
            made += names
            raw_ports = lab(work / ("raw%d" % count), names, env, args.transport, prepare=False)[1]
            floor = raw_run(names, script, env, raw_ports)
            remove(names)
            made = []
            scale[count] = {"site_yml_s": round(seconds, 2), "raw_floor_s": round(floor, 2),
                            "ratio": round(seconds / floor, 2)}
        results["scale"] = dict((str(count), figure) for count, figure in sorted(scale.items()))

        # The controller's CPU per host of a no-op run over many converged containers.
        if args.cpu_hosts:
            names = ["%scpu-%d" % (PREFIX, i) for i in range(args.cpu_hosts)]
            start(names)
            made += names
            inv, _ = lab(work / "cpu", names, env, args.transport)
            converge_cpu, noop_cpu = [], []
            converge_s = playbook(inv, ROOT / "site.yml", env, cpu=converge_cpu)[0]
            noop_s, recap = playbook(inv, ROOT / "site.yml", env, cpu=noop_cpu)
            remove(names)
            made = []
            results["cpu"] = {"hosts": args.cpu_hosts, "noop_s": round(noop_s, 2),
                              "noop_cpu_s": round(noop_cpu[0], 2),
                              "noop_cpu_s_per_host": round(noop_cpu[0] / args.cpu_hosts, 3),
                              "cold_s": round(converge_s, 2), "cold_cpu_s_per_host": round(converge_cpu[0] / args.cpu_hosts, 3),
                              "changed_0": all(" changed=0 " in line for line in recap)}
    finally:
        remove(made)

    print(json.dumps(results, indent=2))
    print("\nno-op site.yml %.2f s / facts-only %.2f s = %.2fx (changed=0: %s)" % (
        results["noop"]["site_yml_s"], results["noop"]["facts_only_s"], results["noop"]["ratio"],
        results["noop"]["changed_0"]))
    print("check %.2f s / no-op %.2f s = %.2fx" % (results["check"]["site_yml_check_s"], results["check"]["noop_s"],
                                                   results["check"]["ratio"]))
    print("cold site.yml %.2f s / raw commands %.2f s = %.2fx (same %d packages: %s)" % (
        results["cold"]["site_yml_s"], results["cold"]["raw_commands_s"], results["cold"]["ratio"],
        results["cold"]["packages_installed"], results["cold"]["same_package_set"]))
    for count, figure in results["scale"].items():
        print("%2s fresh hosts: site.yml %.1f s / raw floor %.1f s = %.2fx" % (
            count, figure["site_yml_s"], figure["raw_floor_s"], figure["ratio"]))
    if "cpu" in results:
        print("no-op over %d hosts: %.1f s, controller CPU %.1f s = %.3f s per host (changed=0: %s)" % (
            results["cpu"]["hosts"], results["cpu"]["noop_s"], results["cpu"]["noop_cpu_s"],
            results["cpu"]["noop_cpu_s_per_host"], results["cpu"]["changed_0"]))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
