# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""apt_errors.classify against what apt-get, dpkg and python3-apt really print (fixtures/apt, see SOURCES.md), and
against message lines written from apt's and dpkg's message catalogues where a failure cannot be produced here."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest
from hypothesis import given, strategies as st

from ansible_collections.gpulab.rocm.plugins.module_utils.apt import apt_errors
from ansible_collections.gpulab.rocm.plugins.module_utils.planning import rocm_packages

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "apt")


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


# (fixture, kind, words the reason must hold): the cause and the fix, and the detail that names what failed.
CAPTURED = [
    # Captured in this project's containers (the integration tests assert the same phrases).
    ("apt-get-install-lock-held.txt", "lock",
     ["held the dpkg lock (/var/lib/dpkg/lock-frontend, held by process 766 (python3))", "lock timeout"]),
    ("apt-get-install-no-space-on-opt.txt", "disk_full",
     ["No space left on device", "/opt", "next run finishes the interrupted install"]),
    ("apt-get-install-dpkg-killed.txt", "dpkg_interrupted",
     ["dpkg stopped in the middle of the install", "exited unexpectedly", "dpkg --configure -a"]),
    ("apt-get-install-404-rocblas-pool.txt", "download",
     ["could not be downloaded", "404", "rocblas", "nothing was installed", "mirror is up"]),
    # Captured by capture-apt-error-messages.sh.
    # The lists lock is not the dpkg lock (issue 38): the message names the one that was held.
    ("apt-get-update-lists-lock-held.txt", "lock",
     ["held apt's lists lock (/tmp/W/apt/lists/lock, held by process", "(python3)", "does not wait", "apt-daily"]),
    ("apt-get-update-lists-lock-held-lock-timeout-5.txt", "lock",
     ["held apt's lists lock (/tmp/W/apt/lists/lock, held by process 4242 (python3))"]),
    ("apt-get-remove-dpkg-lock-held.txt", "lock",
     ["held the dpkg lock (/tmp/W/dpkg/lock, held by process 4242 (python3)) for longer than the lock timeout"]),
    # A lab package left half-configured: named, with dpkg's line and what its script printed (issue 38).
    ("apt-get-install-with-half-configured-lab-package.txt", "package_failed",
     ["dpkg could not finish this package: lab-license (dpkg --configure: installed lab-license package "
      "post-installation script subprocess returned error exit status 1; it printed: lab-license: cannot reach the "
      "license server license.lab.example.invalid:27000)", "dpkg --configure lab-license",
      "apt-get remove lab-license"]),
    ("dpkg-install-lab-postinst-fails.txt", "package_failed", ["lab-license (dpkg --install: "]),
    ("apt-get-update-not-root.txt", "permission", ["13: Permission denied", "become: true", "not run as root"]),
    ("apt-get-install-not-root.txt", "permission", ["13: Permission denied", "become: true"]),
    ("dpkg-configure-not-root.txt", "permission", ["requires superuser privilege", "become: true"]),
    ("python3-apt-not-root.txt", "permission", ["Permission denied", "become: true"]),
    ("apt-get-update-release-not-valid-yet.txt", "clock",
     ["not valid yet", "clock is behind", "NTP", "repository URL is not the problem"]),
    ("apt-get-update-release-expired.txt", "release_expired", ["is expired", "Valid-Until", "up-to-date mirror"]),
    ("apt-get-update-hash-sum-mismatch.txt", "integrity",
     ["Hash Sum mismatch", "integrity check", "middle of a sync", "altered", "not a plain download failure"]),
    ("apt-get-update-unexpected-size.txt", "integrity",
     ["File has unexpected size (1385 != 1367)", "integrity check", "middle of a sync"]),
    ("apt-get-install-deb-hash-sum-mismatch.txt", "integrity",
     ["demo-data_1.0_all.deb Hash Sum mismatch", "nothing was installed"]),
    ("apt-get-update-no-pubkey.txt", "signature", ["NO_PUBKEY", "does not match the key that signed", "signed-by",
                                                   "do not turn signature checks off"]),
    ("apt-get-update-not-signed.txt", "signature", ["is not signed", "not signed at all"]),
    ("apt-get-update-expkeysig.txt", "signature", ["EXPKEYSIG", "expired", "download the key again"]),
    ("apt-get-update-404-no-release-file.txt", "no_release", ["does not have a Release file", "suite"]),
    ("apt-get-update-503.txt", "download", ["503", "Service Unavailable", "could not be downloaded", "mirror is up"]),
    ("apt-get-update-connection-refused.txt", "download",
     ["Connection refused", "could not be downloaded", "mirror is up"]),
    ("apt-get-install-404-deb.txt", "download", ["404", "demo-lib_1.0_all.deb", "nothing was installed"]),
    ("apt-get-install-unmet-dependencies.txt", "dependencies",
     ["demo-tool : Depends: demo-lib (>= 2) but it is not going to be installed", "nothing was installed",
      "apt-mark showhold"]),
]


