"""apt_source, the module rocm_repo runs, against real key files made by gpg and real HTTP servers on 127.0.0.1: the
key is checked (fingerprints, nothing but public keys) and downloaded within its limit before anything is written.
Run in check mode, so that nothing on this machine changes: the key checks come before any write in both modes
(the writes themselves are the faults and lifecycle scenarios'). Also its pure helpers and module_utils/apt/download.py,
which it downloads with."""

import http.server
import os
import shutil
import subprocess
import threading

import pytest

from ansible_collections.gpulab.rocm.plugins.modules import apt_source
from ansible_collections.gpulab.rocm.tests.unit.gpu_facts_helpers import ANSIBLE, run_main, run_through_ansible

GPG = shutil.which("gpg")
needs_tools = pytest.mark.skipif(GPG is None or ANSIBLE is None, reason="needs gpg and ansible")
AMD = "CA8BB4727A47B4D09B4EE8969386B48A1A693C5C"


def run_module(args):
    """apt_source's main() in-process, in check mode with diff, with the keyring in a test folder and no sources."""
    return run_main(apt_source.main, dict({"refresh": "never"}, **args), check_mode=True, diff=True)


@needs_tools
def test_a_trusted_key_would_be_installed_and_nothing_is_written_in_check_mode(key, tmp_path):
    path, fpr, _binary = key
    keyring = tmp_path / "rocm.gpg"
    args = {"refresh": "never", "key_url": path.as_uri(), "keyring": str(keyring), "fingerprints": [fpr]}
    result = run_through_ansible("gpulab.rocm.apt_source", args)
    assert result["changed"] and result["fingerprints"] == [fpr] and result["changed_files"] == [str(keyring)]
    assert not keyring.exists()


@needs_tools
def test_a_keyring_that_holds_the_trusted_key_is_not_downloaded_again(key, tmp_path):
    _path, fpr, binary = key
    keyring = tmp_path / "rocm.gpg"
    keyring.write_bytes(binary)
    keyring.chmod(0o644)
    # The key URL answers nobody: the keyring on disk is checked, not the URL.
    result = run_module({"key_url": "http://127.0.0.1:9/k", "keyring": str(keyring), "fingerprints": [fpr]})
    assert result["changed"] is False and result["changed_files"] == [], result


@needs_tools
def test_an_untrusted_key_is_refused_naming_its_fingerprint(key, tmp_path):
    path, fpr, _binary = key
    result = run_module({"key_url": path.as_uri(), "keyring": str(tmp_path / "rocm.gpg"), "fingerprints": [AMD]})
    assert result["failed"] and fpr in result["msg"] and "Nothing was changed" in result["msg"], result


@needs_tools
def test_an_unreachable_key_url_is_named(tmp_path):
    result = run_module({"key_url": "http://127.0.0.1:9/rocm.gpg.key", "keyring": str(tmp_path / "k.gpg"),
                         "fingerprints": [AMD], "timeout": 5})
    assert result["failed"] and "Could not download the signing key from http://127.0.0.1:9/rocm.gpg.key" in \
        result["msg"]


@needs_tools
def test_a_file_outside_apt_s_folders_is_refused(tmp_path):
    result = run_module({"key_url": "http://127.0.0.1:9/k", "keyring": str(tmp_path / "k.gpg"), "fingerprints": [AMD],
                         "files": {"/etc/cron.d/rocm": "x"}})
    assert result["failed"] and "/etc/cron.d/rocm is not an apt sources or preferences file" in result["msg"]


# ---------------------------------------------------------------------------------------------------------------
# Issue 15, items 5-7: a secret key appended to the trusted one, armor headers, an endless download.

