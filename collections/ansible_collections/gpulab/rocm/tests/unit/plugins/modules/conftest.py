"""What the module tests share: signing keys made by real gpg for the run."""

import os
import shutil
import subprocess

import pytest

GPG = shutil.which("gpg")


def generate_keys(home, names):
    """{name: (armored key file, fingerprint, binary key)}: a signing key per name, made by gpg in home."""
    os.chmod(home, 0o700)
    base = [GPG, "--homedir", str(home), "--batch", "--passphrase", ""]
    keys = {}
    for name in names:
        subprocess.run(base + ["--quick-gen-key", "%s <%s@example.invalid>" % (name, name.lower()), "rsa2048", "sign",
                               "never"], check=True, capture_output=True)
        listing = subprocess.run(base + ["--with-colons", "--fingerprint", name], check=True, capture_output=True,
                                 text=True).stdout
        fpr = [ln.split(":")[9] for ln in listing.splitlines() if ln.startswith("fpr:")][0]
        path = home / ("%s.asc" % name)
        path.write_bytes(subprocess.run(base + ["--armor", "--export", fpr], check=True, capture_output=True).stdout)
        keys[name] = (path, fpr, subprocess.run(base + ["--export", fpr], check=True, capture_output=True).stdout)
    return keys


@pytest.fixture(scope="module")
def key(tmp_path_factory):
    """(armored key file, its fingerprint, the binary key): a key as a mirror serves it."""
    if GPG is None:
        pytest.skip("needs gpg")
    return generate_keys(tmp_path_factory.mktemp("gnupg"), ["Mirror"])["Mirror"]


@pytest.fixture(scope="module")
def two_keys(tmp_path_factory):
    """{name: (armored key file, fingerprint, binary key)} for a 'core' and a 'legacy' signing key."""
    if GPG is None:
        pytest.skip("needs gpg")
    return generate_keys(tmp_path_factory.mktemp("gnupg-two"), ["core", "legacy"])
