"""RETURN cannot come from a doc fragment (ansible-core merges fragments into DOCUMENTATION only), so the three tool
facts modules each keep their own: the facts they share are documented word for word the same."""

import pytest
import yaml

from ansible_collections.gpulab.rocm.plugins.modules import amd_smi_facts, rocm_smi_facts, rocminfo_facts

MODULES = {'rocminfo': rocminfo_facts, 'rocm_smi': rocm_smi_facts, 'amd_smi': amd_smi_facts}
SHARED = ['present', 'source', 'gpu_count', 'error', 'detail']


def facts_doc(key):
    return yaml.safe_load(MODULES[key].RETURN)['ansible_facts']['contains'][key]['contains']


@pytest.mark.parametrize('fact', SHARED)
def test_a_shared_fact_is_documented_the_same_in_each_module(fact):
    docs = dict((key, facts_doc(key)[fact]) for key in MODULES)
    assert docs['rocm_smi'] == docs['rocminfo'] and docs['amd_smi'] == docs['rocminfo'], docs