@pytest.fixture(scope="module")
def attack(tmp_path_factory):
    """The trusted key and an attacker's key, made by real gpg; key files as a mirror could serve them."""
    home = tmp_path_factory.mktemp("gnupg-attack")
    os.chmod(home, 0o700)
    base = [GPG, "--homedir", str(home), "--batch", "--pinentry-mode", "loopback", "--passphrase", ""]

    def gpg(*args):
        return subprocess.run(base + list(args), check=True, capture_output=True).stdout

    fprs = {}
    for name in ("vendor", "attacker"):
        gpg("--quick-gen-key", "%s <%s@example.invalid>" % (name, name), "rsa2048", "sign", "never")
        listing = gpg("--with-colons", "--fingerprint", name).decode()
        fprs[name] = [ln.split(":")[9] for ln in listing.splitlines() if ln.startswith("fpr:")][0]
    files = {
        # The bypass of item 5: the vendor's public key, then the attacker's secret key, both armored.
        "secret-appended.asc": gpg("--armor", "--export", fprs["vendor"])
        + gpg("--armor", "--export-secret-keys", fprs["attacker"]),
        # The same in binary form, one file of packets.
        "secret-appended.gpg": gpg("--export", fprs["vendor"]) + gpg("--export-secret-keys", fprs["attacker"]),
        # Item 6: armor headers after the BEGIN line.
        "commented.asc": gpg("--armor", "--comment", "Vendor signing key", "--export", fprs["vendor"]),
    }
    for name, content in files.items():
        (home / name).write_bytes(content)
    return home, fprs, gpg("--export", fprs["vendor"])


@needs_tools
@pytest.mark.parametrize("name", ["secret-appended.asc", "secret-appended.gpg"])
def test_a_secret_key_behind_the_trusted_key_is_refused(attack, tmp_path, name):
    home, fprs, _vendor_key = attack
    dest = tmp_path / "rocm.gpg"
    result = run_module({"key_url": (home / name).as_uri(), "keyring": str(dest), "fingerprints": [fprs["vendor"]]})
    assert result.get("failed"), result
    assert "Nothing was changed" in result["msg"]
    assert ("Secret-Key" in result["msg"] or "PRIVATE KEY BLOCK" in result["msg"]), result["msg"]
    assert not dest.exists()


@needs_tools
def test_an_armored_key_with_a_comment_header_is_accepted(attack, tmp_path):
    home, fprs, binary = attack
    dest = tmp_path / "rocm.gpg"
    result = run_module({"key_url": (home / "commented.asc").as_uri(), "keyring": str(dest),
                         "fingerprints": [fprs["vendor"]]})
    assert result.get("changed") and result["fingerprints"] == [fprs["vendor"]], result
    # What would be written is the dearmored key alone (the check on disk accepts exactly those bytes).
    assert apt_source.key_is_trusted(binary, [fprs["vendor"]])


class EndlessHandler(http.server.BaseHTTPRequestHandler):
    """Answers every GET with an endless body (capped, so a client without a limit fails instead of eating the
    test machine's memory). The path picks the status and whether a Content-Length is announced."""

    CAP = 256 * 1024 * 1024

    def do_GET(self):  # noqa: N802 (http.server's name)
        status = 500 if "error" in self.path else 200
        self.send_response(status)
        self.send_header("Content-Type", "application/pgp-keys")
        if "announced" in self.path:
            self.send_header("Content-Length", str(10 * 1024 ** 3))
        self.end_headers()
        chunk = b"-----BEGIN PGP PUBLIC KEY BLOCK-----\n" + b"A" * 65500
        try:
            while self.server.sent < self.CAP:
                self.wfile.write(chunk)
                self.server.sent += len(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def log_message(self, *args):
        pass


@pytest.fixture
def endless_server():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), EndlessHandler)
    server.sent = 0
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@needs_tools
@pytest.mark.parametrize("path, max_size, words", [
    ("/endless.key", 65536, ["Refused to download", "over the limit of 65536 bytes (key_max_bytes)"]),
    ("/endless.key", None, ["Refused to download", "over the limit of 1048576 bytes (key_max_bytes)"]),
    ("/announced.key", None, ["announces 10737418240 bytes"]),
    ("/error.key", None, ["Could not download the signing key", "HTTP Error 500"]),
])
def test_an_endless_download_is_cut_at_the_limit(endless_server, tmp_path, path, max_size, words):
    dest = tmp_path / "rocm.gpg"
    url = "http://127.0.0.1:%d%s" % (endless_server.server_address[1], path)
    args = {"key_url": url, "keyring": str(dest), "fingerprints": [AMD], "timeout": 10}
    if max_size is not None:
        args["key_max_bytes"] = max_size
    result = run_module(args)
    assert result.get("failed"), result
    for word in words:
        assert word in result["msg"], result["msg"]
    assert "Nothing was changed" in result["msg"] and url in result["msg"]
    assert not dest.exists()
    # What the server could push before the module hung up: the limit plus the sockets' buffers, far from the cap.
    assert endless_server.sent < 48 * 1024 * 1024, endless_server.sent


