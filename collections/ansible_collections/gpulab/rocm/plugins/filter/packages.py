# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters for rocm_sdk's package plan (version switch, side by side, install source, uninstall) and apt failures."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.gpulab.rocm.plugins.module_utils import rocm_packages


def _lines(value):
    if value is None:
        return []
    if isinstance(value, str):
        return value.splitlines()
    return list(value)


def rocm_sdk_query_names(spec, installed):
    try:
        return rocm_packages.query_names(spec, _lines(installed))
    except ValueError as exc:
        raise AnsibleFilterError(str(exc))


def rocm_sdk_plan(spec, installed, madison):
    try:
        return rocm_packages.plan(spec, _lines(installed), _lines(madison))
    except ValueError as exc:
        raise AnsibleFilterError(str(exc))


def apt_failure(message):
    return rocm_packages.apt_failure(message)


class FilterModule(object):
    def filters(self):
        return {
            'rocm_sdk_query_names': rocm_sdk_query_names,
            'rocm_sdk_plan': rocm_sdk_plan,
            'apt_failure': apt_failure,
        }
