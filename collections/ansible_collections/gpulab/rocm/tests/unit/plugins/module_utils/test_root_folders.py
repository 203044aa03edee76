"""Root-owned folders made in one module run (module_utils/host/root_files.py: folder_changes, make_folders), on this
machine's filesystem (the tests run as root, as the modules do)."""

import os

import pytest

from ansible_collections.gpulab.rocm.plugins.module_utils.host import root_files

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="root owns what these tests make")


def test_missing_folders_are_made_parents_first_and_existing_ones_fixed(tmp_path):
    os.chmod(tmp_path, 0o755)
    top, child, kept = str(tmp_path / "lib"), str(tmp_path / "lib" / "python"), str(tmp_path / "etc")
    os.mkdir(kept, 0o700)
    changes = root_files.folder_changes([top, child, kept])
    assert changes == [(top, "make"), (child, "make"), (kept, "fix")]
    root_files.make_folders(changes)
    for path in (top, child, kept):
        info = os.lstat(path)
        assert (oct(info.st_mode & 0o7777), info.st_uid, info.st_gid) == ("0o755", 0, 0)
    # Made once: the second look finds nothing to do.
    assert root_files.folder_changes([top, child, kept]) == []


def test_a_link_or_a_file_where_a_folder_goes_is_refused(tmp_path):
    os.chmod(tmp_path, 0o755)
    (tmp_path / "target").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "target")
    (tmp_path / "file").write_text("x")
    for name in ("link", "file"):
        with pytest.raises(ValueError, match="is there but is not a folder"):
            root_files.folder_changes([str(tmp_path / name)])


def test_a_parent_others_can_write_to_is_refused(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    with pytest.raises(ValueError, match="not a folder only root or a system account can write to"):
        root_files.folder_changes([str(shared / "gpulab")])
    os.chown(shared, 1000, 1000)
    os.chmod(shared, 0o755)
    with pytest.raises(ValueError, match="not a folder only root or a system account can write to"):
        root_files.folder_changes([str(shared / "gpulab")])
    # A service's own folder (Debian's prometheus owns /var/lib/prometheus): node_exporter's textfile folder in it.
    os.chown(shared, 998, 998)
    assert root_files.folder_changes([str(shared / "node-exporter")]) == [(str(shared / "node-exporter"), "make")]
    with pytest.raises(ValueError, match="its parent .* is not there"):
        root_files.folder_changes([str(tmp_path / "absent" / "gpulab")])