@needs_tools
def test_a_big_file_url_is_refused_at_the_limit(tmp_path):
    big = tmp_path / "big.key"
    with open(big, "wb") as handle:
        handle.truncate(64 * 1024 * 1024)  # sparse: 64 MiB of zeros without using the disk
    dest = tmp_path / "rocm.gpg"
    result = run_module({"key_url": big.as_uri(), "keyring": str(dest), "fingerprints": [AMD]})
    assert result.get("failed") and "over the limit of 1048576 bytes" in result["msg"], result
    assert not dest.exists()


def test_key_max_bytes_default_is_the_download_helper_s_limit():
    import yaml
    from ansible_collections.gpulab.rocm.plugins.module_utils.apt.download import DEFAULT_LIMIT
    doc = yaml.safe_load(apt_source.DOCUMENTATION)
    assert doc["options"]["key_max_bytes"]["default"] == DEFAULT_LIMIT == 1024 * 1024


@pytest.mark.parametrize("line, failure", [
    ("E: Failed to fetch http://127.0.0.1:1/rocm/apt/6.2.3/dists/noble/InRelease  404  Not Found", True),
    ("Err:1 http://127.0.0.1:1/rocm/apt/6.2.3 noble InRelease", True),
    ("W: GPG error: http://127.0.0.1:1/rocm/apt/6.2.4 noble InRelease: NO_PUBKEY AC380D72117113E2", True),
    ("W: Download is performed unsandboxed as root as file '/var/lib/apt/lists/partial/x' couldn't be accessed", False),
    ("Hit:1 http://127.0.0.1:1/rocm/apt/6.2.4 noble InRelease", False),
])
def test_which_lines_of_apt_get_update_are_failures(line, failure):
    # apt-get update may exit 0 although a source was not refreshed: these lines say so.
    assert apt_source.failure_line(line) is failure


def test_apt_s_own_line_names_the_failure():
    output = "Hit:1 a\nErr:2 http://x/rocm noble InRelease\nE: Failed to fetch http://x/rocm/InRelease 503\n"
    assert apt_source.apt_line(output) == "E: Failed to fetch http://x/rocm/InRelease 503"
    assert apt_source.apt_line("Err:2 http://x noble\n") == "Err:2 http://x noble"
    assert apt_source.apt_line("") == "no message"


def test_a_keyring_is_trusted_only_when_it_is_exactly_the_trusted_keys(key):
    _path, fpr, binary = key
    assert apt_source.key_is_trusted(binary, [fpr])
    assert not apt_source.key_is_trusted(binary, [AMD])
    assert not apt_source.key_is_trusted(binary + b"junk", [fpr])
    assert not apt_source.key_is_trusted(b"", [fpr])


class Failed(Exception):
    pass


class StubModule:
    """What bounded_download uses of an AnsibleModule: params and fail_json."""

    params = {"validate_certs": True}

    def fail_json(self, **kwargs):
        raise Failed(kwargs)


