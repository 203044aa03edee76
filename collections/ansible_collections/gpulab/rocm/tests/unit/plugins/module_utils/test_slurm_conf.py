"""Slurm's formats (module_utils/parsers/slurm_conf.py): hostlists."""

import pytest

from ansible_collections.gpulab.rocm.plugins.module_utils.parsers import slurm_conf as sc


def test_hostlists():
    assert sc.expand_hostlist("gpu[01-03,07],login1") == ["gpu01", "gpu02", "gpu03", "gpu07", "login1"]
    with pytest.raises(ValueError):
        sc.expand_hostlist("gpu[a-b]")
