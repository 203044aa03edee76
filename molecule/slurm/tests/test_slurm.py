"""Slurm from Debian with the GPUs as GRES from the facts (issue 12). The converge installed slurmctld on the
controller, slurmd on two compute nodes and munge everywhere; their GPUs are fixtures (molecule/slurm/sysfs/, render
nodes made by mknod, the fixture mirror's rocminfo). The tests run in order: real jobs first, then a GPU count
change through check mode, a converge and a second converge, then a node whose GPUs are gone, and back."""

import json
import os
import re
import shlex
import time

import pytest
import testinfra

from gpulab_test_helpers import gpulab_runs as runs

CTL, N1, N2 = "molecule-slurm-ctl", "molecule-slurm-n1", "molecule-slurm-n2"
HOSTS = "slurm_controllers:slurm_nodes"
SPECS = "/srv/slurm-fixture/specs/"
testinfra_hosts = [CTL]


def node(name):
    return testinfra.get_host("ansible://" + name, ansible_inventory=runs.inventory())


def gres_seen(host):
    """{node: (gres as sinfo shows it without the socket suffix, state)}."""
    lines = host.check_output("sinfo -N -h -o '%N|%G|%t'").splitlines()
    return dict((name, (re.sub(r"\([^)]*\)", "", gres), state)) for name, gres, state in
                (line.split("|") for line in lines))


def wait_for(host, wanted, timeout=40):
    """sinfo's view once it equals wanted ({node: (gres, state)}), else the last view (the assert shows it)."""
    seen = None
    for _ in range(timeout):
        seen = gres_seen(host)
        if seen == wanted:
            break
        time.sleep(1)
    return seen


def job_env(host, *args):
    result = host.run("srun %s env" % " ".join(args))
    assert result.rc == 0, result.stderr
    return dict(line.split("=", 1) for line in result.stdout.splitlines() if "=" in line)


def converge(check=False):
    return runs.playbook("playbooks/slurm.yml", HOSTS, check=check)


def use_gpus(host, spec):
    """Swap a node's fixture GPUs (its sysfs tree and render nodes) for those of another spec."""
    host.check_output("/srv/slurm-fixture/fixture_gpus.sh %s%s" % (SPECS, spec))


def slurm_files(host):
    return host.check_output("sh -c 'cd /etc/slurm && for f in *; do echo \"== $f\"; cat \"$f\"; done; "
                             "sha256sum /etc/munge/munge.key; stat -c %a.%U /etc/munge/munge.key'")


# --- what the converge wrote ---------------------------------------------------------------------------------------

def test_gres_conf_has_one_line_per_gpu_from_the_facts():
    text = node(N1).file("/etc/slurm/gres.conf").content_string
    lines = [line.split("#")[0].split() for line in text.splitlines() if line.startswith("Name=")]
    assert lines == [["Name=gpu", "Type=mi250x", "File=/dev/dri/renderD128", "Flags=amd_gpu_env", "Cores=0-1"],
                     ["Name=gpu", "Type=mi250x", "File=/dev/dri/renderD129", "Flags=amd_gpu_env", "Cores=0-1"]], text
    # NUMA node unknown (-1): no Cores=.
    text = node(N2).file("/etc/slurm/gres.conf").content_string
    assert [line.split("#")[0].split() for line in text.splitlines() if line.startswith("Name=")] == [
        ["Name=gpu", "Type=rx6900xt", "File=/dev/dri/renderD128", "Flags=amd_gpu_env"]], text


def test_slurm_conf_is_the_same_everywhere_and_lists_the_gres(host):
    conf = host.file("/etc/slurm/slurm.conf").content_string
    assert "GresTypes=gpu" in conf.splitlines()
    nodes = dict((line.split()[0], line) for line in conf.splitlines() if line.startswith("NodeName="))
    assert "Gres=gpu:mi250x:2" in nodes["NodeName=" + N1].split()
    assert "Gres=gpu:rx6900xt:1" in nodes["NodeName=" + N2].split()
    assert "Port=26819" in nodes["NodeName=" + N2].split()
    for name in (N1, N2):
        assert node(name).file("/etc/slurm/slurm.conf").content_string == conf


def test_cgroup_conf_constrains_devices_and_the_munge_key_is_shared(host):
    keys = set()
    for name in (CTL, N1, N2):
        machine = node(name)
        if name != CTL:
            assert "ConstrainDevices=yes" in machine.file("/etc/slurm/cgroup.conf").content_string.splitlines()
        key = machine.file("/etc/munge/munge.key")
        assert (key.mode, key.user, key.group) == (0o400, "munge", "munge")
        keys.add(machine.check_output("sha256sum /etc/munge/munge.key").split()[0])
    assert len(keys) == 1
    # The containers give Slurm no cgroups: ConstrainDevices is written, task/cgroup is not loaded (docs/slurm.md).
    assert "TaskPlugin=task/affinity" in host.file("/etc/slurm/slurm.conf").content_string.splitlines()


# --- Slurm sees the GPUs, and jobs get exactly theirs --------------------------------------------------------------

