"""Root reads with bounds (issue 38, "Root reads without bounds"): a tool's output is cut WHILE it is read, a tool's
whole process group is stopped at its time limit, a process a tool left holding its output cannot hang the run, and
node files are read to a byte cap. Real processes and real files, no mocks."""

import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time

import pytest

from ansible_collections.gpulab.rocm.plugins.module_utils.host import node_state as ns
from ansible_collections.gpulab.rocm.plugins.module_utils.node import health, health_run
from ansible_collections.gpulab.rocm.plugins.module_utils.parsers import _facts_common as common, gpu_tools

TIMEOUT = shutil.which("timeout")
SETSID = shutil.which("setsid")
ENDLESS = [sys.executable, "-c", "import sys\nwhile True: sys.stdout.write('x' * 65536)"]
EIGHT_MB = [sys.executable, "-c", "import sys; sys.stdout.write('y' * (8 << 20)); sys.stderr.write('done')"]
# Slack for a loaded test machine on top of the bounds being tested (never near the 30 s the held pipe would take).
SLACK = 4


def alive(pid):
    """Whether pid is a live process (a zombie waiting for its reaper counts as dead)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open("/proc/%d/stat" % pid) as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def gone(pid, seconds=3):
    """pid is dead within seconds (its new parent, init, reaps it)."""
    deadline = time.monotonic() + seconds
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def holder(tmp_path, extra=""):
    """A tool that starts `sleep 30` holding its stdout, writes the sleep's pid to a file, prints hi and exits."""
    pidfile = tmp_path / "child.pid"
    argv = ["sh", "-c", "%ssleep 30 & echo $! > %s; echo hi" % (extra, pidfile)]
    return argv, pidfile


# --- the output is bounded while it is read -----------------------------------------------------------------------

def test_a_tool_printing_without_end_is_cut_at_the_limit_and_stopped():
    started = time.monotonic()
    result = common.process_run(ENDLESS, limit=1 << 20)
    assert time.monotonic() - started < common.KILL_AFTER + SLACK
    rc, stdout, stderr = result
    assert len(stdout) == 1 << 20 and set(stdout) == {"x"}
    assert result.stopped == "output_cut" and result.cut["stdout"] > 1 << 20
    assert result.message == ("%s -c import sys\nwhile True: sys.stdout.write('x' * 65536) printed more than 1048576 "
                              "bytes on its stdout and was stopped: the output was cut at 1048576 bytes"
                              % sys.executable)
    assert stderr.endswith(result.message + "\n") and rc != 0


