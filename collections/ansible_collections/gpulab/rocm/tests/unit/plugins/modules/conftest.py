"""What the module tests share: a signing key made by real gpg for the run."""

import os
import shutil
import subprocess

import pytest

GPG = shutil.which("gpg")


@pytest.fixture(scope="module")
def key(tmp_path_factory):
    """(armored key file, its fingerprint, the binary key): a key as a mirror serves it."""
    if GPG is None:
        pytest.skip("needs gpg")
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