class SizedHandler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (http.server's name)
        size = int(self.path.strip("/"))
        self.send_response(200)
        self.send_header("Content-Length", str(size))
        self.end_headers()
        self.wfile.write(b"k" * size)

    def log_message(self, *args):
        pass


@pytest.mark.parametrize("size, limit, ok", [(0, 10, True), (10, 10, True), (11, 10, False), (300000, 299999, False),
                                             (300000, 300000, True)])
def test_bounded_download_takes_up_to_the_limit_and_no_more(size, limit, ok):
    from ansible_collections.gpulab.rocm.plugins.module_utils.apt.download import bounded_download
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), SizedHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = "http://127.0.0.1:%d/%d" % (server.server_address[1], size)
    try:
        if ok:
            assert bounded_download(StubModule(), url, limit=limit, timeout=5) == b"k" * size
        else:
            with pytest.raises(Failed, match="over the limit of %d bytes" % limit) as err:
                bounded_download(StubModule(), url, limit=limit, timeout=5, what="the index", limit_option="max")
            assert err.value.args[0]["url"] == url and "Refused to download the index" in err.value.args[0]["msg"]
    finally:
        server.shutdown()
        server.server_close()


def test_bounded_download_names_the_url_when_nobody_answers():
    from ansible_collections.gpulab.rocm.plugins.module_utils.apt.download import bounded_download
    with pytest.raises(Failed, match=r"Could not download the signing key from http://127.0.0.1:9/k: .*Nothing was "
                                     r"changed"):
        bounded_download(StubModule(), "http://127.0.0.1:9/k", limit=10, timeout=5)


# ---------------------------------------------------------------------------------------------------------------
# Issue 38: apt is never left broken. The sources check runs the real apt-cache of this machine (Debian 12, apt 2.6)
# over a private copy of a host's sources (tests point HOST_SOURCES_* at a folder of their own); the writes of the
# module are recorded, never made.

APT_CACHE = shutil.which("apt-cache")
needs_apt = pytest.mark.skipif(APT_CACHE is None or GPG is None, reason="needs apt-cache and gpg")
FIXTURES = os.path.join(os.path.dirname(__file__), "..", "module_utils", "fixtures", "apt")
LAB_LIST = "deb [signed-by=/usr/share/keyrings/lab-rocm.gpg] http://127.0.0.1:9/rocm/apt/6.2.4 jammy main\n"
ROCM_LIST = "deb [arch=amd64 signed-by=/etc/apt/keyrings/rocm.gpg] http://127.0.0.1:9/rocm/apt/6.2.4 jammy main\n"
ROCM = "/etc/apt/sources.list.d/rocm.list"


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


def recorded_host(tmp_path, monkeypatch):
    """(etc, writes): a host's apt folder with no sources of its own, and every write of the module recorded
    instead of made."""
    etc = tmp_path / "etc-apt"
    (etc / "sources.list.d").mkdir(parents=True)
    (etc / "sources.list").write_text("")
    monkeypatch.setattr(apt_source, "HOST_SOURCES_LIST", str(etc / "sources.list"))
    monkeypatch.setattr(apt_source, "HOST_SOURCES_D", str(etc / "sources.list.d") + "/")
    writes = []
    monkeypatch.setattr(apt_source, "write", lambda path, content, mode=0o644: writes.append(("write", path)))
    monkeypatch.setattr(apt_source, "remove", lambda path: writes.append(("remove", path)))
    monkeypatch.setattr(apt_source.Journal, "save", lambda self, previous: writes.append(("journal", self.path)))
    return etc, writes


