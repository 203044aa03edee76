# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What rocm_validate runs: which benchmarks with which arguments, with which Python, which PyTorch wheels from which
index for the release, and whether the settings and thresholds hold together. Pure; gpulab.rocm.plan calls plan()
for the phase 'validate' (it reads the GPUs of the PCI bus only for the wheels of a ROCm Core SDK release: the
benchmarks themselves look at the GPU)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpulab.rocm.plugins.module_utils.planning import gpu_support, rocm_release
from ansible_collections.gpulab.rocm.plugins.module_utils.planning.plan_common import Plan, PlanError

# The phase's contract (docs/plan-contract.md): the probe sections it reads, the keys of its result that its
# role reads, and how the plan pass treats it; planner.REGISTRY collects it.
PHASE = {
    'name': 'validate',
    'role': 'rocm_validate',
    'changes_host': False,
    # The GPUs of the PCI bus, for the device extras of a Core release's wheels; the benchmarks look at the GPU
    # themselves.
    'sections': ('gpus',),
    'keys': {
        'interpreter': 'The Python that runs gpu_bench.py (the venv\'s when PyTorch is installed there).',
        'args': "gpu_bench.py's arguments after the script and --output (benchmarks and their settings).",
        'index_url': "The release's wheel index: PyTorch's (V(https://download.pytorch.org/whl/rocmX.Y), or "
                     'V(rocmX.Y.Z) for a point release it publishes on its own) for a legacy release, AMD\'s own for '
                     'a ROCm Core SDK release; null where rocm_validate_rocm_version is no release.',
        'pytorch_packages': 'What pip installs into the venv: C(rocm_validate_pytorch_packages), for a ROCm Core SDK '
                            "release with the host's GPU targets as device extras of torch and torchvision and the "
                            "release's rocm package pinned.",
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
# PyTorch's index for a legacy release, followed by the release table's index name (rocm-reference.md 8.1).
PYTORCH_INDEX = 'https://download.pytorch.org/whl/'
# AMD publishes the Core SDK's wheels (rocm and torch, with their dependencies) in one index per repository stream,
# not on download.pytorch.org. The stable stream's: TheRock build_tools/setup_venv.py ROCM_INDEX_URLS_MAP['stable']
# (its central index, RFC0012-Repo-Structure.md; rocm-reference.md 13's /rocm/pytorch/whl-next is the PyTorch
# folder behind it); the 7.14 line's release channel: TheRock docs/development/s3_buckets.md, therock-release-python.
CORE_INDEXES = {
    'stable': 'https://stable.repo.amd.com/rocm/whl-next/',
    'multi-arch': 'https://repo.amd.com/rocm/whl-multi-arch/',
}
# Packages whose GPU code comes as device extras, torch[device-gfx942] (TheRock RELEASES.md, "Installing multi-arch
# PyTorch Python packages": without one, only the host code is installed); torchaudio has none. A name with extras
# or a URL of its own is left as written.
_DEVICE_PACKAGE_RE = re.compile(r'(torch|torchvision)(\s*[=<>!~].*)?', re.IGNORECASE)
_ROCM_PACKAGE_RE = re.compile(r'rocm\s*(\[|[=<>!~]|\Z)', re.IGNORECASE)


def wheel_tag(version):
    """PyTorch's wheel index name for a legacy ROCm release, from the release table (rocmX.Y, or a point release's
    own); None for a ROCm Core SDK release (index_url names AMD's index)."""
    return rocm_release.release(version)['pytorch_index']


def index_url(version):
    """The wheel index for a ROCm release: PyTorch's for a legacy one, AMD's for its stream of the Core SDK."""
    info = rocm_release.release(version)
    if info['stream'] != 'core':
        return PYTORCH_INDEX + info['pytorch_index']
    # The wheel index of the release's repository stream.
    stream = next(name for name, (url, _key) in rocm_release.CORE_STREAMS.items() if url == info['core_url'])
    return CORE_INDEXES[stream]


def pytorch_packages(packages, version, node):
    """The requirements pip installs. A legacy release's index holds one build per package: as given. AMD's Core
    index holds every Core release and splits the GPU code into device extras: torch and torchvision get those of
    the host's GPUs (the ISA each runs, as the login environment's PYTORCH_ROCM_ARCH; device-all where the bus shows
    no AMD GPU), and the release's rocm package is pinned, which picks the torch built for it (torch depends on
    rocm[libraries] of its own release; TheRock RELEASES.md)."""
    info = rocm_release.release(version)
    packages = [str(item) for item in packages or []]
    if info['stream'] != 'core':
        return packages
    targets = gpu_support.effective_targets(gpu_support.amd_gpus((node or {}).get('gpu_pci') or {}), version)
    extras = ','.join('device-%s' % target for target in targets) or 'device-all'
    result = []
    for item in packages:
        match = _DEVICE_PACKAGE_RE.fullmatch(item.strip())
        result.append('%s[%s]%s' % (match.group(1), extras, match.group(2) or '') if match else item)
    if result != packages and not any(_ROCM_PACKAGE_RE.match(item.strip()) for item in packages):
        result.append('rocm==%s' % info['version'])
    return result


def _version_problem(version):
    """Why the wheels cannot follow a release (not a release number, or one the table refuses), or None."""
    if not _VERSION_RE.fullmatch(version):
        return 'rocm_validate_rocm_version must look like X.Y.Z or X.Y, got %r' % version
    try:
        rocm_release.release(version)
    except ValueError as exc:
        return 'rocm_validate_rocm_version: %s' % exc
    return None


def _argument(value):
    if isinstance(value, (list, tuple)):
        return ','.join(str(item) for item in value)
    return str(value)


def plan(node, wanted, stack, host=None, previous=None):
    """wanted: enabled {benchmark: bool}, settings {name: value} (_OPTIONS), power_enabled, power_interval_s, tiny,
    extra_args, python, install_pytorch, venv, pytorch_packages, rocm_version ('' = the stack-wide one), thresholds,
    report_src, report_src_is_file, fetch_dest.

    Returns the Plan: benchmarks, args (gpu_bench.py's arguments after the script and --output), interpreter,
    rocm_version, wheel_tag, index_url, pytorch_packages. Raises PlanError naming every inconsistent setting.
    """
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
    unknown = _version_problem(version)
    if wanted.get('install_pytorch') and unknown:
        problems.append(unknown)
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
                  wheel_tag=None if unknown else wheel_tag(version),
                  index_url=None if unknown else index_url(version),
                  pytorch_packages=[] if unknown else pytorch_packages(wanted.get('pytorch_packages'), version, node),
                  interpreter=('%s/bin/python' % wanted.get('venv')) if wanted.get('install_pytorch')
                  else wanted.get('python'))
    return result
