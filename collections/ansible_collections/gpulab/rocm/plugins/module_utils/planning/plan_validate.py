# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What rocm_validate runs: which benchmarks with which arguments, with which Python, from which PyTorch wheel
index for the release, and whether the settings and thresholds hold together. Pure; gpulab.rocm.plan calls plan()
for the phase 'validate' (it reads no probe section: the benchmarks themselves look at the GPU)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpulab.rocm.plugins.module_utils.planning import rocm_release
from ansible_collections.gpulab.rocm.plugins.module_utils.planning.plan_common import Plan, PlanError

# The phase's contract (docs/plan-contract.md): the probe sections it reads, the keys of its result that its
# role reads, and how the plan pass treats it; planner.REGISTRY collects it.
PHASE = {
    'name': 'validate',
    'role': 'rocm_validate',
    'changes_host': False,
    # The benchmarks look at the GPU themselves: no probe section.
    'sections': (),
    'keys': {
        'interpreter': 'The Python that runs gpu_bench.py (the venv\'s when PyTorch is installed there).',
        'args': "gpu_bench.py's arguments after the script and --output (benchmarks and their settings).",
        'wheel_tag': "PyTorch's wheel index name for the release (V(rocmX.Y), or V(rocmX.Y.Z) for a point "
                     'release it publishes on its own).',
    },
}


BENCHMARKS = ('gemm', 'bandwidth', 'resnet50', 'bert')
_VERSION_RE = re.compile(r'[0-9]+\.[0-9]+(\.[0-9]+)?')
# gpu_bench.py's option for each scalar setting, in the order it is given (the rest are built below).
_OPTIONS = (('device', '--device'), ('device_index', '--device-index'), ('gemm_dtypes', '--gemm-dtypes'),
            ('gemm_size', '--gemm-size'), ('bandwidth_mib', '--bandwidth-mib'),
            ('resnet50_batch_size', '--resnet50-batch-size'), ('resnet50_image_size', '--resnet50-image-size'),
            ('bert_batch_size', '--bert-batch-size'), ('bert_seq_len', '--bert-seq-len'),
            ('precision', '--precision'), ('warmup_iters', '--warmup'), ('min_iters', '--min-iters'),
            ('min_seconds', '--min-seconds'))


def wheel_tag(version):
    """PyTorch's wheel index name for a ROCm release, from the release table (rocmX.Y, or a point release's own)."""
    return rocm_release.release(version)['pytorch_index']


def _argument(value):
    if isinstance(value, (list, tuple)):
        return ','.join(str(item) for item in value)
    return str(value)


def plan(node, wanted, stack, host=None, previous=None):
    """wanted: enabled {benchmark: bool}, settings {name: value} (_OPTIONS), power_enabled, power_interval_s, tiny,
    extra_args, python, install_pytorch, venv, rocm_version ('' = the stack-wide one), thresholds, report_src,
    report_src_is_file, fetch_dest.

    Returns the Plan: benchmarks, args (gpu_bench.py's arguments after the script and --output), interpreter,
    rocm_version, wheel_tag. Raises PlanError naming every inconsistent setting.
    """
    del node  # the benchmarks read the GPU themselves
    result = Plan('validate')
    enabled = wanted.get('enabled') or {}
    benchmarks = [name for name in BENCHMARKS if enabled.get(name)]
    version = str(wanted.get('rocm_version') or stack['version'])
    report_src = wanted.get('report_src') or ''
    problems = []
    if not benchmarks and not report_src:
        problems.append('no benchmark is enabled and no rocm_validate_report_src is given: enable at least one '
                        'benchmark (rocm_validate_gemm_enabled, _bandwidth_enabled, _resnet50_enabled, _bert_enabled)')
    thresholds = wanted.get('thresholds')
    if not isinstance(thresholds, dict) or not all(isinstance(figures, dict) for figures in thresholds.values()):
        problems.append('rocm_validate_thresholds must map GPU model names to dicts of figure -> minimum')
    if not wanted.get('fetch_dest'):
        problems.append('rocm_validate_fetch_dest must be a controller folder')
    if report_src and not wanted.get('report_src_is_file'):
        problems.append('rocm_validate_report_src must be an existing controller file, got %r' % report_src)
    if wanted.get('install_pytorch') and not _VERSION_RE.fullmatch(version):
        problems.append('rocm_validate_rocm_version must look like X.Y.Z or X.Y, got %r' % version)
    if problems:
        raise PlanError('rocm_validate settings are inconsistent: %s.' % '; '.join(problems))

    settings = wanted.get('settings') or {}
    args = []
    for key, option in _OPTIONS:
        args += [option, _argument(settings.get(key))]
        if key == 'device_index':
            args += ['--benchmarks', ','.join(benchmarks)]
    args += ['--power', 'auto' if wanted.get('power_enabled') else 'off',
             '--power-interval', _argument(wanted.get('power_interval_s'))]
    if wanted.get('tiny'):
        args.append('--tiny')
    args += [str(item) for item in wanted.get('extra_args') or []]
    result.update(benchmarks=benchmarks, args=args, rocm_version=version,
                  wheel_tag=wheel_tag(version) if _VERSION_RE.fullmatch(version) else None,
                  interpreter=('%s/bin/python' % wanted.get('venv')) if wanted.get('install_pytorch')
                  else wanted.get('python'))
    return result