@pytest.fixture
def host(tmp_path, monkeypatch, key):
    """A host's apt sources in a folder (the lab's own list for AMD's repository), the trusted keyring in place,
    and every write of the module recorded instead of made."""
    etc, writes = recorded_host(tmp_path, monkeypatch)
    (etc / "sources.list.d" / "lab-rocm.list").write_text(LAB_LIST)
    _path, fpr, binary = key
    keyring = tmp_path / "rocm.gpg"
    keyring.write_bytes(binary)
    keyring.chmod(0o644)
    args = {"key_url": "http://127.0.0.1:9/k", "keyring": str(keyring), "fingerprints": [fpr], "files": {ROCM: ROCM_LIST}}
    return {"etc": etc, "writes": writes, "args": args}


@needs_apt
@pytest.mark.parametrize("check_mode", [False, True])
def test_a_release_change_conflicting_with_a_lab_list_is_refused_before_any_change(host, check_mode):
    result = run_main(apt_source.main, host["args"], check_mode=check_mode)
    assert result["failed"], result
    msg = result["msg"]
    # apt's own line, from this machine's apt, and both files, told apart.
    assert ("E: Conflicting values set for option Signed-By regarding source http://127.0.0.1:9/rocm/apt/6.2.4/ "
            "jammy: /usr/share/keyrings/lab-rocm.gpg != /etc/apt/keyrings/rocm.gpg") in msg
    assert "/etc/apt/sources.list.d/lab-rocm.list (already on the host)" in msg
    assert "/etc/apt/sources.list.d/rocm.list (this run would write it)" in msg
    assert "Nothing was changed" in msg and result["files"] == ["/etc/apt/sources.list.d/lab-rocm.list"]
    assert result["conflicts"][0]["files"] == ["/etc/apt/sources.list.d/lab-rocm.list", ROCM]
    assert host["writes"] == []
    # apt works afterwards: it reads the host's sources as they are (the lab list alone).
    assert (host["etc"] / "sources.list.d" / "lab-rocm.list").read_text() == LAB_LIST
    ok, output = apt_source.apt_reads(StubApt(), apt_source.host_sources())
    assert ok, output


@needs_apt
def test_sources_apt_reads_together_go_on_to_be_written(host):
    # The same repository with the lab's keyring is no conflict: the check passes, and the module goes on.
    args = dict(host["args"], files={ROCM: LAB_LIST.replace("deb [", "deb [arch=amd64 ")}, refresh="never")
    result = run_main(apt_source.main, args, check_mode=True)
    assert not result.get("failed") and result["changed_files"] == [ROCM], result
    assert host["writes"] == []


@needs_apt
def test_sources_apt_already_refuses_are_not_blamed_on_the_change(host):
    # Two lists of the lab's conflict already; the new rocm.list is another repository.
    (host["etc"] / "sources.list.d" / "old-rocm.list").write_text(ROCM_LIST)
    args = dict(host["args"], files={ROCM: ROCM_LIST.replace("6.2.4", "6.3")})
    result = run_main(apt_source.main, args)
    assert result["failed"] and "apt cannot read the host's apt sources already, before this run" in result["msg"]
    assert "/etc/apt/sources.list.d/lab-rocm.list (already on the host), " \
           "/etc/apt/sources.list.d/old-rocm.list (already on the host)" in result["msg"]
    assert "Nothing was changed" in result["msg"] and host["writes"] == []


class StubApt:
    """What refresh, apt_reads and restored_state use of an AnsibleModule; run_command answers from `answers`
    (argv[0:2] -> list of (rc, stdout, stderr), consumed in order) or runs the real command for apt-cache."""

    def __init__(self, answers=None, lock_timeout=60):
        self.params = {"lock_timeout": lock_timeout, "update_retries": 3}
        self.answers = answers or {}
        self.calls = []

    def run_command(self, argv, environ_update=None):
        self.calls.append(argv)
        key = " ".join(argv[:2])
        if self.answers.get(key):
            return self.answers[key].pop(0)
        completed = subprocess.run(argv, capture_output=True, text=True, env=dict(os.environ, **environ_update),
                                   check=False)
        return completed.returncode, completed.stdout, completed.stderr


