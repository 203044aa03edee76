"""apt_keyring, deprecated (meta/runtime.yml; the roles use apt_source, whose tests hold the key checks): until its
removal it still writes a trusted key once and never an untrusted one, and says it is deprecated."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ansible_collections.gpulab.rocm.plugins.modules import apt_keyring
from ansible_collections.gpulab.rocm.tests.unit.gpu_facts_helpers import run_main

GPG = shutil.which("gpg")
# The ansible next to this Python (the project's .venv) when it is not on PATH, so `make test` runs these too.
ANSIBLE = shutil.which("ansible") or shutil.which("ansible", path=os.path.dirname(sys.executable))
COLLECTIONS = Path(__file__).resolve().parents[7]
pytestmark = pytest.mark.skipif(GPG is None or ANSIBLE is None, reason="needs gpg and ansible")


def run_module(args, check=False):
    """apt_keyring's main() in-process, with diff (its deprecation is checked through ansible itself, below)."""
    return run_main(apt_keyring.main, args, check_mode=check, diff=True)


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


def test_it_says_it_is_deprecated(key, tmp_path):
    path, fpr, _binary = key
    cmd = [ANSIBLE, "localhost", "-c", "local", "-m", "gpulab.rocm.apt_keyring", "-a",
           json.dumps({"url": path.as_uri(), "dest": str(tmp_path / "k.gpg"), "fingerprints": [fpr]}), "--check"]
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(COLLECTIONS), ANSIBLE_LOCALHOST_WARNING="0",
               ANSIBLE_DEPRECATION_WARNINGS="1", ANSIBLE_NOCOLOR="1")
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=180, check=False)
    assert "gpulab.rocm.apt_keyring has been deprecated" in " ".join((proc.stdout + proc.stderr).split())
    assert "will be removed from collection 'gpulab.rocm' version 1.0.0" in " ".join((proc.stdout + proc.stderr).split())