@pytest.mark.parametrize("name, kind, words", CAPTURED, ids=[case[0] for case in CAPTURED])
def test_captured_failures_get_their_cause_and_fix(name, kind, words):
    result = apt_errors.classify(fixture(name))
    assert result["kind"] == kind, result
    for word in words:
        assert word in result["reason"], (word, result["reason"])


@pytest.mark.parametrize("name, kind, words", CAPTURED, ids=[case[0] for case in CAPTURED])
def test_rocm_packages_apt_failure_is_the_same_classifier(name, kind, words):
    assert rocm_packages.apt_failure(fixture(name)) == apt_errors.classify(fixture(name))


# Lines written from the message catalogues (apt 2.6 libapt-pkg6.0.mo / apt.mo, dpkg.mo msgids, placeholders
# filled in), or from a public report where noted: failures that cannot be produced on this host.
FROM_CATALOGUE = [
    ("E: You don't have enough free space in /var/cache/apt/archives/.", "disk_full",
     ["/var/cache/apt/archives/", "nothing was installed", "apt-get clean"]),
    ("E: Unable to lock the administration directory (/var/lib/dpkg/), is another process using it?", "lock",
     ["held the dpkg lock (/var/lib/dpkg/lock)"]),
    ("dpkg: error: dpkg frontend lock was locked by another process with pid 4242\nNote: removing the lock file is "
     "always wrong, can damage the locked area\nand the entire system.", "lock",
     ["the dpkg lock (/var/lib/dpkg/lock-frontend, held by process 4242)"]),
    ("E: dpkg was interrupted, you must manually run 'dpkg --configure -a' to correct the problem.",
     "dpkg_interrupted", ["dpkg --configure -a", "next run finishes the interrupted install"]),
    ("E: Failed to fetch http://127.0.0.1:8080/pool/main/r/rocblas/rocblas.deb  Writing more data than expected "
     "(4096 > 2048) [IP: 127.0.0.1 8080]", "integrity", ["integrity check"]),
    ("W: GPG error: http://127.0.0.1:8080 jammy InRelease: The following signatures were invalid: BADSIG "
     "9386B48A1A693C5C AMD ROCm Release Signing Key\nE: The repository 'http://127.0.0.1:8080 jammy InRelease' is "
     "not signed.", "integrity", ["BADSIG", "altered"]),
    ("W: GPG error: http://127.0.0.1:8080 jammy InRelease: The following signatures were invalid: KEYEXPIRED "
     "1564703186\nE: The repository 'http://127.0.0.1:8080 jammy InRelease' is not signed.", "signature",
     ["expired", "download the key again"]),
    # Debian 13's apt with sqv (the form of a public report, tracelabs/tlosint-live#168).
    ("W: OpenPGP signature verification failed: http://127.0.0.1:8080 stable InRelease: Sub-process /usr/bin/sqv "
     "returned an error code (1), error message is: Missing key CA8BB4727A47B4D09B4EE8969386B48A1A693C5C, which is "
     "needed to verify signature.\nE: The repository 'http://127.0.0.1:8080 stable InRelease' is not signed.",
     "signature", ["Missing key CA8BB4727A47B4D09B4EE8969386B48A1A693C5C", "signed-by"]),
    ("E: Failed to fetch http://mirror.example.com/rocm/apt/6.2.4/dists/jammy/InRelease  Temporary failure "
     "resolving 'mirror.example.com'", "download", ["Temporary failure resolving", "DNS"]),
    ("E: Failed to fetch http://127.0.0.1:8080/dists/jammy/InRelease  Clearsigned file isn't valid, got 'NOSPLIT' "
     "(does the network require authentication?)", "download", ["Clearsigned file isn't valid"]),
    ("E: The repository 'http://127.0.0.1:8080/rocm/apt/6.2.4 jammy Release' no longer has a Release file.",
     "no_release", ["no longer has a Release file"]),
    ("E: Unable to locate package rocm-hip-sdk", "not_found", ["Unable to locate package rocm-hip-sdk"]),
    ("E: Version '6.2.4.60204-139~24.04' for 'rocblas' was not found", "not_found", ["was not found"]),
    ("E: Unmet dependencies. Try 'apt --fix-broken install' with no packages (or specify a solution).",
     "dependencies", ["Unmet dependencies"]),
]


@pytest.mark.parametrize("text, kind, words", FROM_CATALOGUE, ids=[case[1] + "-" + case[0][:40]
                                                                   for case in FROM_CATALOGUE])
def test_catalogue_messages_get_their_cause_and_fix(text, kind, words):
    result = apt_errors.classify(text)
    assert result["kind"] == kind, result
    for word in words:
        assert word in result["reason"], (word, result["reason"])


def test_as_the_role_passes_it_ansible_apt_module_msg_then_stderr_then_stdout():
    # ansible.builtin.apt: msg="'<cmd>' failed: <stderr>", and the role joins msg, stderr and stdout.
    text = fixture("apt-get-update-hash-sum-mismatch.txt")
    stderr = text.split("--- stderr\n", 1)[1].split("--- stdout\n", 1)[0]
    stdout = text.split("--- stdout\n", 1)[1]
    msg = "'/usr/bin/apt-get -y -o \"Dpkg::Options::=--force-confdef\" install rocblas' failed: " + stderr
    assert apt_errors.classify("\n".join([msg, stderr, stdout]))["kind"] == "integrity"
    # python3-apt's lock exception for a non-root user, as the apt module words it.
    not_root = fixture("python3-apt-not-root.txt").splitlines()[0].split(": ", 1)[1]
    result = apt_errors.classify("Failed to lock apt for exclusive operation: " + not_root)
    assert result["kind"] == "permission", result