def captured(name):
    """(rc, stdout, stderr) of a fixture file of this folder's rc / --- stderr / --- stdout form."""
    text = fixture(name)
    rc = int(text.split("\n", 1)[0].split("=", 1)[1])
    stderr = text.split("--- stderr\n", 1)[1].split("--- stdout\n", 1)[0]
    return rc, text.split("--- stdout\n", 1)[1], stderr


def test_the_refresh_waits_for_the_lists_lock_apt_get_update_does_not_wait_for(monkeypatch, tmp_path):
    monkeypatch.setattr(apt_source.time, "sleep", lambda seconds: None)
    source = tmp_path / "rocm.list"
    source.write_text(ROCM_LIST)
    locked = captured("apt-get-update-lists-lock-held-lock-timeout-5.txt")
    module = StubApt({"apt-get update": [locked, locked, locked, locked, (0, "Hit:1 x\n", "")]})
    ok, _output = apt_source.refresh(module, [str(source)])
    # Four lock failures waited for, more than update_retries (3): a held lock is not a failed attempt.
    assert ok and len(module.calls) == 5
    # With no time left the lock is the answer, named as the lists lock.
    module = StubApt({"apt-get update": [locked]}, lock_timeout=0)
    ok, output = apt_source.refresh(module, [str(source)])
    assert not ok and len(module.calls) == 1
    assert "held apt's lists lock (/tmp/W/apt/lists/lock, held by process 4242" in apt_source.classify(output)["reason"]


@needs_apt
def test_a_rollback_after_the_lists_lock_says_what_apt_shows_and_no_more(host):
    locked = captured("apt-get-update-lists-lock-held-lock-timeout-5.txt")
    output = locked[1] + "\n" + locked[2]
    # apt-cache policy over this machine's real sources answers whether apt reads them.
    works, state = apt_source.restored_state(StubApt(), output, [ROCM])
    assert works and state.startswith(apt_source.RESTORED_OK)
    assert "apt-get update never took apt's lists lock (/tmp/W/apt/lists/lock, held by process 4242 (python3))" in state
    assert "broken before" not in state and "dpkg lock" not in state


def test_a_rollback_never_claims_apt_works_when_apt_cannot_read_its_sources(host):
    conflict = captured("apt-cache-policy-conflicting-signed-by.txt")
    module = StubApt({"apt-cache policy": [conflict]})
    works, state = apt_source.restored_state(module, "E: Failed to fetch x 503", [ROCM])
    assert not works and "apt is not working on this host" in state and "apt works" not in state


def test_a_rollback_whose_restored_sources_fail_to_refresh_blames_nothing_it_did_not_see(host, tmp_path, monkeypatch):
    monkeypatch.setattr(apt_source.time, "sleep", lambda seconds: None)
    failing = captured("apt-get-update-503.txt")
    works, state = apt_source.restored_state(StubApt({"apt-cache policy": [(0, "Package files:\n", "")]}),
                                             "E: Failed to fetch x 503", [])
    assert works and "as it was before this run" in state
    source = tmp_path / "rocm.list"
    source.write_text(ROCM_LIST)
    monkeypatch.setattr(apt_source, "sources_of", lambda paths: [str(source)])
    module = StubApt({"apt-cache policy": [(0, "Package files:\n", "")], "apt-get update": [failing] * 3})
    works, state = apt_source.restored_state(module, "E: Failed to fetch x 503", [ROCM])
    assert works and "refreshing the restored sources' lists failed too: A package or index file could not" in state
    assert "broken before" not in state and "as before" not in state


# ---------------------------------------------------------------------------------------------------------------
# Two keys in one transaction: the ROCm Core SDK's (its deb822 .sources) beside the legacy one (the driver's
# amdgpu.list), each checked by fingerprint before anything is written. Real keys made by gpg for the run; the
# module's writes are recorded, never made.

