# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpulab.rocm.validation_failures / validation_thresholds over real and canned gpu_bench.py reports
(fixtures/README.md says which is which), with the thresholds the rocm_validate role ships."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json
import os

import pytest
import yaml

from ansible.errors import AnsibleFilterError
from ansible_collections.gpulab.rocm.plugins.filter import validation_failures as failures_filter
from ansible_collections.gpulab.rocm.plugins.filter import validation_thresholds as thresholds_filter
from ansible_collections.gpulab.rocm.plugins.filter.validation_failures import validation_failures
from ansible_collections.gpulab.rocm.plugins.filter.validation_thresholds import validation_thresholds
from ansible_collections.gpulab.rocm.plugins.module_utils.planning import validation

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, 'fixtures')
# tests/unit/plugins/filter -> the repository root, where roles/ lives beside collections/
REPO = os.path.abspath(os.path.join(HERE, *(['..'] * 8)))
ROLE_DEFAULTS = os.path.join(REPO, 'roles', 'rocm_validate', 'defaults', 'main.yml')


def load(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return json.load(handle)


@pytest.fixture(name='thresholds', scope='module')
def fixture_thresholds():
    """The thresholds the role ships: the tests check them against the real H200 report."""
    if not os.path.exists(ROLE_DEFAULTS):
        pytest.skip('the rocm_validate role is not beside this collection')
    with open(ROLE_DEFAULTS) as handle:
        return yaml.safe_load(handle)['rocm_validate_thresholds']


@pytest.fixture(name='h200')
def fixture_h200():
    return load('gpu_bench-nvidia-h200-2026-11-29.json')


def test_filters_are_registered():
    assert set(failures_filter.FilterModule().filters()) == {'validation_failures'}
    assert set(thresholds_filter.FilterModule().filters()) == {'validation_thresholds'}


def test_real_h200_report_passes_the_shipped_thresholds(h200, thresholds):
    assert h200['device']['name'] == 'NVIDIA H200'
    assert validation_thresholds(h200, thresholds) == thresholds['NVIDIA H200']
    assert validation_failures(h200, thresholds) == []


def test_scale_fails_exactly_the_figures_under_the_scaled_thresholds(h200, thresholds):
    scale = 1.15
    wanted = thresholds['NVIDIA H200']
    expected = sorted(f for f, minimum in wanted.items() if h200['figures'][f] < minimum * scale)
    assert expected, 'the scale must push at least one real figure under its threshold'
    found = validation_failures(h200, thresholds, scale=scale)
    assert [line.split(': ', 1)[1].split(' ', 1)[0] for line in found] == expected
    for line in found:
        assert line.startswith('NVIDIA H200: ') and 'is under its threshold' in line


def test_canned_rx6900xt_fails_resnet50_only(thresholds):
    report = load('gpu_bench-rx6900xt-canned-slow-resnet50.json')
    assert validation_failures(report, thresholds) == [
        'AMD Radeon RX 6900 XT: resnet50_images_per_s = 290.4 is under its threshold 312']


def test_every_figure_under_threshold_is_listed(h200):
    thresholds = {'NVIDIA H200': {f: v * 2 for f, v in h200['figures'].items()}}
    found = validation_failures(h200, thresholds)
    assert len(found) == len(h200['figures'])


def test_unknown_model_is_report_only_unless_asked_to_fail(thresholds):
    report = load('gpu_bench-cpu-tiny.json')
    assert report['device']['name'] == 'cpu'
    assert validation_thresholds(report, thresholds) == {}
    assert validation_failures(report, thresholds) == []
    found = validation_failures(report, thresholds, unknown_model='fail')
    assert len(found) == 1 and "no thresholds for GPU model 'cpu'" in found[0]


def test_model_matches_ignoring_case_and_blanks(h200):
    thresholds = {'nvidia  H200 ': {'gemm_bf16_tflops_median': 10 ** 6}}
    assert validation_thresholds(h200, thresholds) == {'gemm_bf16_tflops_median': 10 ** 6}
    assert len(validation_failures(h200, thresholds)) == 1


def test_missing_figure_names_the_benchmark_error(h200, thresholds):
    report = copy.deepcopy(h200)
    del report['benchmarks']['bert']
    del report['figures']['bert_samples_per_s']
    report['errors']['bert'] = 'OutOfMemoryError: CUDA out of memory'
    assert validation_failures(report, thresholds) == [
        'NVIDIA H200: bert_samples_per_s: missing from the report, threshold 550 '
        '(benchmark bert failed: OutOfMemoryError: CUDA out of memory)']


def test_missing_figure_without_error_says_not_measured(h200, thresholds):
    report = copy.deepcopy(h200)
    del report['figures']['resnet50_images_per_s']
    found = validation_failures(report, thresholds)
    assert len(found) == 1 and 'not measured' in found[0]


def test_non_numeric_figure_fails(h200, thresholds):
    report = copy.deepcopy(h200)
    report['figures']['gemm_bf16_tflops_median'] = 'fast'
    assert validation_failures(report, thresholds) == [
        "NVIDIA H200: gemm_bf16_tflops_median = fast is under its threshold 600"]


@pytest.mark.parametrize('report, thresholds, kwargs, message', [
    ('not a report', {}, {}, 'must be a dict'),
    ({'figures': {}}, {}, {}, 'no device.name'),
    ({'device': {'name': 'NVIDIA H200'}}, {'NVIDIA H200': {'x': 1}}, {}, 'no figures dict'),
    ({'device': {'name': 'X'}, 'figures': {}}, ['X'], {}, 'thresholds must be a dict'),
    ({'device': {'name': 'X'}, 'figures': {}}, {'X': [1]}, {}, "thresholds for 'X' must be a dict"),
    ({'device': {'name': 'X'}, 'figures': {'a': 1}}, {'X': {'a': 'high'}}, {}, "threshold a for 'X' must be a number"),
    ({'device': {'name': 'X'}, 'figures': {'a': 1}}, {'X': {'a': True}}, {}, "threshold a for 'X' must be a number"),
    ({'device': {'name': 'X'}, 'figures': {}}, {}, {'unknown_model': 'ignore'}, 'unknown_model must be one of'),
    ({'device': {'name': 'X'}, 'figures': {}}, {}, {'scale': 'big'}, 'scale must be a number > 0'),
])
def test_bad_input_gives_a_clear_filter_error(report, thresholds, kwargs, message):
    with pytest.raises(AnsibleFilterError) as err:
        validation_failures(report, thresholds, **kwargs)
    assert message in str(err.value)
    assert str(err.value).startswith('gpulab.rocm.validation_failures: ')


def test_thresholds_filter_bad_input():
    with pytest.raises(AnsibleFilterError, match='validation_thresholds: .*no device.name'):
        validation_thresholds({'device': {}}, {})


def test_pure_function_raises_value_error():
    with pytest.raises(ValueError):
        validation.failures([], {})
