"""The stack-wide inputs (module_utils/planning/stack.py): what stack.resolve() refuses before any phase plans."""

import pytest

from ansible_collections.gpulab.rocm.plugins.module_utils.planning import stack
from ansible_collections.gpulab.rocm.tests.unit.plugins.module_utils.plan_helpers import default_inputs


@pytest.mark.parametrize("values, message", [
    ({"rocm_version": "6.x"}, "rocm_version"),
    ({"rocm_versions": "6.2.4"}, "rocm_versions must be a list"),
    ({"rocm_versions": ["6.2.0"], "rocm_version": "6.2.4"}, "is not among rocm_versions"),
    ({"rocm_install_source": "pip"}, "rocm_install_source must be one of"),
    ({"rocm_gpu_users": ["alice; rm -rf /"]}, "not user names"),
    # Issue 15, item 15: a $ in a name must never reach a shell or a path; refused before any change.
    ({"rocm_gpu_users": ["dash-$HOME"]}, "not user names"),
    ({"rocm_kernel_driver": "yes"}, "rocm_kernel_driver must be one of"),
    ({"rocm_apt_suite": "jammy main"}, "rocm_apt_suite must be an apt suite name"),
    ({"rocm_expected_gpu_count": "eight"}, "rocm_expected_gpu_count must be a number"),
])
def test_invalid_stack_wide_inputs(values, message):
    with pytest.raises(stack.StackError, match=message):
        stack.resolve(values)


def test_the_previews_are_refused_by_the_stack():
    with pytest.raises(stack.StackError, match="technology preview"):
        default_inputs(rocm_version="7.13.0")


def test_side_by_side_takes_one_stream():
    with pytest.raises(stack.StackError, match="mixes the legacy stream and the ROCm Core SDK"):
        default_inputs(rocm_version="10.1.0", rocm_versions=["10.1.0", "7.2.4"])
    assert default_inputs(rocm_version="10.1", rocm_versions=["10.0", "10.1"])["versions"] == ["10.0.0", "10.1.0"]
