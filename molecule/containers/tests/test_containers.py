"""GPU containers on the converged test container: Podman and Docker started with the CDI spec the role wrote show
exactly the FIXTURE GPUs' device nodes, listed users start them rootless, daemon.json keeps the lab's keys, Docker is
restarted only when no container runs, and the provisioning playbook (tag containers) writes nothing in check mode,
rewrites the spec when the GPUs change, leaves out a GPU not bound to amdgpu, changes nothing when run again, and
skips a host with no AMD GPU. The tests run in file order; each leaves the host converged with both fixture GPUs."""

import json

from gpulab_test_helpers.gpulab_runs import differences, playbook, snapshot

HOST = "molecule-containers-trixie"
SPEC = "/etc/cdi/amd.json"
DAEMON_JSON = "/etc/docker/daemon.json"
IMAGE = "localhost/gpulab-rocm-gpu-check:1"
# Lists what a container shows of the GPU devices, one path a line.
LIST = "for f in /dev/kfd /dev/dri/*; do [ -e \"$f\" ] && echo \"$f\"; done"
KFD = ["/dev/kfd"]
GPU0 = ["/dev/dri/card1", "/dev/dri/renderD128"]  # KFD node 1, the RX 6900 XT
GPU1 = ["/dev/dri/card2", "/dev/dri/renderD129"]  # KFD node 2, the RX 6600
WRITE_SPEC = "rocm_containers : Write the CDI spec"
CHECK_ROOT = "rocm_containers : Start GPU containers as root"


def seen(host, device, user=None, engine="podman"):
    """The GPU device paths a container started with --device DEVICE shows (as root, or as user with rootless
    Podman), sorted."""
    run = (f"{engine} run --rm --pull=never --network=none --device {device}"
           f"{' --group-add keep-groups' if user else ''} {IMAGE} /bin/busybox sh -c '{LIST}'")
    if user:
        run = "su - %s -c %s" % (user, _quote(run))
    result = host.run(run)
    assert result.rc == 0, result.stderr
    return sorted(result.stdout.split())


def changes(before, after):
    """What changed between two snapshots, but for the engines' own storage and log, where the check's containers
    come and go (root's /var/lib/containers and /var/lib/docker, containerd's, the check users'
    ~/.local/share/containers, dockerd's log) and where a read-only query may rewrite a database file."""
    storage = ("/var/lib/containers/", "/var/lib/docker/", "/var/lib/containerd/", "/.local/share/containers/",
               "/.config/containers/", "/var/log/docker.log")
    return [line for line in differences(before, after) if not any(part in line for part in storage)]


def spec(host):
    return json.loads(host.file(SPEC).content_string)


def text(run):
    """The run's output with its lines joined: the callback wraps long messages."""
    return " ".join(run.output.split())


def dockerd_pid(host):
    return host.check_output("cat /var/run/docker.pid")


def test_the_spec_lists_each_fixture_gpu_by_index_and_all(host):
    written = spec(host)
    assert written["cdiVersion"] == "0.7.0" and written["kind"] == "amd.com/gpu"
    assert [device["name"] for device in written["devices"]] == ["0", "1", "all"]
    gids = [int(host.check_output(f"getent group {name} | cut -d: -f3")) for name in ("video", "render")]
    assert written["containerEdits"]["additionalGids"] == sorted(gids)
    # The RX 6600 (KFD node 2) runs as gfx1030; the RX 6900 XT needs no override.
    assert written["containerEdits"]["env"] == ["HSA_OVERRIDE_GFX_VERSION_2=10.3.0"]
    assert host.file(SPEC).mode == 0o644 and host.file(SPEC).user == "root"


def test_all_shows_every_fixture_gpu_and_nothing_else(host):
    assert seen(host, "amd.com/gpu=all") == sorted(KFD + GPU0 + GPU1)


def test_one_index_shows_only_that_gpu(host):
    assert seen(host, "amd.com/gpu=1") == sorted(KFD + GPU1)
    assert seen(host, "amd.com/gpu=0") == sorted(KFD + GPU0)
    assert seen(host, "amd.com/gpu=0 --device amd.com/gpu=1") == sorted(KFD + GPU0 + GPU1)


def test_the_containers_get_the_groups_and_the_override(host):
    out = host.check_output(f"podman run --rm --pull=never --network=none --device amd.com/gpu=1 {IMAGE} "
                            "/bin/busybox sh -c 'id -G; echo $HSA_OVERRIDE_GFX_VERSION_2'").split("\n")
    video, render = (host.check_output(f"getent group {name} | cut -d: -f3") for name in ("video", "render"))
    assert {video, render} <= set(out[0].split()) and out[1] == "10.3.0"


