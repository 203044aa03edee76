# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""TEST FIXTURE reader: lays a ttar capture (prometheus/procfs' text archive of a real sysfs tree) out on disk.

A ttar file is frames separated by '# ttar - - -' lines: `Directory: PATH` / `Mode: M`, or `Path: PATH` /
`Lines: N` / N lines of content / `Mode: M`, or `Path: PATH` / `SymlinkTo: TARGET`.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os


def extract(ttar_path, root, strip=''):
    """Write the capture's files under root, each path with the prefix `strip` removed; returns root."""
    with open(ttar_path) as handle:
        lines = handle.read().split('\n')
    index = 0

    def target(path):
        return os.path.join(root, path[len(strip):].lstrip('/') if path.startswith(strip) else path)

    while index < len(lines):
        line = lines[index]
        if line.startswith('Directory: '):
            os.makedirs(target(line[len('Directory: '):]), exist_ok=True)
        elif line.startswith('Path: '):
            path = target(line[len('Path: '):])
            following = lines[index + 1]
            if following.startswith('Lines: '):
                count = int(following[len('Lines: '):])
                content = lines[index + 2:index + 2 + count]
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, 'w') as out:
                    out.write(''.join(part + '\n' for part in content))
                index += 1 + count
            elif following.startswith('SymlinkTo: '):
                os.makedirs(os.path.dirname(path), exist_ok=True)
                os.symlink(following[len('SymlinkTo: '):], path)
            index += 1
        index += 1
    return root
