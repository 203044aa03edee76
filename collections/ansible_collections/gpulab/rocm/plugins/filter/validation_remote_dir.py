# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpulab.rocm.validation_remote_dir (documentation: validation_remote_dir.yml beside this file): a thin wrapper of
module_utils/planning/validation.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpulab.rocm.plugins.module_utils.planning import validation as impl


def validation_remote_dir(path, folder, parent, uid=0):
    return impl.remote_dir_problems(path, folder, parent, uid)


class FilterModule(object):
    def filters(self):
        return {'validation_remote_dir': validation_remote_dir}