def test_sinfo_and_scontrol_report_the_gres_from_the_facts(host):
    assert wait_for(host, {N1: ("gpu:mi250x:2", "idle"), N2: ("gpu:rx6900xt:1", "idle")}) == {
        N1: ("gpu:mi250x:2", "idle"), N2: ("gpu:rx6900xt:1", "idle")}
    shown = host.check_output("scontrol show node -o %s" % N1)
    assert re.search(r"\bGres=gpu:mi250x:2(\(S:0\))? ", shown), shown
    assert re.search(r"\bState=IDLE ", shown), shown
    shown = host.check_output("scontrol show node -o %s" % N2)
    assert re.search(r"\bGres=gpu:rx6900xt:1 ", shown), shown


def test_a_job_asking_for_two_gpus_sees_both(host):
    env = job_env(host, "-w", N1, "--gres=gpu:mi250x:2")
    assert env["ROCR_VISIBLE_DEVICES"] == "0,1", env
    # The variables Slurm sets for the GPUs of a step: their indices on the node, and how many.
    assert (env["SLURM_STEP_GPUS"], env["SLURM_GPUS_ON_NODE"]) == ("0,1", "2"), env
    assert "CUDA_VISIBLE_DEVICES" not in env, env  # Flags=amd_gpu_env: ROCm masks once
    one = job_env(host, "-w", N1, "--gres=gpu:mi250x:1")
    assert one["ROCR_VISIBLE_DEVICES"] == "0", one


def test_three_gpus_of_a_two_gpu_node_are_refused(host):
    result = host.run("srun -w %s --gres=gpu:mi250x:3 true" % N1)
    assert result.rc != 0
    assert "Requested node configuration is not available" in result.stderr, result.stderr


def test_a_batch_job_runs_the_nodes_rocminfo_into_its_output_file(host):
    job = host.check_output("sbatch --parsable --wait -w %s --gres=gpu:rx6900xt:1 "
                            "--output=/var/tmp/gpulab-slurm-test-%%j.out --wrap /opt/rocm-6.2.4/bin/rocminfo" % N2)
    output = node(N2).file("/var/tmp/gpulab-slurm-test-%s.out" % job.strip().split(";")[0])
    assert output.exists
    assert re.search(r"Marketing Name:\s+AMD Radeon RX 6900 XT", output.content_string), output.content_string
    assert "gfx1030" in output.content_string