CORE_SOURCES = "/etc/apt/sources.list.d/amdrocm-stable.sources"
AMDGPU = "/etc/apt/sources.list.d/amdgpu.list"


@pytest.fixture
def empty_host(tmp_path, monkeypatch):
    """A host with no other sources, and every write of the module recorded instead of made."""
    _etc, writes = recorded_host(tmp_path, monkeypatch)
    monkeypatch.setattr(apt_source.Journal, "clear", lambda self: None)
    return writes


def core_files(core_keyring, legacy_keyring):
    return {CORE_SOURCES: "# Managed by gpulab.rocm (role rocm_repo): ROCm Core SDK 10.1.0.\n"
                          "X-Repo-Id: amdrocm-stable\nTypes: deb\nURIs: http://127.0.0.1:9/core/debian12/\n"
                          "Suites: stable\nComponents: main\n"
                          "Architectures: amd64\nSigned-By: %s\nEnabled: yes\n" % core_keyring,
            AMDGPU: "deb [arch=amd64 signed-by=%s] http://127.0.0.1:9/amdgpu/31.50/ubuntu jammy main\n"
                    % legacy_keyring}


def key_entry(keys, name, keyring, **over):
    path, fpr, _binary = keys[name]
    return dict({"keyring": str(keyring), "key_url": path.as_uri(), "fingerprints": [fpr]}, **over)


@needs_apt
def test_two_keys_are_installed_with_the_core_sources_in_one_transaction(two_keys, empty_host, tmp_path):
    core, legacy = tmp_path / "amdrocm.gpg", tmp_path / "rocm.gpg"
    args = {"keys": [key_entry(two_keys, "core", core), key_entry(two_keys, "legacy", legacy)],
            "files": core_files(core, legacy), "refresh": "never"}
    result = run_main(apt_source.main, args)
    assert not result.get("failed"), result
    # apt read the deb822 file, our header comment included, with the host's sources before anything was written.
    assert result["changed_files"] == sorted([str(core), str(legacy), CORE_SOURCES, AMDGPU])
    assert result["keyrings"] == {str(core): [two_keys["core"][1]], str(legacy): [two_keys["legacy"][1]]}
    assert result["fingerprints"] == [two_keys["core"][1], two_keys["legacy"][1]]
    assert empty_host[0] == ("journal", apt_source.Journal().path)
    assert sorted(path for kind, path in empty_host[1:]) == result["changed_files"]


@needs_tools
def test_a_second_untrusted_key_stops_the_run_before_the_first_is_written(two_keys, empty_host, tmp_path):
    core, legacy = tmp_path / "amdrocm.gpg", tmp_path / "rocm.gpg"
    wrong = key_entry(two_keys, "legacy", legacy, fingerprints=[two_keys["core"][1]])
    result = run_main(apt_source.main, {"keys": [key_entry(two_keys, "core", core), wrong],
                                        "files": core_files(core, legacy), "refresh": "never"})
    assert result["failed"] and two_keys["legacy"][1] in result["msg"] and "Nothing was changed" in result["msg"]
    assert empty_host == []


@needs_tools
def test_a_trusted_keyring_on_disk_is_kept_beside_a_key_to_download(two_keys, tmp_path):
    core, legacy = tmp_path / "amdrocm.gpg", tmp_path / "rocm.gpg"
    legacy.write_bytes(two_keys["legacy"][2])
    legacy.chmod(0o644)
    unreachable = key_entry(two_keys, "legacy", legacy, key_url="http://127.0.0.1:9/k")
    result = run_module({"keys": [key_entry(two_keys, "core", core), unreachable]})
    assert result["changed"] and result["changed_files"] == [str(core)], result
    assert result["keyrings"] == {str(core): [two_keys["core"][1]]}