def test_listed_users_start_it_rootless(host):
    # alice and bob are the stack-wide rocm_gpu_users; rootless Podman, their own storage, their own groups passed in.
    assert host.check_output("id -u alice") != "0"
    # alice kept the range useradd gave her; bob had none (prepare.yml took it away) and the role gave him the next
    # free one, in both files.
    assert host.check_output("grep '^alice:' /etc/subuid /etc/subgid").split() == [
        "/etc/subuid:alice:100000:65536", "/etc/subgid:alice:100000:65536"]
    assert host.check_output("grep '^bob:' /etc/subuid /etc/subgid").split() == [
        "/etc/subuid:bob:165536:65536", "/etc/subgid:bob:165536:65536"]
    assert seen(host, "amd.com/gpu=all", user="alice") == sorted(KFD + GPU0 + GPU1)
    assert seen(host, "amd.com/gpu=1", user="alice") == sorted(KFD + GPU1)
    # bob is not a check user: the role imported no image for him; he loads root's.
    host.check_output(f"podman save {IMAGE} | su - bob -c 'podman load'")
    assert seen(host, "amd.com/gpu=0", user="bob") == sorted(KFD + GPU0)


def test_daemon_json_keeps_the_labs_keys_and_docker_accepts_it(host):
    merged = json.loads(host.file(DAEMON_JSON).content_string)
    assert merged == {"storage-driver": "vfs", "iptables": False, "ip6tables": False, "bridge": "none",
                      "log-opts": {"max-size": "10m"}, "features": {"cdi": True}}
    assert host.file(DAEMON_JSON).mode == 0o600  # the lab's mode stays
    # dockerd itself reads the merged file as valid.
    assert "configuration OK" in host.check_output(f"dockerd --validate --config-file {DAEMON_JSON} 2>&1")
    # The test container has no init system: the role found dockerd stopped and started nothing.
    assert not host.file("/var/run/docker.pid").exists


def test_docker_started_with_that_setting_gives_exactly_the_gpus(host):
    # Started as at boot, by its init script (the test container has no systemd).
    host.check_output("service docker start")
    host.check_output("timeout 60 sh -c 'until docker version >/dev/null 2>&1; do sleep 1; done'")
    host.check_output(f"podman save --format docker-archive {IMAGE} | docker load")
    assert seen(host, "amd.com/gpu=all", engine="docker") == sorted(KFD + GPU0 + GPU1)
    assert seen(host, "amd.com/gpu=1", engine="docker") == sorted(KFD + GPU1)
    assert host.check_output(f"docker run --rm --network=none --device amd.com/gpu=1 {IMAGE} "
                             "/bin/busybox sh -c 'echo $HSA_OVERRIDE_GFX_VERSION_2'") == "10.3.0"
    host.check_output(f"docker rmi {IMAGE}")

    # Now the role checks Docker too: it imports its image (the one change) and starts the containers.
    run = playbook("playbooks/provision.yml", HOST, tags="containers")
    assert run.rc == 0 and run.changed_tasks() == [CHECK_ROOT], run
    assert "docker: 3 container(s) saw exactly their GPUs" in text(run), run
    assert "podman: 3 container(s) saw exactly their GPUs" in text(run), run


def test_docker_is_restarted_only_when_no_container_runs(host):
    pid = dockerd_pid(host)
    host.check_output(f"docker run -d --name gpulab-busy --network=none {IMAGE} /bin/busybox sleep 600")
    try:
        # A lab's edit drops the CDI setting (its other keys stay).
        host.check_output("python3 -c %s" % _quote(
            f"import json; p = '{DAEMON_JSON}'; d = json.load(open(p)); del d['features'];"
            "json.dump(d, open(p, 'w'), indent=2)"))
        run = playbook("playbooks/provision.yml", HOST, tags="containers")
        assert run.rc == 0, run
        assert "rocm_containers : Enable CDI in Docker's daemon.json" in run.changed_tasks(), run
        assert "rocm_containers : Restart Docker to read the CDI setting" not in run.changed_tasks(), run
        assert "1 container(s) are running, and a restart stops them" in text(run), run
        assert dockerd_pid(host) == pid and "running" in host.check_output("docker inspect -f '{{.State.Status}}' "
                                                                           "gpulab-busy")
        assert json.loads(host.file(DAEMON_JSON).content_string)["features"] == {"cdi": True}
    finally:
        host.check_output("docker rm -f gpulab-busy")

    # None runs now: the next run restarts it (the file is newer than the daemon), then checks Docker.
    run = playbook("playbooks/provision.yml", HOST, tags="containers")
    assert run.rc == 0 and run.changed_tasks() == ["rocm_containers : Restart Docker to read the CDI setting"], run
    assert "was changed after dockerd started" in text(run), run
    assert "docker: 3 container(s) saw exactly their GPUs" in text(run), run
    assert dockerd_pid(host) != pid


