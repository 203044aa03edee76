"""Root never turned against the node by a lab user (issue 15): real site.yml runs around the traps prepare.yml
set, each checked on the host afterwards."""


from gpulab_test_helpers import gpulab_runs as runs

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


# --- issue 20: a GPU user, a flashed card or a wedged GPU against a run as root ------------------------------------

def words(run):
    return " ".join(run.output.split())


def test_hostile_bashrc_files_are_notices_not_failures(host):
    # Item 1: dave's 64 GiB sparse ~/.bashrc was read whole by the probe (OOM, "Module result deserialization
    # failed"). Item 2: erin's link to '/tmp/\xff' made ansible-core refuse the probe's reply (made here, not in
    # prepare.yml: the snapshot of the other tests reads link targets as text). Item 5: frank's block with END on
    # its last line got a second block appended, keeping the old HSA_OVERRIDE_GFX_VERSION.
    host.check_output("cp -p /home/erin/.bashrc /root/erin.bashrc && runuser -u erin -- python3 -c "
                      "\"import os; os.remove('/home/erin/.bashrc'); os.symlink(b'/tmp/\\xff', b'/home/erin/.bashrc')\"")
    try:
        run = env_run()
    finally:
        host.check_output("rm /home/erin/.bashrc && mv /root/erin.bashrc /home/erin/.bashrc")
    assert run.rc == 0 and run.changed(NODE) == 0, run
    text = words(run)
    assert "/home/dave/.bashrc is larger than 4 MiB, more than the probe reads: not changed" in text, run
    assert "/home/erin/.bashrc of user erin is a symlink: not changed" in text, run
    assert "replaced by U+FFFD in gpulab_node.users.erin.bashrc.target" in text, run
    assert "/home/frank/.bashrc has gpulab.rocm marker lines on line(s) [4]" in text, run
    assert host.file("/home/dave/.bashrc").size == 64 << 30
    frank = host.file("/home/frank/.bashrc").content_string
    assert frank.count("# BEGIN gpulab.rocm environment") == 1 and frank.endswith("# END gpulab.rocm environment")


def test_a_trailing_newline_in_a_value_is_refused(host):
    # Item 6: "/opt/rocm\n" (a YAML | block) passed, and /etc/profile.d/rocm.sh broke every login shell.
    profile = host.check_output("sha256sum /etc/profile.d/rocm.sh")
    run = env_run({"rocm_env_rocm_path": "/opt/rocm\n"})
    assert run.rc != 0 and run.changed(NODE) == 0, run
    # Refused by the role's schema (every string one line: module_utils/planning/role_spec.py) before rocm_env plans.
    assert "rocm_env_rocm_path holds a line break" in words(run), run
    assert host.check_output("sha256sum /etc/profile.d/rocm.sh") == profile
    assert host.check_output("su - carol -c 'echo ok'") == "ok"


def test_a_wedged_gpu_tool_is_a_problem_of_the_host_not_a_hang(host):
    # Item 4: rocminfo of a wedged GPU never returns; `--tags repo` hung until killed, leaving the tool behind.
    tool = host.check_output("readlink -f /opt/rocm/bin/rocminfo")
    host.check_output("mv %s %s.real && printf '#!/bin/sh\\nexec sleep 600\\n' > %s && chmod 0755 %s"
                      % (tool, tool, tool, tool))
    try:
        run = runs.playbook("site.yml", NODE, {"rocm_preflight_tool_timeout": 2}, tags="repo")
    finally:
        host.check_output("mv %s.real %s" % (tool, tool))
    assert run.rc != 0 and run.changed(NODE) == 0, run
    assert "rocminfo did not finish within 2 s and was stopped: the GPU or its driver may be wedged" in words(run), run
    assert host.run("pgrep -f '[s]leep 600'").rc == 1  # the tool was stopped, not left behind


def test_a_driver_install_whose_run_was_killed_is_marked_next_time(host):
    # Item 8: killed between installing amdgpu-dkms and writing its reboot marker, the host was never marked (or
    # rebooted) again. The converge installed the driver and marked it (a container is never rebooted); take away
    # what the killed run never wrote.
    assert host.package("amdgpu-dkms").is_installed and host.file("/run/reboot-required").exists
    host.check_output("rm -f /run/reboot-required /var/lib/gpulab-rocm/driver-reboot")
    run = runs.playbook("site.yml", NODE, tags="driver")
    assert run.rc == 0 and run.changed(NODE) > 0, run
    assert "needs a reboot, not done here: the host is a container" in words(run), run
    assert host.file("/run/reboot-required").exists and host.file("/var/lib/gpulab-rocm/driver-reboot").exists
    again = runs.playbook("site.yml", NODE, tags="driver")
    assert again.rc == 0 and again.changed(NODE) == 0, again


def test_validation_refuses_a_folder_others_may_rename_in(host):
    # Item 9: in a 2770 lab-group scratch folder a group member could rename root's private folder away and put their
    # own gpu_bench.py in its place; root ran it and its forged report passed.
    run = runs.playbook("playbooks/validate.yml", NODE, {"rocm_validate_hosts": NODE,
                                                         "rocm_validate_remote_dir": "/scratch/lab"})
    assert run.rc != 0, run
    assert "rocm_validate_remote_dir /scratch/lab has mode 2770: its group may rename the private folder" in words(run)
    assert host.check_output("ls -A /scratch/lab") == ""