@needs_tools
def test_a_keyring_no_source_uses_goes_in_the_same_transaction(two_keys, tmp_path):
    # Core -> legacy: the Core keyring goes while the legacy key is installed.
    core, legacy = tmp_path / "amdrocm.gpg", tmp_path / "rocm.gpg"
    core.write_bytes(two_keys["core"][2])
    result = run_module({"keys": [key_entry(two_keys, "legacy", legacy), {"keyring": str(core), "state": "absent"}]})
    assert result["changed_files"] == sorted([str(core), str(legacy)]), result
    diff = dict((item["before_header"], item) for item in result["diff"])
    assert diff[str(core)]["before"] == "fingerprints: %s\n" % two_keys["core"][1]
    assert diff[str(core)]["after"] == "(absent)\n"
    assert core.exists() and not legacy.exists()  # check mode


@needs_tools
def test_absent_removes_every_keyring_it_is_given(two_keys, tmp_path):
    core, legacy = tmp_path / "amdrocm.gpg", tmp_path / "rocm.gpg"
    core.write_bytes(two_keys["core"][2])
    legacy.write_bytes(two_keys["legacy"][2])
    result = run_module({"state": "absent", "keys": [{"keyring": str(legacy)}, {"keyring": str(core)}]})
    assert result["changed"] and result["changed_files"] == sorted([str(core), str(legacy)]), result
    # Sources whose keyrings are gone already: nothing but the files to remove.
    result = run_module({"state": "absent", "remove": [AMDGPU]})
    assert not result.get("failed") and result["changed"] is False, result


@pytest.mark.parametrize("args, message", [
    ({"keys": [{"keyring": "/k.gpg"}]}, "The keyring /k.gpg needs key_url and fingerprints"),
    ({"keys": [{"keyring": "k.gpg", "state": "absent"}]}, "keyring must be an absolute path, got k.gpg"),
    ({"keyring": "/k.gpg", "key_url": "http://127.0.0.1:9/k", "fingerprints": [AMD], "keys": [
        {"keyring": "/k.gpg", "state": "absent"}]}, "The keyring /k.gpg is given twice"),
    ({"files": {}}, "Give the keyring the sources name"),
])
def test_keys_that_cannot_be_checked_are_refused_before_anything(args, message):
    result = run_module(args)
    assert result["failed"] and message in result["msg"] and "Nothing was changed" in result["msg"], result


def test_the_refresh_covers_the_lists_of_the_core_sources(tmp_path):
    # apt reads *.sources as deb822 and *.list as one-line sources: the private folder keeps each name's ending.
    seen = []

    class Recorder(StubApt):
        def run_command(self, argv, environ_update=None):
            parts = [arg.split("=", 1)[1] for arg in argv if arg.startswith("Dir::Etc::SourceParts=")][0]
            seen.append(sorted(os.listdir(parts)))
            return 0, "Hit:1 x\n", ""

    sources = []
    for name, text in ((CORE_SOURCES, core_files("/k1", "/k2")[CORE_SOURCES]), (AMDGPU, ROCM_LIST)):
        sources.append(tmp_path / os.path.basename(name))
        sources[-1].write_text(text)
    ok, _output = apt_source.refresh(Recorder(), [str(path) for path in sources])
    assert ok and seen == [["00-amdrocm-stable.sources", "01-amdgpu.list"]]


@needs_tools
def test_two_keys_through_ansible(two_keys, tmp_path):
    # The keys option as Ansible passes it (its suboptions checked by AnsiballZ's argument spec).
    core, legacy = tmp_path / "amdrocm.gpg", tmp_path / "rocm.gpg"
    args = {"refresh": "never", "keys": [key_entry(two_keys, "core", core), key_entry(two_keys, "legacy", legacy)]}
    result = run_through_ansible("gpulab.rocm.apt_source", args)
    assert result["changed"] and result["changed_files"] == sorted([str(core), str(legacy)]), result
    assert not core.exists() and not legacy.exists()
