"""system_files, the module the roles write a phase's root-owned files and groups with, in one module run: run
in-process on this machine's real filesystem, in folders of the test (root-owned: the tests run as root, as CI
does), and once through ansible itself. Groups are only asked about in check mode: nothing changes /etc/group."""

import grp
import os
import stat

import pytest

from ansible_collections.gpulab.rocm.plugins.modules import system_files
from ansible_collections.gpulab.rocm.tests.unit.gpu_facts_helpers import ANSIBLE, run_main, run_through_ansible

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="writes root-owned files: run as root")
MISSING_GROUP = "gpulabtestnogroup"


def run(args, check_mode=False, diff=True):
    return run_main(system_files.main, args, check_mode=check_mode, diff=diff)


def mode(path):
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_files_code_and_commands_are_written_in_one_run_and_a_second_run_changes_nothing(tmp_path):
    folder = tmp_path / "lib" / "gpulab"
    args = {"dirs": [str(tmp_path / "lib"), str(folder)],
            "files": {str(folder / "expected.json"): "{}\n"},
            "library": {str(folder / "checks.py"): "print('the code')\n"},
            "executables": {str(tmp_path / "gpulab-check"): "#!/bin/sh\nexit 0\n"}}
    result = run(args)
    assert not result["failed"] and result["changed"], result
    assert result["changed_files"] == [str(tmp_path / "lib"), str(folder), str(tmp_path / "gpulab-check"),
                                       str(folder / "checks.py"), str(folder / "expected.json")]
    assert (mode(folder), mode(folder / "expected.json"), mode(folder / "checks.py"),
            mode(tmp_path / "gpulab-check")) == (0o755, 0o644, 0o644, 0o755)
    assert (folder / "checks.py").read_text() == "print('the code')\n"
    # The code's content is left out of the diff; the data file's and the command's are in it.
    shown = [entry["after_header"] for entry in result["diff"]]
    assert str(folder / "expected.json") in shown and str(tmp_path / "gpulab-check") in shown
    assert str(folder / "checks.py") not in shown
    again = run(args)
    assert not again["changed"] and again["changed_files"] == [] and again["diff"] == [], again


def test_a_command_whose_mode_was_changed_is_written_again(tmp_path):
    command = tmp_path / "gpulab-check"
    run({"executables": {str(command): "#!/bin/sh\n"}})
    command.chmod(0o644)
    result = run({"executables": {str(command): "#!/bin/sh\n"}})
    assert result["changed_files"] == [str(command)] and mode(command) == 0o755


def test_a_path_given_twice_is_refused_before_anything_is_written(tmp_path):
    path = str(tmp_path / "x.conf")
    result = run({"files": {path: "a\n"}, "executables": {path: "b\n"}, "dirs": [str(tmp_path / "made")]})
    assert result["failed"] and result["msg"] == "%s is given twice (executables). Nothing was changed." % path
    assert not os.path.lexists(path) and not os.path.lexists(str(tmp_path / "made"))


def test_groups_and_members_are_checked_and_reported_with_the_files_in_check_mode(tmp_path):
    path = tmp_path / "adduser.conf"
    result = run({"groups": [MISSING_GROUP], "members": {"root": ["root"]}, "files": {str(path): "x\n"}},
                 check_mode=True)
    assert result["changed"] and result["created"] == [MISSING_GROUP] and result["added"] == {}, result
    assert result["diff"][0] == {"before_header": "groups", "after_header": "groups", "before": "",
                                 "after": "group %s (system)\n" % MISSING_GROUP}
    assert result["changed_files"] == [str(path)] and not path.exists()
    with pytest.raises(KeyError):
        grp.getgrnam(MISSING_GROUP)


@pytest.mark.parametrize("members, message", [
    ({"gpulab-no-such-user": ["render"]}, "These users do not exist: gpulab-no-such-user. Create them first."),
    ({"root": ["video\nroot"]}, "Not user or group names: 'video\\nroot'."),
])
def test_a_bad_member_is_refused_and_no_file_is_written(tmp_path, members, message):
    path = tmp_path / "adduser.conf"
    result = run({"members": members, "files": {str(path): "x\n"}, "dirs": [str(tmp_path / "made")]})
    assert result["failed"] and result["msg"] == message + " Nothing was changed.", result
    assert not path.exists() and not (tmp_path / "made").exists()


def test_a_folder_others_can_write_to_is_refused_before_the_groups_change(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    result = run({"groups": [MISSING_GROUP], "files": {str(shared / "x.conf"): "x\n"}})
    assert result["failed"] and result["msg"].startswith("Refusing to write %s/x.conf" % shared), result
    assert result["msg"].endswith("Nothing was changed.") and not (shared / "x.conf").exists()
    with pytest.raises(KeyError):
        grp.getgrnam(MISSING_GROUP)


@pytest.mark.skipif(ANSIBLE is None, reason="needs ansible")
def test_through_ansible_check_mode_writes_nothing(tmp_path):
    path = tmp_path / "rocm.sh"
    args = {"files": {str(path): "export ROCM_PATH=/opt/rocm\n"}, "groups": [MISSING_GROUP]}
    result = run_through_ansible("gpulab.rocm.system_files", args)
    assert result["changed"] and result["changed_files"] == [str(path)] and result["created"] == [MISSING_GROUP]
    assert not path.exists()
