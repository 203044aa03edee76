"""apt_keyring run by ansible itself against a key file: trusted key written once, untrusted key never written."""

import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

GPG = shutil.which("gpg")
# The ansible next to this Python (the project's .venv) when it is not on PATH, so `make test` runs these too.
ANSIBLE = shutil.which("ansible") or shutil.which("ansible", path=os.path.dirname(sys.executable))
COLLECTIONS = Path(__file__).resolve().parents[7]
pytestmark = pytest.mark.skipif(GPG is None or ANSIBLE is None, reason="needs gpg and ansible")


def run_module(args, check=False):
    cmd = [ANSIBLE, "localhost", "-c", "local", "-m", "gpulab.rocm.apt_keyring", "-a", json.dumps(args), "--diff"]
    if check:
        cmd.append("--check")
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(COLLECTIONS), ANSIBLE_LOAD_CALLBACK_PLUGINS="1",
               ANSIBLE_STDOUT_CALLBACK="ansible.posix.json", ANSIBLE_LOCALHOST_WARNING="0")
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=180, check=False).stdout
    return json.loads(out)["plays"][0]["tasks"][0]["hosts"]["localhost"]


@pytest.fixture(scope="module")
def key(tmp_path_factory):
    home = tmp_path_factory.mktemp("gnupg")
    os.chmod(home, 0o700)
    base = [GPG, "--homedir", str(home), "--batch"]
    subprocess.run(base + ["--passphrase", "", "--quick-gen-key", "Mirror <m@example.invalid>", "rsa2048", "sign",
                           "never"], check=True, capture_output=True)
    listing = subprocess.run(base + ["--with-colons", "--fingerprint"], check=True, capture_output=True, text=True)
    fpr = [ln.split(":")[9] for ln in listing.stdout.splitlines() if ln.startswith("fpr:")][0]
    path = home / "key.asc"
    path.write_bytes(subprocess.run(base + ["--armor", "--export", fpr], check=True, capture_output=True).stdout)
    binary = subprocess.run(base + ["--export", fpr], check=True, capture_output=True).stdout
    return path, fpr, binary


def test_trusted_key_is_written_dearmored_once(key, tmp_path):
    path, fpr, binary = key
    dest = tmp_path / "keyrings" / "rocm.gpg"
    args = {"url": path.as_uri(), "dest": str(dest), "fingerprints": [fpr]}
    check = run_module(args, check=True)
    assert check["changed"] and not dest.exists()
    first = run_module(args)
    assert first["changed"] and first["fingerprints"] == [fpr]
    assert dest.read_bytes() == binary
    assert oct(dest.stat().st_mode & 0o777) == "0o644"
    assert run_module(args)["changed"] is False


def test_untrusted_key_writes_nothing_and_says_why(key, tmp_path):
    path, fpr, _binary = key
    dest = tmp_path / "rocm.gpg"
    result = run_module({"url": path.as_uri(), "dest": str(dest),
                         "fingerprints": ["CA8BB4727A47B4D09B4EE8969386B48A1A693C5C"]})
    assert result["failed"]
    assert fpr in result["msg"] and "Nothing was changed" in result["msg"]
    assert not dest.exists()


def test_unreachable_key_url(tmp_path):
    result = run_module({"url": "http://127.0.0.1:9/rocm.gpg.key", "dest": str(tmp_path / "k.gpg"),
                         "fingerprints": ["CA8BB4727A47B4D09B4EE8969386B48A1A693C5C"], "timeout": 5})
    assert result["failed"] and "Could not download the signing key" in result["msg"]


def test_absent_removes_the_keyring(key, tmp_path):
    dest = tmp_path / "rocm.gpg"
    dest.write_bytes(key[2])
    assert run_module({"dest": str(dest), "state": "absent"})["changed"]
    assert not dest.exists()


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


@pytest.mark.parametrize("name", ["secret-appended.asc", "secret-appended.gpg"])
def test_a_secret_key_behind_the_trusted_key_is_refused(attack, tmp_path, name):
    home, fprs, _vendor_key = attack
    dest = tmp_path / "rocm.gpg"
    result = run_module({"url": (home / name).as_uri(), "dest": str(dest), "fingerprints": [fprs["vendor"]]})
    assert result.get("failed"), result
    assert "Nothing was changed" in result["msg"]
    assert ("Secret-Key" in result["msg"] or "PRIVATE KEY BLOCK" in result["msg"]), result["msg"]
    assert not dest.exists()


def test_an_armored_key_with_a_comment_header_is_written(attack, tmp_path):
    home, fprs, binary = attack
    dest = tmp_path / "rocm.gpg"
    result = run_module({"url": (home / "commented.asc").as_uri(), "dest": str(dest),
                         "fingerprints": [fprs["vendor"]]})
    assert result.get("changed") and result["fingerprints"] == [fprs["vendor"]], result
    assert dest.read_bytes() == binary


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


@pytest.mark.parametrize("path, max_size, words", [
    ("/endless.key", 65536, ["Refused to download", "over the limit of 65536 bytes (max_size)"]),
    ("/endless.key", None, ["Refused to download", "over the limit of 1048576 bytes (max_size)"]),
    ("/announced.key", None, ["announces 10737418240 bytes"]),
    ("/error.key", None, ["Could not download the signing key", "HTTP Error 500"]),
])
def test_an_endless_download_is_cut_at_the_limit(endless_server, tmp_path, path, max_size, words):
    dest = tmp_path / "rocm.gpg"
    url = "http://127.0.0.1:%d%s" % (endless_server.server_address[1], path)
    args = {"url": url, "dest": str(dest), "fingerprints": ["CA8BB4727A47B4D09B4EE8969386B48A1A693C5C"],
            "timeout": 10}
    if max_size is not None:
        args["max_size"] = max_size
    result = run_module(args)
    assert result.get("failed"), result
    for word in words:
        assert word in result["msg"], result["msg"]
    assert "Nothing was changed" in result["msg"] and url in result["msg"]
    assert not dest.exists()
    # What the server could push before the module hung up: the limit plus the sockets' buffers, far from the cap.
    assert endless_server.sent < 48 * 1024 * 1024, endless_server.sent


def test_a_big_file_url_is_refused_at_the_limit(tmp_path):
    big = tmp_path / "big.key"
    with open(big, "wb") as handle:
        handle.truncate(64 * 1024 * 1024)  # sparse: 64 MiB of zeros without using the disk
    dest = tmp_path / "rocm.gpg"
    result = run_module({"url": big.as_uri(), "dest": str(dest),
                         "fingerprints": ["CA8BB4727A47B4D09B4EE8969386B48A1A693C5C"]})
    assert result.get("failed") and "over the limit of 1048576 bytes" in result["msg"], result
    assert not dest.exists()


def test_max_size_default_is_documented_as_the_helper_limit():
    import yaml
    from ansible_collections.gpulab.rocm.plugins.module_utils.download import DEFAULT_LIMIT
    from ansible_collections.gpulab.rocm.plugins.modules import apt_keyring
    doc = yaml.safe_load(apt_keyring.DOCUMENTATION)
    assert doc["options"]["max_size"]["default"] == DEFAULT_LIMIT == 1024 * 1024


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
    from ansible_collections.gpulab.rocm.plugins.module_utils.download import bounded_download
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
    from ansible_collections.gpulab.rocm.plugins.module_utils.download import bounded_download
    with pytest.raises(Failed, match=r"Could not download the signing key from http://127.0.0.1:9/k: .*Nothing was "
                                     r"changed"):
        bounded_download(StubModule(), "http://127.0.0.1:9/k", limit=10, timeout=5)
