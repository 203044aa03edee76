"""The release build once per session, and the tarball installed into an empty collections path, used outside the
checkout: the working directory is a temp dir (no ansible.cfg of ours), no ANSIBLE_* variable of the caller, the
collections path is that temp path plus the `ansible` package's own collections, and the roles path is empty."""

import subprocess
import sys
from pathlib import Path

import pytest

from release_helpers import ROOT, VERSION, Outside


@pytest.fixture(scope="session")
def release(tmp_path_factory):
    """`make release` into a temp dir: (tarball, staged collection)."""
    base = tmp_path_factory.mktemp("release")
    result = subprocess.run([sys.executable, str(ROOT / "tests" / "tools" / "build_release.py"),
                             "--staging", str(base / "staging"), "--output", str(base / "dist")],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    tarball = Path(result.stdout.strip())
    assert tarball == base / "dist" / f"gpulab-rocm-{VERSION}.tar.gz" and tarball.is_file()
    return tarball, base / "staging" / "ansible_collections" / "gpulab" / "rocm"


@pytest.fixture(scope="session")
def outside(release, tmp_path_factory):
    """The tarball installed alone into an empty collections path."""
    tarball, _ = release
    user = Outside(tmp_path_factory.mktemp("outside"))
    assert not user.collections.exists()
    user.run("ansible-galaxy", "collection", "install", tarball, "-p", user.collections)
    return user
