"""Real site.yml runs against the converged containers for the bugs the probe/plan structure fixed (issue 10): every
documented phase tag runs on its own, a mirror URL with characters apt quotes converges, a group taken out of
rocm_access_groups leaves adduser.conf. Each change is followed by a run that must change nothing."""

import os
import re

import pytest

from gpulab_test_helpers import gpulab_runs as runs

NODE = "molecule-rocm-bookworm"
testinfra_hosts = [NODE]


@pytest.mark.parametrize("tags", ["preflight", "repo", "driver", "sdk", "access", "env", "containers", "verify"])
def test_each_phase_tag_runs_alone_and_changes_nothing(tags):
    # The old roles failed under --tags repo/sdk/preflight: no facts were gathered under those tags.
    run = runs.playbook("site.yml", NODE, tags=tags)
    assert run.rc == 0, run
    assert run.changed(NODE) == 0, run
    # The pass (the probe, the preflight check, the tagged phase's plan, the gate) runs under every phase tag.
    assert "TASK [Probe the node, plan every phase, and stop it when any phase refuses]" in run.output, run


def mirror_requests(marker):
    """The requests the fixture mirror served so far whose path holds marker (tests/harness/mirror/serve.py logs one
    line per request)."""
    state = os.environ.get("GPULAB_MIRROR_STATE") or str(runs.PROJECT / ".cache" / "mirror")
    with open(os.path.join(state, "server.log")) as handle:
        return [line for line in handle if marker in line]


def test_a_mirror_url_with_quoted_characters_converges(host):
    # apt names the list files of this URL with %5f and %7e; the old roles rebuilt the names without that quoting,
    # found no lists, and refreshed the apt cache (asking the mirror again) on every run.
    # The Core SDK stream's lab mirror (the default release is a Core one; its URL replaces the stream's).
    alias = {"rocm_repo_core_base_url": os.environ["GPULAB_MIRROR_URL"] + "/lab_mirror~1/rocm/core/packages"}
    first = runs.playbook("site.yml", NODE, alias)
    assert first.rc == 0 and first.changed(NODE) > 0, first
    assert "lab%5fmirror%7e1" in host.check_output("ls /var/lib/apt/lists")
    asked = len(mirror_requests("/lab_mirror~1/rocm/core/"))
    second = runs.playbook("site.yml", NODE, alias)
    assert second.rc == 0 and second.changed(NODE) == 0, second
    # No refresh: the mirror was not asked for the ROCm lists again.
    assert len(mirror_requests("/lab_mirror~1/rocm/core/")) == asked, second
    back = runs.playbook("site.yml", NODE)
    assert back.rc == 0 and back.changed(NODE) > 0, back
    assert "/lab_mirror~1/" not in host.file("/etc/apt/sources.list.d/amdrocm-stable.sources").content_string


def test_a_group_taken_out_of_the_list_leaves_adduser_conf(host):
    run = runs.playbook("site.yml", NODE, {"rocm_access_groups": ["render"]}, tags="access")
    assert run.rc == 0 and run.changed(NODE) == 1, run
    assert re.search(r'^EXTRA_GROUPS="render"$', host.file("/etc/adduser.conf").content_string, re.M)
    again = runs.playbook("site.yml", NODE, tags="access")
    assert again.rc == 0, again
    assert re.search(r'^EXTRA_GROUPS="video render"$', host.file("/etc/adduser.conf").content_string, re.M)
    assert runs.playbook("site.yml", NODE).changed(NODE) == 0
