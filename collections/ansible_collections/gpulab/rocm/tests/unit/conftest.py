# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Make `ansible_collections.gpulab.rocm` importable when pytest runs from the repository root, and keep the
hypothesis fuzz tests bounded (the whole unit suite should stay well under a minute)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import sys

# collections/ansible_collections/gpulab/rocm/tests/unit -> collections/
COLLECTIONS_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), *(['..'] * 5)))
if COLLECTIONS_DIR not in sys.path:
    sys.path.insert(0, COLLECTIONS_DIR)

try:
    from hypothesis import HealthCheck, settings
except ImportError:  # hypothesis is pinned in requirements-test.txt; without it only the fuzz tests are skipped
    pass
else:
    _QUIET = [HealthCheck.too_slow, HealthCheck.data_too_large]
    settings.register_profile('gpulab', max_examples=300, deadline=None, suppress_health_check=_QUIET)
    settings.register_profile('gpulab-deep', max_examples=5000, deadline=None, suppress_health_check=_QUIET)
    settings.load_profile(os.environ.get('HYPOTHESIS_PROFILE', 'gpulab'))