def test_changing_the_gpus_rewrites_the_spec(host):
    before = host.file(SPEC).content_string
    # The FIXTURE tree without the RX 6600 (its PCI function and its KFD node), and one where it is bound to
    # vfio-pci (passed to a virtual machine: the KFD has no node for it, and no DRM nodes are made).
    host.check_output("python3 -c %s" % _quote(
        "import json; s = json.load(open('/srv/sysfs.json'));"
        "rx6600 = [f for f in s['functions'] if f['path'][-1] == '0000:0b:00.0'][0];"
        "s['kfd_nodes'] = [n for n in s['kfd_nodes'] if n['node'] != 2];"
        "rx6600.update(driver='vfio-pci', drm=[]); json.dump(s, open('/srv/sysfs-vfio.json', 'w'));"
        "s['functions'].remove(rx6600); json.dump(s, open('/srv/sysfs-one.json', 'w'))"))
    for name in ("one", "vfio"):
        host.check_output(f"rm -rf /srv/gpulab-sysfs-{name}")
        host.check_output(f"python3 /srv/sysfs_tree.py /srv/sysfs-{name}.json /srv/gpulab-sysfs-{name}")
    try:
        run = playbook("playbooks/provision.yml", HOST, tags="containers",
                       extra_vars={"rocm_preflight_sysfs_root": "/srv/gpulab-sysfs-one"})
        assert run.rc == 0 and run.changed_tasks() == [WRITE_SPEC], run
        assert "the GPUs or their settings changed" in text(run)
        written = spec(host)
        assert [device["name"] for device in written["devices"]] == ["0", "all"]
        assert "env" not in written["containerEdits"]  # the one GPU left runs natively
        for engine in ("podman", "docker"):
            assert seen(host, "amd.com/gpu=all", engine=engine) == sorted(KFD + GPU0)
            assert host.run(f"{engine} run --rm --pull=never --network=none --device amd.com/gpu=1 {IMAGE} "
                            "true").rc != 0

        # The RX 6600 back on the bus but bound to vfio-pci: left out with a warning, the same one-GPU spec.
        one = host.file(SPEC).content_string
        run = playbook("playbooks/provision.yml", HOST, tags="containers",
                       extra_vars={"rocm_preflight_sysfs_root": "/srv/gpulab-sysfs-vfio"})
        assert run.rc == 0 and run.changed(HOST) == 0, run
        assert ("0000:0b:00.0 (AMD Radeon RX 6600 / 6600 XT) is not bound to amdgpu (driver: vfio-pci): left out "
                "of the CDI spec") in text(run), run
        assert host.file(SPEC).content_string == one

        # Check mode on a host without the spec: it says what it would write, and writes nothing.
        host.check_output(f"rm {SPEC}")
        state = snapshot(host)
        run = playbook("playbooks/provision.yml", HOST, tags="containers", check=True)
        assert run.rc == 0 and run.changed_tasks() == [WRITE_SPEC], run
        assert not host.file(SPEC).exists
        assert changes(state, snapshot(host)) == []
    finally:
        # Back to both GPUs: the spec is written as the converge wrote it.
        run = playbook("playbooks/provision.yml", HOST, tags="containers")
    assert run.rc == 0 and run.changed_tasks() == [WRITE_SPEC], run
    assert host.file(SPEC).content_string == before


def test_the_provisioning_playbook_changes_nothing_on_a_converged_host(host):
    state = snapshot(host)
    run = playbook("playbooks/provision.yml", HOST, tags="containers")
    assert run.rc == 0 and run.changed(HOST) == 0, run
    # The check ran (it runs on every converge) for both engines and both users, and found the GPUs.
    assert text(run).count("3 container(s) saw exactly their GPUs") == 3, run  # podman, docker; alice (all, 0, 1)
    assert changes(state, snapshot(host)) == []


def test_a_host_with_no_amd_gpu_is_skipped_and_unchanged(host):
    state = snapshot(host)
    run = playbook("playbooks/provision.yml", HOST, tags="containers",
                   extra_vars={"rocm_preflight_sysfs_root": "/srv/gpulab-sysfs-none"})
    assert run.rc == 0 and run.changed(HOST) == 0, run
    assert "no AMD GPU on this host: rocm_containers changes nothing here" in text(run), run
    assert changes(state, snapshot(host)) == []


def _quote(text):
    return "'" + text.replace("'", "'\\''") + "'"