def test_yes_at_the_default_limit_keeps_the_readers_memory_bounded(tmp_path):
    # In a child of its own, so that its peak resident memory is this run's alone: `yes` prints some GiB a second;
    # the old reader kept all of it until the module ran out of memory.
    script = textwrap.dedent("""
        import json, resource, sys
        from ansible_collections.gpulab.rocm.plugins.module_utils.parsers import _facts_common as common
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        result = common.process_run(["yes"])
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(json.dumps({"grew_kib": after - before, "kept": len(result[1]), "stopped": result.stopped,
                          "cut": result.cut}))
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=60,
                         check=True).stdout
    figures = json.loads(out)
    assert figures["kept"] == common.MAX_OUTPUT_BYTES and figures["stopped"] == "output_cut"
    assert figures["cut"]["stdout"] > common.MAX_OUTPUT_BYTES
    # The kept 16 MiB, its text and the join's copy: some 50 MiB at most, never the GiBs `yes` printed.
    assert figures["grew_kib"] < 4 * common.MAX_OUTPUT_BYTES // 1024


def test_an_8mb_output_is_read_whole_within_the_bound():
    result = common.process_run(EIGHT_MB)
    assert (result[0], len(result[1]), result[2], result.stopped, result.cut) == (0, 8 << 20, "done", None, {})
    assert health_run.run_tool(EIGHT_MB, 30)[1] == "y" * (8 << 20)


def test_a_facts_tool_printing_without_end_is_unreadable_and_named(tmp_path):
    tool = tmp_path / "rocm-smi"
    tool.write_text("#!/bin/sh\nexec yes '{\"card0\": {}}'\n")
    tool.chmod(0o755)
    run = common.timed_run(common.process_run, TIMEOUT, seconds=30)
    with pytest.raises(common.ToolOutputCut) as cut:
        run([str(tool), "--json"])
    assert str(cut.value) == ("%s --json printed more than 16777216 bytes on its stdout and was stopped: the output "
                              "was cut at 16777216 bytes" % tool)
    tools = gpu_tools.read_all(run, lambda name: str(tool) if name == "rocm-smi" else None)
    assert tools["rocm_smi"]["error_kind"] == "unreadable"
    assert tools["rocm_smi"]["error"] == (
        "%s --showid --showproductname printed more than 16777216 bytes on its stdout and was stopped: the output "
        "was cut at 16777216 bytes: its output was not read; run it by hand to see what it prints" % tool)


def test_the_health_check_fails_closed_on_an_amd_smi_that_prints_without_end(tmp_path):
    tool = tmp_path / "amd-smi"
    tool.write_text("#!/bin/sh\nexec yes\n")
    tool.chmod(0o755)
    result = health_run.amd_smi_result(str(tool), ["metric", "--json"], 30)
    assert result == {"status": "fail", "argv": ["amd-smi", "metric", "--json"],
                      "message": "amd-smi metric --json printed more than 16777216 bytes on its stdout and was "
                                 "stopped: the output was cut at 16777216 bytes"}
    with pytest.raises(health_run.OutputTooLarge):
        health_run.run_tool([str(tool)], 30)


# --- a process the tool started cannot hold the run -------------------------------------------------------------

# The tests of a held output wait out real bounds (timeouts of 1 and 2 s, process_run's LINGER and KILL_AFTER's
# grace: 5 s each, what they prove): their six runs start side by side in threads when the first of those tests needs
# one, each timed and checked on its own, and each test asserts on its own runs. Each tool leads a process group of
# its own and the pipes are not inherited (close_fds), so no run reaches or holds another.

def run_held_at_a_timeout(tmp_path):
    argv, pidfile = holder(tmp_path)
    started = time.monotonic()
    result = common.process_run(argv, timeout=2)
    return argv, result, time.monotonic() - started, gone(int(pidfile.read_text()))


def run_held_without_a_timeout(tmp_path):
    argv, pidfile = holder(tmp_path)
    started = time.monotonic()
    result = common.process_run(argv)
    return result, time.monotonic() - started, gone(int(pidfile.read_text()))


def run_held_under_coreutils_timeout(tmp_path):
    argv, pidfile = holder(tmp_path)
    run = common.timed_run(common.process_run, TIMEOUT, seconds=60)
    started = time.monotonic()
    with pytest.raises(common.ToolHeldOpen) as held:
        run(argv)
    return held.value, time.monotonic() - started, gone(int(pidfile.read_text()))


def read_all_held_under_coreutils_timeout(tmp_path):
    argv, pidfile = holder(tmp_path)
    run = common.timed_run(common.process_run, TIMEOUT, seconds=60)
    tools = gpu_tools.read_all(lambda argv_: run(argv), lambda name: "/bin/sh" if name == "rocminfo" else None)
    return tools, gone(int(pidfile.read_text()))


def run_held_by_the_health_tool_runner(tmp_path):
    argv, pidfile = holder(tmp_path)
    started = time.monotonic()
    with pytest.raises(health_run.Timeout):
        health_run.run_tool(argv, 2)
    return time.monotonic() - started, gone(int(pidfile.read_text()))


def run_left_the_group(tmp_path):
    # setsid: out of the tool's process group, so out of reach of its kill
    argv, pidfile = holder(tmp_path, extra="%s " % SETSID)
    started = time.monotonic()
    try:
        result = common.process_run(argv, timeout=1)
        return result, time.monotonic() - started
    finally:
        for _attempt in range(40):  # the escaped sleep is this run's to end
            if pidfile.exists() and pidfile.read_text().strip():
                break
            time.sleep(0.05)
        try:
            os.kill(int(pidfile.read_text()), 9)
        except (OSError, ValueError):
            pass


@pytest.fixture(scope="module")
def held_runs(tmp_path_factory):
    """{name: a Future of the run's outcome} of the runs above (a run's failure is raised by its result())."""
    jobs = {"at_a_timeout": run_held_at_a_timeout, "without_a_timeout": run_held_without_a_timeout,
            "by_the_health_tool_runner": run_held_by_the_health_tool_runner}
    if TIMEOUT is not None:
        jobs.update(under_coreutils_timeout=run_held_under_coreutils_timeout,
                    read_all_under_coreutils_timeout=read_all_held_under_coreutils_timeout)
    if SETSID is not None:
        jobs["left_the_group"] = run_left_the_group
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        yield dict((name, pool.submit(job, tmp_path_factory.mktemp(name))) for name, job in jobs.items())


def test_a_child_holding_stdout_is_killed_at_the_timeout(held_runs):
    argv, result, took, killed = held_runs["at_a_timeout"].result()
    assert 2 <= took < 2 + common.KILL_AFTER + common.DRAIN + SLACK
    assert tuple(result) == (124, "hi\n", "%s did not finish within 2 s and was stopped\n" % " ".join(argv[:3]))
    assert result.stopped == "timeout"
    assert killed


def test_a_child_holding_stdout_is_killed_once_the_tool_exited_without_a_timeout(held_runs):
    # No time limit given (slurm_maintenance's calls): the run waits LINGER seconds after the tool exited, not 30.
    result, took, killed = held_runs["without_a_timeout"].result()
    assert took < common.LINGER + common.DRAIN + SLACK
    assert (result[0], result[1], result.stopped) == (0, "hi\n", "held_open")
    assert "kept its output open 5 s later and was killed with its process group" in result[2]
    assert killed


@pytest.mark.skipif(TIMEOUT is None, reason="coreutils timeout is not installed")
def test_under_coreutils_timeout_the_held_pipe_is_named_and_killed(held_runs):
    # coreutils' timeout exits when the tool exits, and did not kill the sleep: the old reader waited 30 s for EOF.
    held, took, killed = held_runs["under_coreutils_timeout"].result()
    assert took < common.LINGER + common.DRAIN + SLACK
    assert str(held).startswith("sh -c sleep 30 & echo $! > ")
    assert killed
    tools, killed = held_runs["read_all_under_coreutils_timeout"].result()
    assert tools["rocminfo"]["error_kind"] == "timeout"
    assert "kept its output open" in tools["rocminfo"]["error"]
    assert killed


def test_the_health_tool_runner_kills_a_child_holding_stdout(held_runs):
    took, killed = held_runs["by_the_health_tool_runner"].result()
    assert took < 2 + common.KILL_AFTER + common.DRAIN + SLACK
    assert killed


def test_a_tool_ignoring_sigterm_gets_sigkill_after_the_grace(tmp_path):
    pidfile = tmp_path / "tool.pid"
    proc = subprocess.Popen(["sh", "-c", "trap '' TERM; echo $$ > %s; sleep 30; echo late" % pidfile],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **common.NEW_GROUP)
    started = time.monotonic()
    out, _err, stopped, cut = common.read_bounded(proc, timeout=0.5, grace=0.5)
    assert time.monotonic() - started < 1 + common.DRAIN + SLACK
    assert (out, stopped, cut, proc.returncode) == (b"", "timeout", {}, -9)
    assert gone(int(pidfile.read_text()))


def test_a_child_that_left_the_group_cannot_hold_the_run(held_runs):
    # The escaped sleep holds the pipe out of reach of the group's kill: the run closes the pipe after the drain
    # instead of waiting for an EOF that would come 30 s later.
    if SETSID is None:
        pytest.skip("util-linux setsid is not installed")
    result, took = held_runs["left_the_group"].result()
    assert took < 1 + common.KILL_AFTER + common.DRAIN + SLACK
    assert (result[0], result[1], result.stopped) == (124, "hi\n", "timeout")


def test_a_tool_that_ends_normally_is_read_as_before(tmp_path):
    result = common.process_run(["sh", "-c", "echo out; echo err >&2; exit 3"], timeout=30)
    assert tuple(result) == (3, "out\n", "err\n") and result.stopped is None and result.message is None


# --- node files are read to a byte cap, never through a link ------------------------------------------------------

def test_the_health_data_reader_refuses_a_fifo_and_a_link_to_dev_zero_without_blocking(tmp_path):
    fifo = tmp_path / "health.json"
    os.mkfifo(str(fifo))
    started = time.monotonic()
    with pytest.raises(health.DataError, match="is not a regular file: not read"):
        health_run.read_json(str(fifo))  # the old open() waited for a writer for ever
    link = tmp_path / "aer.json"
    link.symlink_to("/dev/zero")
    with pytest.raises(health.DataError, match="cannot open"):
        health_run.read_json(str(link))
    assert time.monotonic() - started < SLACK
    big = tmp_path / "big.json"
    big.write_bytes(b" " * (health_run.MAX_DATA_BYTES + 1))
    with pytest.raises(health.DataError, match="larger than 1048576 bytes"):
        health_run.read_json(str(big))


def test_the_probe_reader_refuses_a_fifo_and_a_link_to_dev_zero(tmp_path):
    fifo = tmp_path / "rocm.list"
    os.mkfifo(str(fifo))
    link = tmp_path / "rocm.sh"
    link.symlink_to("/dev/zero")
    assert ns.read_text(str(fifo)) is None and ns.read_text(str(link)) is None
    assert ns.describe_file(str(link))["type"] == "symlink"


def test_package_lists_are_searched_in_pieces_with_a_name_across_two(tmp_path):
    lists = tmp_path / "var/lib/apt/lists"
    lists.mkdir(parents=True)
    # "Package: rocm-hip-sdk" straddles the first 1 MiB piece's end; another name sits well after it.
    head = b"Package: filler\nDescription: " + b"z" * ((1 << 20) - 40) + b"\n"
    text = head + b"Package: rocm-hip-sdk\nVersion: 1\n\n" + b"x" * (3 << 20) + b"\nPackage: amd-smi-lib\n"
    assert text.index(b"Package: rocm-hip-sdk") < 1 << 20 < text.index(b"Package: rocm-hip-sdk") + 21
    (lists / "repo.radeon.com_rocm_apt_6.4_dists_noble_main_binary-amd64_Packages").write_bytes(text)
    assert ns.listed_packages(str(tmp_path), ["rocm-hip-sdk", "amd-smi-lib", "rocm-dev"]) == {
        "rocm-hip-sdk", "amd-smi-lib"}


def test_the_pci_reader_is_bounded_and_never_blocks_on_a_fifo(tmp_path):
    # The health check and the probe read sysfs and /proc/1/environ under a root the data file or the module names.
    from ansible_collections.gpulab.rocm.plugins.module_utils.parsers import pci
    fifo, zero, big, small = tmp_path / 'fifo', tmp_path / 'zero', tmp_path / 'big', tmp_path / 'small'
    os.mkfifo(str(fifo))
    zero.symlink_to('/dev/zero')
    big.write_bytes(b'x' * (pci.MAX_READ_BYTES + 1))
    small.write_text('0x1002\n')
    started = time.monotonic()
    assert pci._read(str(fifo)) is None and pci._read_bytes(str(fifo)) == b''  # not a regular file
    assert pci._read(str(zero)) is None and pci._read(str(big)) is None
    assert time.monotonic() - started < 5
    assert pci._read(str(small)) == '0x1002' and pci._read_int(str(small)) == 0x1002