def test_the_fleet_report_shows_the_gres_slurm_sees():
    run = runs.playbook("playbooks/facts.yml", "slurm_nodes")
    assert run.rc == 0, run
    folder = os.path.join(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"], "fleet-report")
    report = json.loads(open(os.path.join(folder, "fleet-report.json")).read())
    slurm = dict((entry["name"], entry["slurm"]) for entry in report["hosts"])
    assert slurm[N1]["node"] == N1 and slurm[N1]["gres"] == "gpu:mi250x:2" and slurm[N1]["listed"], slurm
    assert slurm[N2]["gres"] == "gpu:rx6900xt:1" and slurm[N2]["state"] == "IDLE", slurm
    page = open(os.path.join(folder, "fleet-report.html")).read()
    assert "Slurm GRES</th>" in page
    assert "gpu:mi250x:2<br><span class=\"muted\">%s: IDLE</span>" % N1 in page


def test_autodetect_rsmi_is_planned_where_slurmd_has_the_plugin(host):
    """Debian's slurmd comes with gpu_rsmi.so (slurm-wlm-rsmi-plugin): rocm_slurm_gres_autodetect auto (the default;
    the scenario sets never, as ROCm SMI sees no fixture GPU) would hand the GPUs to Slurm's own detection."""
    assert node(N1).file("/usr/lib/x86_64-linux-gnu/slurm-wlm/gpu_rsmi.so").is_file
    before = [slurm_files(node(name)) for name in (CTL, N1, N2)]
    run = runs.playbook("playbooks/slurm.yml", HOSTS, extra_vars={"rocm_slurm_gres_autodetect": "auto"}, check=True)
    assert run.rc == 0 and run.changed(N1) > 0 and run.changed(N2) > 0, run
    assert "+AutoDetect=rsmi" in run.output and "-Name=gpu Type=mi250x File=/dev/dri/renderD128" in run.output, run
    assert re.search(r"^\+NodeName=%s .*Gres=gpu:2 " % N1, run.output, re.M), run
    assert [slurm_files(node(name)) for name in (CTL, N1, N2)] == before


# --- the GPUs change ------------------------------------------------------------------------------------------------

def said(run):
    """The run's output with its lines joined (the plan's reasons are wrapped, YAML doubles a quote in quotes)."""
    return " ".join(run.output.split()).replace("''", "'")


def pids(name, daemon):
    return set(node(name).check_output("pidof %s || true" % daemon).split())


def test_check_mode_plans_a_new_gpu_and_writes_nothing(host):
    use_gpus(node(N2), "two-rx6900xt-no-numa.json")
    before = [slurm_files(node(name)) for name in (CTL, N1, N2)]
    run = converge(check=True)
    assert run.rc == 0 and run.changed(N2) > 0, run
    assert "write /etc/slurm/gres.conf: the GPUs differ (slurmd restarts)" in said(run), run
    assert "+Name=gpu Type=rx6900xt File=/dev/dri/renderD129 Flags=amd_gpu_env" in run.output, run
    assert [slurm_files(node(name)) for name in (CTL, N1, N2)] == before


def test_a_new_gpu_restarts_the_daemons_that_take_it_and_reconfigures_the_others(host):
    daemons = ((CTL, "slurmctld"), (N1, "slurmd"), (N2, "slurmd"))
    before = [pids(name, daemon) for name, daemon in daemons]
    run = converge()
    assert run.rc == 0, run
    text = node(N2).file("/etc/slurm/gres.conf").content_string
    assert "File=/dev/dri/renderD129" in text and text.count("Type=rx6900xt") == 2, text
    assert "Gres=gpu:rx6900xt:2" in host.file("/etc/slurm/slurm.conf").content_string
    assert wait_for(host, {N1: ("gpu:mi250x:2", "idle"), N2: ("gpu:rx6900xt:2", "idle")}) == {
        N1: ("gpu:mi250x:2", "idle"), N2: ("gpu:rx6900xt:2", "idle")}
    # The plan said which daemon restarts and why: Slurm takes a node's new GPU count only when slurmctld and that
    # node's slurmd start (22.05 refuses it on reconfigure); n1, whose GPUs stay, re-reads slurm.conf on scontrol
    # reconfigure.
    assert "the GPUs of %s differ (slurmctld restarts" % N2 in said(run), run
    assert "the GPUs of %s differ (slurmd restarts: its own node line changed)" % N2 in said(run), run
    assert "the GPUs of %s differ (this slurmd re-reads it on scontrol reconfigure, no restart)" % N2 in said(run)
    assert "RUNNING HANDLER [rocm_slurm : Reconfigure Slurm (rocm_slurm)]" in run.output, run
    assert "changed: [%s -> %s]" % (N1, CTL) in run.output, run
    after = [pids(name, daemon) for name, daemon in daemons]
    assert [old != new for old, new in zip(before, after)] == [True, False, True], (before, after)
    assert job_env(host, "-w", N2, "--gres=gpu:rx6900xt:2")["ROCR_VISIBLE_DEVICES"] == "0,1"


def test_a_second_converge_changes_nothing():
    run = converge()
    assert run.rc == 0 and [run.changed(name) for name in (CTL, N1, N2)] == [0, 0, 0], run


def test_a_node_without_gpus_gets_no_gres_and_runs_cpu_jobs(host):
    use_gpus(node(N2), "no-gpu.json")
    run = converge()
    assert run.rc == 0, run
    assert not node(N2).file("/etc/slurm/gres.conf").exists
    line = [line for line in host.file("/etc/slurm/slurm.conf").content_string.splitlines()
            if line.startswith("NodeName=%s " % N2)][0]
    assert "Gres=" not in line, line
    # sinfo shows "(null)" for no GRES (gres_seen drops the parenthesised part).
    assert wait_for(host, {N1: ("gpu:mi250x:2", "idle"), N2: ("", "idle")}) == {
        N1: ("gpu:mi250x:2", "idle"), N2: ("", "idle")}
    assert host.check_output("srun -w %s printenv SLURMD_NODENAME" % N2) == N2
    assert host.run("srun -w %s --gres=gpu:1 true" % N2).rc != 0


def test_the_gpu_comes_back_and_a_lost_munge_key_is_the_controllers_again(host):
    use_gpus(node(N2), "one-rx6900xt-no-numa.json")
    # n2's munge key replaced by other bytes: the converge puts the controller's back, never showing it.
    node(N2).check_output("head -c 1024 /dev/urandom > /etc/munge/munge.key")
    run = converge()
    assert run.rc == 0, run
    assert "install the controller's munge key: it differs from the controller's" in said(run), run
    ctl_key = node(CTL).check_output("sha256sum /etc/munge/munge.key").split()[0]
    assert node(N2).check_output("sha256sum /etc/munge/munge.key").split()[0] == ctl_key
    key = node(N2).file("/etc/munge/munge.key")
    assert (key.mode, key.user, key.group) == (0o400, "munge", "munge")
    encoded = node(CTL).check_output("base64 -w0 /etc/munge/munge.key")
    leaked = encoded[:40] in run.output or encoded[-40:] in run.output
    assert not leaked, "the munge key (base64) is in the playbook's output"
    assert wait_for(host, {N1: ("gpu:mi250x:2", "idle"), N2: ("gpu:rx6900xt:1", "idle")}) == {
        N1: ("gpu:mi250x:2", "idle"), N2: ("gpu:rx6900xt:1", "idle")}
    assert host.check_output("srun -w %s --gres=gpu:rx6900xt:1 printenv SLURMD_NODENAME" % N2) == N2


@pytest.fixture(autouse=True)
def _slurm_is_up(host):
    """Every test starts with slurmctld answering (a failed test before must not hide the next one's result)."""
    for _ in range(20):
        if host.run("scontrol ping").rc == 0:
            return
        time.sleep(1)


# --- the GPU health check as Slurm's HealthCheckProgram (issue 22, docs/health.md) ---------------------------------

HEALTH_ON = {"rocm_slurm_health_check": True, "rocm_slurm_health_interval": 5, "rocm_slurm_health_prolog": True}


def drained(host):
    """{node: reason} of the nodes sinfo -R lists (drained or down, with their reasons)."""
    lines = host.check_output("sinfo -R -h -o '%n|%E'").splitlines()
    return dict(line.split("|", 1) for line in lines if "|" in line)


def wait_until(check, timeout=90):
    value = None
    for _ in range(timeout):
        value = check()
        if value:
            return value
        time.sleep(1)
    return value


def last_check(name):
    """When the node's health check last ran (its last.json)."""
    return json.loads(node(name).file("/var/lib/gpulab/health/last.json").content_string)["time"]


def test_the_health_check_runs_from_slurm(host):
    run = runs.playbook("molecule/slurm/health.yml", HOSTS)
    assert run.rc == 0, run
    assert node(N2).run("/usr/sbin/gpulab-gpu-health").rc == 0
    run = runs.playbook("playbooks/slurm.yml", HOSTS, extra_vars=HEALTH_ON)
    assert run.rc == 0, run
    conf = host.file("/etc/slurm/slurm.conf").content_string
    assert "HealthCheckProgram=/usr/sbin/gpulab-slurm-health" in conf and "HealthCheckInterval=5" in conf, conf
    assert "Prolog=/usr/sbin/gpulab-slurm-prolog" in conf and "SchedulerParameters=nohold_on_prolog_fail" in conf
    assert "PrologFlags=Alloc" in conf, conf
    assert wait_for(host, {N1: ("gpu:mi250x:2", "idle"), N2: ("gpu:rx6900xt:1", "idle")}) == {
        N1: ("gpu:mi250x:2", "idle"), N2: ("gpu:rx6900xt:1", "idle")}
    # slurmd ran the check: its result is there, healthy
    last = json.loads(node(N2).file("/var/lib/gpulab/health/last.json").content_string)
    assert last["verdict"] == "healthy", last
    again = runs.playbook("playbooks/slurm.yml", HOSTS, extra_vars=HEALTH_ON)
    assert again.rc == 0 and [again.changed(name) for name in (CTL, N1, N2)] == [0, 0, 0], again


def test_a_broken_gpu_is_drained_with_a_gpulab_reason_and_resumed_when_repaired(host):
    node(N2).check_output("rm /dev/dri/renderD128")
    reasons = wait_until(lambda: drained(host).get(N2))
    assert reasons and reasons.startswith("gpulab: health: RENDER_NODE"), drained(host)
    assert N1 not in drained(host)
    node(N2).check_output("mknod -m 0660 /dev/dri/renderD128 c 226 128 && chgrp render /dev/dri/renderD128")
    assert wait_until(lambda: N2 not in drained(host)), drained(host)
    assert wait_for(host, {N1: ("gpu:mi250x:2", "idle"), N2: ("gpu:rx6900xt:1", "idle")})[N2][1] == "idle"


def test_the_prolog_refuses_a_job_on_a_broken_gpu_and_slurm_requeues_it_to_the_healthy_node(host):
    """A job allocated to n2 between two health checks, with n2's render node gone: gpulab-slurm-prolog refuses it,
    Slurm drains n2 ("Prolog error") and requeues the job, the next health check gives the drain its gpulab reason,
    the job runs on n1; repaired, n2 resumes."""
    blocker = host.check_output("sbatch --parsable -w %s --exclusive --wrap 'sleep 300'" % N1).split(";")[0]
    assert wait_until(lambda: job_field(host, blocker, "JobState") == "RUNNING", 20), job_field(host, blocker,
                                                                                                "JobState")
    # Right after a health check of n2 wrote its result, the render node removed and a job submitted (from n2, in
    # one shell): n1 is taken, so the job lands on n2 seconds before the next check (every 5 s) could drain it.
    job = node(N2).check_output(
        "f=/var/lib/gpulab/health/last.json; t=$(stat -c %y $f); n=0; "
        "while [ \"$(stat -c %y $f)\" = \"$t\" ] && [ $n -lt 150 ]; do sleep 0.1; n=$((n+1)); done; "
        "rm /dev/dri/renderD128; "
        "sbatch --parsable --requeue --output=/var/tmp/gpulab-prolog-%j.out --wrap 'printenv SLURMD_NODENAME'"
    ).split(";")[0]
    try:
        assert wait_until(lambda: int(job_field(host, job, "Restarts")) >= 1, 30), host.check_output(
            "scontrol show job -o %s" % job)
        # What Slurm did and logged: slurmd ran the prolog (its output in slurmd.log), slurmctld drained n2 with its
        # own reason "Prolog error" and requeued the job; the next health check gave the drain the checks' reason.
        assert ("error: prolog failed: rc:1 output:gpulab-slurm-prolog: job %s refused on node %s: gpulab: health: "
                "RENDER_NODE" % (job, N2)) in node(N2).file("/var/log/slurm/slurmd.log").content_string
        ctl_log = host.file("/var/log/slurm/slurmctld.log").content_string
        assert "Prolog or job env setup failure on node %s, draining the node" % N2 in ctl_log
        assert "Requeuing JobId=%s" % job in ctl_log
        assert wait_until(lambda: (drained(host).get(N2) or "").startswith("gpulab: health: RENDER_NODE"), 30), \
            drained(host)
        refused = json.loads(node(N2).file("/var/lib/gpulab/health/prolog.json").content_string)
        assert refused["job"] == job and refused["reason"].startswith("gpulab: health: RENDER_NODE"), refused
        # Pending, not held (nohold_on_prolog_fail). Slurm lets a requeued batch job start again only after its
        # credential window (BeginTime, 121 s after the requeue); the test moves that on, as an admin can.
        assert job_field(host, job, "JobState") == "PENDING" and job_field(host, job, "Reason") == "BeginTime"
        host.check_output("scontrol update JobId=%s StartTime=now" % job)
    finally:
        host.run("scancel %s" % blocker)
    assert wait_until(lambda: job_field(host, job, "JobState") == "COMPLETED", 60), host.check_output(
        "scontrol show job -o %s" % job)
    assert job_field(host, job, "NodeList") == N1
    assert node(N1).file("/var/tmp/gpulab-prolog-%s.out" % job).content_string == N1 + "\n"
    node(N2).check_output("mknod -m 0660 /dev/dri/renderD128 c 226 128 && chgrp render /dev/dri/renderD128")
    assert wait_until(lambda: N2 not in drained(host)), drained(host)
    assert not node(N2).file("/var/lib/gpulab/health/prolog.json").exists


def test_an_admins_drain_stays(host):
    host.check_output("scontrol update NodeName=%s State=DRAIN Reason='admin: fan swap'" % N2)
    since = last_check(N2)
    # a health check of the (healthy) node ran after the admin's drain, and left it drained
    assert wait_until(lambda: last_check(N2) > since), since
    assert drained(host).get(N2) == "admin: fan swap", drained(host)
    host.check_output("scontrol update NodeName=%s State=RESUME" % N2)
    assert wait_until(lambda: N2 not in drained(host)), drained(host)


KERNEL_LOG = "/var/log/gpulab-fixture-kern.log"
# A real capture (the collection's fixture store): amdgpu failing to probe an MI210, a fatal class.
PROBE_FAILED = (runs.PROJECT / "collections/ansible_collections/gpulab/rocm/tests/unit/plugins/module_utils/fixtures"
                / "kernel-log/dmesg-grep-amdgpu-2x-mi210-rocm7.1-amdgpu6.16.13-fatal-gpu-init-probe-failed-error-12.txt")


def test_a_fatal_kernel_line_drains_the_node_until_it_is_acknowledged(host):
    line = next(text for text in PROBE_FAILED.read_text().splitlines() if re.search(r"probe of \S+ failed", text))
    node(N2).check_output("printf '%%s\\n' %s >> %s" % (shlex.quote(line), KERNEL_LOG))
    assert wait_until(lambda: (drained(host).get(N2) or "").startswith("gpulab: health: KLOG_PROBE_FAILED")), \
        drained(host)
    assert N1 not in drained(host)
    # The line is read once; the fault is held: a later check keeps the node drained.
    since = last_check(N2)
    assert wait_until(lambda: last_check(N2) > since), since
    assert (drained(host).get(N2) or "").startswith("gpulab: health: KLOG_PROBE_FAILED"), drained(host)
    last = json.loads(node(N2).file("/var/lib/gpulab/health/last.json").content_string)
    assert last["kernel_log"]["source"] == "file" and last["kernel_log"]["totals"]["KLOG_PROBE_FAILED"] == 1, last
    # An admin who has looked acknowledges it: the next check passes and resumes the node.
    node(N2).check_output("/usr/sbin/gpulab-gpu-health --ack-kernel-log KLOG_PROBE_FAILED")
    assert wait_until(lambda: N2 not in drained(host)), drained(host)


# --- maintenance that respects jobs: upgrade.yml drains, waits, changes, checks, resumes (docs/health.md) ------------

# A change that upgrade.yml applies on these nodes without a ROCm install (they run none): the health check's
# expected values (/etc/gpulab/health.json), through the health phase alone. Their GPUs are fixture trees under
# /srv/gpulab-sysfs, not on the container's PCI bus, which preflight reads: rocm_preflight_gpus_required false.
UPGRADE = "/etc/gpulab/health.json"


def upgrade(timeout, check=False, bound=60):
    # Both nodes in one batch, so that n2 is drained while its job runs (the roll itself is the default scenario's).
    return runs.playbook("playbooks/upgrade.yml", "slurm_nodes", check=check, tags="health", extra_vars={
        "rocm_health_rocminfo_timeout": timeout, "rocm_upgrade_drain_timeout": bound, "rocm_maintenance_poll": 1,
        "rocm_upgrade_serial": 2, "rocm_preflight_gpus_required": False})


def job_until(node_name, text, gres=""):
    """sbatch a job on node_name that runs until `scontrol show node` shows text (at most 60 s), then 3 s more and ends
    by itself: it is running when the drain comes, however long the play's plan pass takes, and the watchers (0.5 s
    apart) see it running under the drain. Returns the sbatch arguments."""
    return ("sbatch --parsable -w %s %s --output=/var/tmp/gpulab-job-%%j.out --wrap 'for i in $(seq 120); do "
            "scontrol show node %s | grep -q \"%s\" && break; sleep 0.5; done; sleep 3; echo finished'"
            % (node_name, gres, node_name, text))


def job_field(host, job, field):
    shown = host.check_output("scontrol show job -o %s" % job)
    return re.search(r"\b%s=(\S*)" % field, shown).group(1)


def watching(host, job, work):
    """Run work() while looking at sinfo -R and the job: (its result, [({node: reason}, job state)] seen)."""
    import threading
    seen, done = [], threading.Event()

    def watch():
        while not done.is_set():
            seen.append((drained(host), host.check_output("squeue -h -j %s -o %%T || true" % job).strip()))
            time.sleep(0.5)
    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        result = work()
    finally:
        done.set()
        watcher.join()
    return result, seen


def test_check_mode_shows_the_drain_and_changes_nothing(host):
    before = [node(name).file(UPGRADE).content_string for name in (N1, N2)]
    run = upgrade(25, check=True)
    assert run.rc == 0, run
    assert "drain %s (gpulab: maintenance: upgrade) before health changes" % N2 in said(run), run
    assert [node(name).file(UPGRADE).content_string for name in (N1, N2)] == before
    assert N2 not in drained(host)


def test_an_upgrade_waits_for_the_running_job_and_resumes_the_node(host):
    job = host.check_output(job_until(N2, "DRAIN")).strip().split(";")[0]
    assert wait_until(lambda: job_field(host, job, "JobState") == "RUNNING", 20), job_field(host, job, "JobState")
    run, seen = watching(host, job, lambda: upgrade(25))
    assert run.rc == 0, run
    # drained with our reason while the job still ran, then resumed
    assert any((reasons.get(N2) or "").startswith("gpulab: maintenance: upgrade") and state == "RUNNING"
               for reasons, state in seen), seen
    assert N2 not in drained(host) and N1 not in drained(host), drained(host)
    # the job ended by itself, normally, before the change was applied
    assert (job_field(host, job, "JobState"), job_field(host, job, "ExitCode")) == ("COMPLETED", "0:0")
    assert node(N2).file("/var/tmp/gpulab-job-%s.out" % job).content_string == "finished\n"
    ended = int(host.check_output("date -d %s +%%s" % job_field(host, job, "EndTime")))
    assert '"rocminfo_timeout": 25' in node(N2).file(UPGRADE).content_string.replace("\n", " ")
    assert node(N2).file(UPGRADE).mtime.timestamp() >= ended, (node(N2).file(UPGRADE).mtime, ended)
    assert "TASK [rocm_maintenance : Wait for the jobs of the node to end]" in run.output, run
    assert wait_for(host, {N1: ("gpu:mi250x:2", "idle"), N2: ("gpu:rx6900xt:1", "idle")})[N2][1] == "idle"
    again = upgrade(25)
    assert again.rc == 0 and [again.changed(name) for name in (N1, N2)] == [0, 0], again
    assert "nothing to change on %s: not drained" % N2 in said(again), again


def test_at_the_bound_the_node_stays_drained_unchanged_and_the_next_run_resumes_it(host):
    job = host.check_output("sbatch --parsable -w %s --wrap 'sleep 60'" % N2).strip().split(";")[0]
    assert wait_until(lambda: job_field(host, job, "JobState") == "RUNNING", 20), job_field(host, job, "JobState")
    before = node(N2).file(UPGRADE).content_string
    run = upgrade(30, bound=3)
    assert run.rc != 0, run
    text = said(run)
    assert "%s: Slurm node %s still runs 1 job after 3 s (rocm_upgrade_drain_timeout): %s (root, wrap, running)" % (
        N2, N2, job) in text, run
    assert "Nothing of ROCm was changed on it" in text and "the node stays drained" in text, run
    assert node(N2).file(UPGRADE).content_string == before
    assert drained(host).get(N2) == "gpulab: maintenance: upgrade", drained(host)
    assert job_field(host, job, "JobState") == "RUNNING"
    host.check_output("scancel %s" % job)
    # the next run continues the maintenance it finds (its own reason) and resumes the node
    again = upgrade(30)
    assert again.rc == 0, again
    assert "is drained for maintenance already" in said(again), again
    assert '"rocminfo_timeout": 30' in node(N2).file(UPGRADE).content_string.replace("\n", " ")
    assert wait_until(lambda: N2 not in drained(host) and N1 not in drained(host)), drained(host)


def test_an_upgrade_never_resumes_an_admins_drain(host):
    host.check_output("scontrol update NodeName=%s State=DRAIN Reason='admin: fan swap'" % N1)
    run = upgrade(20)
    assert run.rc == 0, run
    assert "drained by someone else (admin: fan swap)" in said(run), run
    assert drained(host).get(N1) == "admin: fan swap" and N2 not in drained(host), drained(host)
    host.check_output("scontrol update NodeName=%s State=RESUME" % N1)
    assert wait_until(lambda: N1 not in drained(host)), drained(host)


# --- maintenance overrides no admin (issue 38): each step reads the node first, our own drains are finished ---------

def step(name, action, reason=None):
    extra = {"gpulab_step": action}
    if reason:
        extra["gpulab_step_reason"] = reason
    return runs.playbook("molecule/slurm/maintenance_step.yml", name, extra_vars=extra)


def test_our_own_drain_left_by_a_run_is_finished_when_nothing_is_left_to_change(host):
    # health.json holds rocminfo_timeout 20 from the test before: upgrade(20) has nothing to change on the nodes
    assert step(N2, "drain").rc == 0
    assert drained(host).get(N2) == "gpulab: maintenance: upgrade", drained(host)
    run = upgrade(20)
    assert run.rc == 0, run
    assert ("%s is drained by an earlier maintenance (gpulab: maintenance: upgrade) and nothing is left to change: "
            "its health check runs, then it is resumed" % N2) in said(run), run
    assert "nothing to change on %s: not drained" % N1 in said(run), run
    assert wait_until(lambda: N2 not in drained(host)), drained(host)


def test_an_admins_drain_during_the_job_wait_is_neither_rebooted_nor_resumed(host):
    import threading
    # n2 was resumed by the test before: Slurm may take a few seconds to offer it again
    assert wait_until(lambda: host.check_output("sinfo -h -n %s -o %%T" % N2).strip() == "idle", 60), \
        host.check_output("sinfo -h -n %s -o '%%T %%E'" % N2)
    job = host.check_output(job_until(N2, "admin: fan swap")).strip().split(";")[0]
    assert wait_until(lambda: job_field(host, job, "JobState") == "RUNNING", 60), \
        host.check_output("scontrol show job %s" % job)
    result = {}
    play = threading.Thread(target=lambda: result.update(run=upgrade(25)))
    play.start()
    try:
        # the play drained n2 and waits for the job: the admin drains it with their own reason
        assert wait_until(lambda: (drained(host).get(N2) or "").startswith("gpulab: maintenance:"), 60), drained(host)
        host.check_output("scontrol update NodeName=%s State=DRAIN Reason='admin: fan swap'" % N2)
    finally:
        play.join()
    run = result["run"]
    try:
        assert run.rc == 0, run
        text = said(run)
        assert "%s was drained by someone else during the wait (admin: fan swap)" % N2 in text, run
        assert "%s is drained by someone else (admin: fan swap): the reason is kept" % N2 in text, run
        assert "resume step left it alone" in text, run
        assert drained(host).get(N2) == "admin: fan swap", drained(host)
        assert (job_field(host, job, "JobState"), job_field(host, job, "ExitCode")) == ("COMPLETED", "0:0")
    finally:
        host.check_output("scontrol update NodeName=%s State=RESUME" % N2)
    assert wait_until(lambda: N2 not in drained(host)), drained(host)


REBOOT_STANDIN = "/usr/local/sbin/gpulab-test-reboot"
REBOOT_SEEN = "/var/tmp/gpulab-test-reboot-requested"


def test_the_reboot_step_runs_slurms_reboot_program_only_for_our_drain(host):
    """A RebootProgram stand-in that records the request (never a real reboot): rocm_slurm writes the owned line,
    slurm_maintenance's reboot asks Slurm, and slurmd runs the program on the node."""
    for name in (N1, N2):
        node(name).check_output("printf '#!/bin/sh\\ndate +%%s >> %s\\n' > %s && chmod 0755 %s && rm -f %s"
                                % (REBOOT_SEEN, REBOOT_STANDIN, REBOOT_STANDIN, REBOOT_SEEN))
    run = runs.playbook("playbooks/slurm.yml", HOSTS, extra_vars=dict(HEALTH_ON, rocm_slurm_reboot_program=REBOOT_STANDIN))
    assert run.rc == 0, run
    # A slurm.conf the role renders whole has no owned-line marks; one it edits has them on its own lines.
    lines = host.file("/etc/slurm/slurm.conf").content_string.splitlines()
    assert "RebootProgram=%s" % REBOOT_STANDIN in [line.split("  #")[0] for line in lines], lines
    try:
        # an admin's drain: the step reads the node, changes nothing and says why
        host.check_output("scontrol update NodeName=%s State=DRAIN Reason='admin: fan swap'" % N1)
        alone = step(N1, "reboot")
        assert alone.rc == 0 and alone.changed(N1) == 0, alone
        assert "is drained by someone else (admin: fan swap)" in said(alone), alone
        assert drained(host).get(N1) == "admin: fan swap", drained(host)
        # our drain: rebooted through Slurm, which runs the stand-in on the node
        assert step(N2, "drain").rc == 0
        run = step(N2, "reboot")
        assert run.rc == 0 and run.changed(N2) == 1, run
        assert wait_until(lambda: node(N2).file(REBOOT_SEEN).exists, 30), drained(host)
        assert (drained(host).get(N2) or "").startswith("gpulab: maintenance: reboot"), drained(host)
        assert not node(N1).file(REBOOT_SEEN).exists
    finally:
        # no real reboot comes: give both nodes back (a node whose reboot was issued resumes from DOWN)
        host.run("scontrol update NodeName=%s State=DOWN Reason='gpulab test: reboot stand-in done'" % N2)
        host.run("scontrol update NodeName=%s,%s State=RESUME" % (N1, N2))
    assert wait_until(lambda: N1 not in drained(host) and N2 not in drained(host)), drained(host)


# --- a GPU partition profile changed under a running job (issue 41) -------------------------------------------------
# partition.yml makes n1 an 8x MI300X node in SPX+NPS1 (fixture trees per profile, the fixture amd-smi, a stand-in
# modprobe and an exporter stand-in that holds a render node); the test variables below are read by n1's host_vars
# only. slurm.conf keeps the lines of the tests before (the health check, the reboot program).
FIXTURE_STATE = "/var/lib/gpulab-fixture"
PARTITION_NODE = dict(HEALTH_ON, rocm_slurm_reboot_program=REBOOT_STANDIN, slurm_partition_sysfs=FIXTURE_STATE + "/sysfs")
CPX_NPS4 = dict(PARTITION_NODE, slurm_partition_compute="CPX", slurm_partition_memory="NPS4",
                rocm_maintenance_poll=1, rocm_upgrade_drain_timeout=120)


def change_profile():
    # n1 is the node to change (gpulab_hosts); the controller is in the run (the limit), for upgrade.yml's Slurm play.
    return runs.playbook("playbooks/upgrade.yml", "slurm_controllers:%s" % N1, tags="partition",
                         extra_vars=dict(CPX_NPS4, gpulab_hosts=N1))


def test_a_partition_change_waits_for_the_job_stops_the_holder_and_slurm_gets_the_64_gpus(host):
    fixture = runs.playbook("molecule/slurm/partition.yml", N1)
    assert fixture.rc == 0, fixture
    # n1 as Slurm knows it before the change: 8 MI300X in SPX (its count rose from the MI250X's 2: its slurmd
    # restarted before slurmctld, so it is never drained for reporting fewer GPUs than configured).
    run = runs.playbook("playbooks/slurm.yml", HOSTS, extra_vars=PARTITION_NODE)
    assert run.rc == 0, run
    seen = wait_for(host, {N1: ("gpu:mi300x:8", "idle"), N2: ("gpu:rx6900xt:1", "idle")})
    assert seen[N1] == ("gpu:mi300x:8", "idle"), seen
    # Without the controller in the run's --limit, upgrade.yml could not give Slurm the new GPUs: refused at the gate,
    # n1 neither drained nor changed (its files but the daemons' own logs, spools and the health check's last result).
    n1 = node(N1)
    before = runs.snapshot(n1)
    refused = runs.playbook("playbooks/upgrade.yml", N1, tags="partition", extra_vars=CPX_NPS4)
    assert refused.rc != 0 and refused.changed(N1) == 0, refused
    assert "the run's --limit leaves the controller out" in said(refused), refused
    assert "found by planning every phase before any change, so nothing was changed" in said(refused), refused
    moving = ("/var/log/", "/var/spool/", "/var/lib/gpulab/health/", "/run/", "/tmp/", "/var/tmp/")
    assert [line for line in runs.differences(before, runs.snapshot(n1))
            if not any(part in line for part in moving)] == []
    assert N1 not in drained(host), drained(host)
    job = host.check_output(job_until(N1, "DRAIN", "--gres=gpu:mi300x:8")).strip().split(";")[0]
    assert wait_until(lambda: job_field(host, job, "JobState") == "RUNNING", 20), job_field(host, job, "JobState")
    run, seen = watching(host, job, change_profile)
    assert run.rc == 0, run
    # drained with our reason while the job ran; the job ended by itself before the holder stopped and amd-smi ran
    assert any((reasons.get(N1) or "").startswith("gpulab: maintenance: upgrade") and state == "RUNNING"
               for reasons, state in seen), seen
    assert (job_field(host, job, "JobState"), job_field(host, job, "ExitCode")) == ("COMPLETED", "0:0")
    ended = int(host.check_output("date -d %s +%%s" % job_field(host, job, "EndTime")))
    assert n1.file("/var/tmp/gpulab-job-%s.out" % job).content_string == "finished\n"
    holder = [line.split() for line in n1.file("/var/log/gpulab-fixture-exporter.log").content_string.splitlines()]
    assert [event for _when, event in holder] == ["start", "stop", "start"], holder
    assert float(holder[1][0]) >= ended, (holder, ended)
    assert n1.run("/etc/init.d/amd-metrics-exporter status").rc == 0
    # SPX+NPS1 -> CPX+NPS4 through CPX+NPS1 (AMD's order), the driver reloaded after the memory partition
    assert n1.file(FIXTURE_STATE + "/partition").content_string == "CPX NPS4\n"
    assert n1.file(FIXTURE_STATE + "/sysfs").linked_to == FIXTURE_STATE + "/sysfs-CPX-NPS4"
    reloads = [line.split(" ", 1)[1] for line in
               n1.file("/var/log/gpulab-fixture-modprobe.log").content_string.splitlines()]
    assert reloads == ["modprobe -r amdgpu", "modprobe amdgpu"], reloads
    assert "8 GPU(s) now, 64 after" in said(run), run
    # Slurm has the 64 GPUs: gres.conf one line per render node, the node IDLE (never INVALID, no reason), and a job
    # gets GPUs only the new mode has (9 of them: SPX had 8)
    assert n1.file("/etc/slurm/gres.conf").content_string.count("File=/dev/dri/renderD") == 64
    assert wait_for(host, {N1: ("gpu:mi300x:64", "idle"), N2: ("gpu:rx6900xt:1", "idle")}) == {
        N1: ("gpu:mi300x:64", "idle"), N2: ("gpu:rx6900xt:1", "idle")}
    assert N1 not in drained(host), drained(host)
    env = job_env(host, "-w", N1, "--gres=gpu:mi300x:9")
    assert len(env["ROCR_VISIBLE_DEVICES"].split(",")) == 9, env
    # The second run changes nothing, and leaves the node IDLE: nothing waits for Slurm, so its plays have no host.
    again = change_profile()
    assert again.rc == 0 and again.changed(N1) == 0 and list(again.recap) == [N1], again
    assert gres_seen(host)[N1] == ("gpu:mi300x:64", "idle")
