"""GPU containers on the converged test container: Podman started with the CDI spec the role wrote shows exactly the
FIXTURE GPUs' device nodes, a listed user starts it rootless, and the provisioning playbook (tag containers) writes
nothing in check mode, rewrites the spec when the GPU count changes, changes nothing when run again, and skips a
host with no AMD GPU. The tests run in file order; each leaves the host converged with both fixture GPUs."""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "lifecycle", "tests"))

from gpulab_runs import differences, playbook, snapshot  # noqa: E402 (after the helpers' folder is on the path)

HOST = "molecule-containers-trixie"
SPEC = "/etc/cdi/amd.json"
IMAGE = "localhost/gpulab-rocm-gpu-check:1"
# Lists what a container shows of the GPU devices, one path a line.
LIST = "for f in /dev/kfd /dev/dri/*; do [ -e \"$f\" ] && echo \"$f\"; done"
GPU0 = ["/dev/dri/card1", "/dev/dri/renderD128"]  # KFD node 1, the RX 6900 XT
GPU1 = ["/dev/dri/card2", "/dev/dri/renderD129"]  # KFD node 2, the RX 6600


def seen(host, device, user=None):
    """The GPU device paths a container started with --device DEVICE shows (as root, or as user, rootless)."""
    run = (f"podman run --rm --pull=never --network=none --device {device}"
           f"{' --group-add keep-groups' if user else ''} {IMAGE} /bin/busybox sh -c '{LIST}'")
    if user:
        run = "su - %s -c %s" % (user, "'" + run.replace("'", "'\\''") + "'")
    result = host.run(run)
    assert result.rc == 0, result.stderr
    return sorted(result.stdout.split())


def changes(before, after):
    """What changed between two snapshots, but for the engines' own storage, where the check's containers come and go
    (root's /var/lib/containers, the check user's ~/.local/share/containers) and where a read-only query may rewrite
    a database file."""
    storage = ("/var/lib/containers/", "/.local/share/containers/", "/.config/containers/")
    return [line for line in differences(before, after) if not any(part in line for part in storage)]


def spec(host):
    return json.loads(host.file(SPEC).content_string)


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
    assert seen(host, "amd.com/gpu=all") == ["/dev/kfd"] + GPU0 + GPU1


def test_one_index_shows_only_that_gpu(host):
    assert seen(host, "amd.com/gpu=1") == ["/dev/kfd"] + GPU1
    assert seen(host, "amd.com/gpu=0") == ["/dev/kfd"] + GPU0


def test_the_containers_get_the_groups_and_the_override(host):
    out = host.check_output(f"podman run --rm --pull=never --network=none --device amd.com/gpu=1 {IMAGE} "
                            "/bin/busybox sh -c 'id -G; echo $HSA_OVERRIDE_GFX_VERSION_2'").split("\n")
    render = host.check_output("getent group render | cut -d: -f3")
    assert render in out[0].split() and out[1] == "10.3.0"


def test_a_listed_user_starts_it_rootless(host):
    # alice is among rocm_gpu_users; rootless Podman, her own storage, her own groups passed in.
    assert host.check_output("id -u alice") != "0"
    # Her subordinate ids (given by the role where useradd gave none) let rootless Podman map an image's owners.
    assert host.check_output("grep -c '^alice:' /etc/subuid") == "1"
    assert host.check_output("grep -c '^alice:' /etc/subgid") == "1"
    assert seen(host, "amd.com/gpu=all", user="alice") == ["/dev/kfd"] + GPU0 + GPU1
    assert seen(host, "amd.com/gpu=1", user="alice") == ["/dev/kfd"] + GPU1


def test_changing_the_gpu_count_rewrites_the_spec(host):
    before = host.file(SPEC).content_string
    # The FIXTURE tree without the RX 6600 (its PCI function and its KFD node).
    host.check_output("python3 -c %s" % _quote(
        "import json; s = json.load(open('/srv/sysfs.json'));"
        "s['functions'] = [f for f in s['functions'] if f['path'][-1] != '0000:0b:00.0'];"
        "s['kfd_nodes'] = [n for n in s['kfd_nodes'] if n['node'] != 2];"
        "json.dump(s, open('/srv/sysfs-one.json', 'w'))"))
    host.check_output("python3 /srv/sysfs_tree.py /srv/sysfs-one.json /srv/gpulab-sysfs-one")
    run = playbook("playbooks/provision.yml", HOST, tags="containers",
                   extra_vars={"rocm_preflight_sysfs_root": "/srv/gpulab-sysfs-one"})
    assert run.rc == 0, run
    assert "Write the CDI spec" in run.changed_tasks(), run
    assert "the GPUs or their settings changed" in run.output
    written = spec(host)
    assert [device["name"] for device in written["devices"]] == ["0", "all"]
    assert "env" not in written["containerEdits"]  # the one GPU left runs natively
    assert seen(host, "amd.com/gpu=all") == ["/dev/kfd"] + GPU0
    assert host.run(f"podman run --rm --pull=never --network=none --device amd.com/gpu=1 {IMAGE} true").rc != 0

    # Check mode on a host without the spec: it says what it would write, and writes nothing.
    host.check_output(f"rm {SPEC}")
    state = snapshot(host)
    run = playbook("playbooks/provision.yml", HOST, tags="containers", check=True)
    assert run.rc == 0, run
    assert "Write the CDI spec" in run.changed_tasks(), run
    assert not host.file(SPEC).exists
    assert changes(state, snapshot(host)) == []

    # Back to both GPUs: the spec is written as the converge wrote it.
    run = playbook("playbooks/provision.yml", HOST, tags="containers")
    assert run.rc == 0, run
    assert host.file(SPEC).content_string == before


def test_the_provisioning_playbook_changes_nothing_on_a_converged_host(host):
    state = snapshot(host)
    run = playbook("playbooks/provision.yml", HOST, tags="containers")
    assert run.rc == 0 and run.changed(HOST) == 0, run
    # The check ran (it runs on every converge), and found the GPUs.
    assert "3 container(s) saw exactly their GPUs" in run.output, run  # all, 0 and 1
    assert changes(state, snapshot(host)) == []


def test_a_host_with_no_amd_gpu_is_skipped_and_unchanged(host):
    state = snapshot(host)
    run = playbook("playbooks/provision.yml", HOST, tags="containers",
                   extra_vars={"rocm_preflight_sysfs_root": "/srv/gpulab-sysfs-none"})
    assert run.rc == 0 and run.changed(HOST) == 0, run
    assert "no AMD GPU on this host: rocm_containers changes nothing here" in run.output, run
    assert changes(state, snapshot(host)) == []


def _quote(text):
    return "'" + text.replace("'", "'\\''") + "'"