def test_a_warning_does_not_hide_the_error_that_failed_the_run():
    # apt-get update warns about another, unreachable repository; the install then fails on dependencies.
    text = fixture("apt-get-update-503.txt") + fixture("apt-get-install-unmet-dependencies.txt")
    assert apt_errors.classify(text)["kind"] == "dependencies"
    # The sandbox warning apt prints for local .deb files mentions "Permission denied" and is not a failure.
    text = ("W: Download is performed unsandboxed as root as file '/root/rocm.deb' couldn't be accessed by user "
            "'_apt'. - pkgAcquire::Run (13: Permission denied)\n" + fixture("apt-get-install-404-deb.txt"))
    assert apt_errors.classify(text)["kind"] == "download"


def test_sizes_in_apt_output_are_not_http_statuses():
    text = "Need to get 503 kB of archives.\nAfter this operation, 404 kB of additional disk space will be used.\n"
    assert apt_errors.classify(text + "E: something new")["kind"] == "other"


def test_hash_sum_mismatch_is_not_reported_as_a_download_problem():
    # Item 16: apt prints "Failed to fetch ... Hash Sum mismatch" on one line; the cause is integrity.
    result = apt_errors.classify(fixture("apt-get-update-hash-sum-mismatch.txt"))
    assert result["kind"] == "integrity" and "mirror is up" not in result["reason"]


def test_clock_skew_does_not_point_at_the_repository_url():
    result = apt_errors.classify(fixture("apt-get-update-release-not-valid-yet.txt"))
    assert "rocm_repo_base_url" not in result["reason"] and "clock" in result["reason"]


def test_unknown_failures_keep_the_first_error_line():
    assert apt_errors.classify("E: something new\n")["reason"] == "apt failed: E: something new"
    assert apt_errors.classify("Reading package lists...\nE: first\nE: second\nDone\n")["reason"] == (
        "apt failed: E: first")
    assert apt_errors.classify(None) == {"kind": "other", "reason": "apt failed: no message"}
    assert apt_errors.classify(b"E: bytes too\n")["reason"] == "apt failed: E: bytes too"
    assert apt_errors.classify(["E: a list", "of lines"])["reason"] == "apt failed: E: a list"


def test_every_kind_is_covered():
    covered = {case[1] for case in CAPTURED + FROM_CATALOGUE} | {"other"}
    assert covered == set(apt_errors.KINDS)


@given(st.lists(st.text(max_size=120), max_size=30))
def test_classify_never_raises_and_always_answers_one_of_its_kinds(rows):
    result = apt_errors.classify("\n".join(rows))
    assert result["kind"] in apt_errors.KINDS and result["reason"]


def test_the_lists_lock_and_the_dpkg_lock_are_told_apart():
    assert apt_errors.lock_held(fixture("apt-get-update-lists-lock-held-lock-timeout-5.txt")) == {
        "lock": "lists", "path": "/tmp/W/apt/lists/lock", "holder": "process 4242 (python3)"}
    assert apt_errors.lock_held(fixture("apt-get-install-lock-held.txt")) == {
        "lock": "dpkg", "path": "/var/lib/dpkg/lock-frontend", "holder": "process 766 (python3)"}
    assert apt_errors.lock_held(fixture("apt-get-remove-dpkg-lock-held.txt"))["path"] == "/tmp/W/dpkg/lock"
    assert apt_errors.lock_held("E: Could not get lock /var/cache/apt/archives/lock. It is held by process 9 (apt)"
                                )["lock"] == "archives"
    assert apt_errors.lock_held(fixture("apt-get-install-with-half-configured-lab-package.txt")) is None
    # apt-get update waited for nothing although DPkg::Lock::Timeout was 5 s: the module must wait itself.
    assert "seconds=0.0" in fixture("apt-get-update-lists-lock-held-lock-timeout-5.txt")


def test_a_half_configured_package_is_named_from_dpkg_s_audit_and_status():
    assert apt_errors.parse_audit(fixture("dpkg-audit-half-configured.txt")) == {"half-configured": ["lab-license"]}
    assert apt_errors.parse_audit("") == {}
    from ansible_collections.gpulab.rocm.plugins.module_utils.apt import apt_packages
    status = apt_packages.parse_status(fixture("dpkg-query-half-configured.txt").split("--- stdout\n", 1)[1])
    assert apt_errors.unfinished(status) == {"lab-license": "half-configured"}
    assert apt_errors.package_errors(fixture("apt-get-install-with-half-configured-lab-package.txt")) == [{
        "package": "lab-license", "action": "--configure",
        "error": "installed lab-license package post-installation script subprocess returned error exit status 1",
        "output": "lab-license: cannot reach the license server license.lab.example.invalid:27000"}]
