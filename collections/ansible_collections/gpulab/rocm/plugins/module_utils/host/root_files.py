# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Writing a root-owned file so that no reader ever sees half of it and no one can plant the temporary file: one
implementation for the modules that write system files (apt_source, apt_keyring, system_files); and the
root-owned folders they go in."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import os
import stat
import tempfile

FOLDER_MODE = 0o755
# Debian's and Ubuntu's first uid of a login user (FIRST_UID in adduser.conf, UID_MIN in login.defs).
LOGIN_UID_MIN = 1000


def write_atomic(path, content, mode=0o644, owner=(0, 0), dir_mode=0o755):
    """Write bytes to path: a temporary file of an unguessable name made by this process in the same folder
    (mkstemp, O_EXCL: never a file or link someone planted), flushed to disk, given owner and mode, then renamed
    over path. The folder is made (dir_mode) when missing. The temporary file is removed when anything fails.
    owner None keeps the writer's."""
    directory = os.path.dirname(path)
    if not os.path.isdir(directory):
        os.makedirs(directory, dir_mode)
    handle, tmp = tempfile.mkstemp(dir=directory, prefix='.%s.' % os.path.basename(path))
    try:
        with os.fdopen(handle, 'wb') as out:
            out.write(content)
            out.flush()
            os.fsync(out.fileno())
        if owner is not None:
            os.chown(tmp, owner[0], owner[1])
        os.chmod(tmp, mode)
        os.rename(tmp, path)
    except BaseException:
        if os.path.lexists(tmp):
            os.unlink(tmp)
        raise


def folder_changes(paths):
    """What making each folder (root, 0755) takes, in the order given (parents first): [(path, 'make' or 'fix')].
    Raises ValueError naming the first path that is there but is not a folder (a link is never followed), or that
    must be made in a parent a user could write to: one others can write to, or one a login user owns (uid from
    LOGIN_UID_MIN; a system account such as Debian's prometheus, which owns /var/lib/prometheus, is a service's).
    A parent this list makes counts as root's."""
    changes, made = [], set()
    for path in paths:
        parent = os.path.dirname(path.rstrip('/')) or '/'
        if parent not in made:
            try:
                info = os.lstat(parent)
            except OSError:
                raise ValueError('%s cannot be made: its parent %s is not there' % (path, parent))
            if not stat.S_ISDIR(info.st_mode) or info.st_uid >= LOGIN_UID_MIN or info.st_mode & 0o022:
                raise ValueError('%s cannot be made: its parent %s is not a folder only root or a system account can '
                                 'write to' % (path, parent))
        try:
            info = os.lstat(path)
        except OSError as exc:
            if exc.errno != errno.ENOENT:
                raise
            changes.append((path, 'make'))
            made.add(path)
            continue
        if not stat.S_ISDIR(info.st_mode):
            raise ValueError('%s is there but is not a folder (a link or a file): not changed' % path)
        made.add(path)
        if (stat.S_IMODE(info.st_mode), info.st_uid, info.st_gid) != (FOLDER_MODE, 0, 0):
            changes.append((path, 'fix'))
    return changes


def make_folders(changes):
    """Apply folder_changes: make the missing folders, give the others root's ownership and mode 0755, through a
    descriptor opened without following a link (a folder swapped for a link in between is refused by the kernel)."""
    for path, action in changes:
        if action == 'make':
            os.mkdir(path, FOLDER_MODE)
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        try:
            os.fchown(fd, 0, 0)
            os.fchmod(fd, FOLDER_MODE)
        finally:
            os.close(fd)
