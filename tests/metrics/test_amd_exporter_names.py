# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""docs/metrics.md's table of gpulab metrics and AMD's exporter fields uses AMD's real names (its published list,
module_utils/planning/amd_exporter_fields.py)."""

import os
import re

from ansible_collections.gpulab.rocm.plugins.module_utils.planning import amd_exporter_fields

DOC = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'docs', 'metrics.md')


def amd_names():
    """The AMD names in the table's second column (a name; `_GFX` after a name is that name's stem plus it)."""
    with open(DOC) as handle:
        text = handle.read()
    table = text.split("### How the names line up with AMD's device-metrics-exporter", 1)[1].split('\n\n')[2]
    names = []
    for row in table.splitlines()[2:]:
        column = row.split('|')[2]
        for name in re.findall(r'`([A-Z_]+)`', column):
            if name.startswith('_'):
                name = names[-1].rsplit('_', 1)[0] + name
            names.append(name)
    return names


def test_the_table_names_only_fields_amd_publishes():
    names = amd_names()
    assert len(names) >= 15
    assert [name for name in names if name not in amd_exporter_fields.GPU_FIELDS] == []
