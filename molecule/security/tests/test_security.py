"""Root never turned against the node by a lab user (issue 15): real site.yml runs around the traps prepare.yml
set, each checked on the host afterwards."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "lifecycle", "tests"))
import gpulab_runs as runs  # noqa: E402  (the lifecycle scenario's helper)

NODE = "molecule-security-bookworm"
testinfra_hosts = [NODE]


def env_run(extra=None):
    return runs.playbook("site.yml", NODE, extra, tags="env")


def test_root_never_follows_a_users_link(host):
    # Item 2: the old role appended its block to /etc/shadow through alice's link, and made the target 0644.
    run = env_run()
    assert run.rc == 0 and run.changed(NODE) == 0, run
    assert "/home/alice/.bashrc of user alice is a symlink: not changed" in " ".join(run.output.split()), run
    assert host.check_output("sha256sum -c /root/shadow.sha256").endswith("OK")
    assert host.file("/etc/shadow").mode == 0o640
    assert host.run("pwck -r -q").rc == 0
    assert host.file("/home/alice/.bashrc").linked_to == "/etc/shadow"


def test_a_private_bashrc_stays_private(host):
    # Item 2: the old role forced mode 0644 on the user's file.
    bashrc = host.file("/home/carol/.bashrc")
    assert (bashrc.user, bashrc.mode) == ("carol", 0o600)
    assert "# BEGIN gpulab.rocm environment" in bashrc.content_string
    assert host.check_output("su - carol -c 'echo $ROCM_PATH'") == "/opt/rocm"


def test_markers_out_of_order_lose_no_line(host):
    # Item 3: the old role deleted the lines between a stray END and the last BEGIN, and said changed=false.
    run = env_run()
    assert run.rc == 0, run
    assert "markers out of order" in " ".join(run.output.split()), run
    assert host.check_output("sha256sum -c /root/bob-bashrc.sha256").endswith("OK")


def test_a_squatted_miopen_folder_is_not_used(host):
    # Item 4: mallory makes alice's folder in the shared MIOpen folder before alice's first login.
    folder = host.file("/scratch/miopen")
    assert (folder.user, folder.mode) == ("root", 0o1777)
    host.check_output("runuser -u mallory -- mkdir -m 0777 /scratch/miopen/alice")
    assert host.check_output("su - alice -c 'echo ${MIOPEN_USER_DB_PATH-unset}'") == "unset"
    # Carol's own login makes her folder, private; $USER from the environment changes nothing.
    assert host.check_output("su - carol -c 'echo $MIOPEN_USER_DB_PATH'") == "/scratch/miopen/carol/db"
    own = host.file("/scratch/miopen/carol")
    assert (own.user, own.mode) == ("carol", 0o700)
    spoofed = host.check_output("su - carol -c 'env USER=alice bash -lc \"echo \\$MIOPEN_USER_DB_PATH\"'")
    assert spoofed == "/scratch/miopen/carol/db"


def test_root_does_not_take_over_a_users_folder(host):
    # Item 4: a folder a user made, given as the shared MIOpen folder, is refused before any change.
    before = runs.snapshot(host)
    run = env_run({"rocm_env_miopen_dir": "/scratch/mallory"})
    assert run.rc != 0 and run.changed(NODE) == 0, run
    assert "rocm_env_miopen_dir /scratch/mallory is a directory of uid" in " ".join(run.output.split()), run
    assert runs.differences(before, runs.snapshot(host)) == []
    assert host.file("/scratch/mallory").user == "mallory"
