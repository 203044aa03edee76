# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Writing a root-owned file so that no reader ever sees half of it and no one can plant the temporary file: one
implementation for the modules that write system files (apt_source, apt_keyring, system_files)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import tempfile


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
