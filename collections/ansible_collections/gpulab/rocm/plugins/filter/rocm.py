# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.gpulab.rocm.plugins.module_utils import rocm_release as rr


def rocm_release(version):
    try:
        return rr.release(version)
    except ValueError as exc:
        raise AnsibleFilterError(str(exc))


def rocm_apt_suite(rocm_version, distribution, distribution_version, override=None):
    """gpulab.rocm.rocm_apt_suite: the repo.radeon.com suite for a host's OS, or a clear error."""
    try:
        return rr.apt_suite(distribution, distribution_version, rocm_version, override or None)
    except ValueError as exc:
        raise AnsibleFilterError(str(exc))


class FilterModule(object):
    def filters(self):
        return {
            'rocm_release': rocm_release,
            'rocm_apt_suite': rocm_apt_suite,
        }
