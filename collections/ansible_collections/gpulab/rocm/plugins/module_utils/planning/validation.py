# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Threshold checks over the JSON report of roles/rocm_validate/files/gpu_bench.py (schema: docs/validation.md).
Pure; the filters validation_failures and validation_thresholds call it."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math

from collections.abc import Mapping

UNKNOWN_MODEL_POLICIES = ('report', 'fail')


def _normalise(name):
    return ' '.join(str(name).split()).lower()


def model_thresholds(report, thresholds):
    """(model name, its thresholds or None): exact key first, then case- and blank-insensitive."""
    if not isinstance(report, Mapping):
        raise ValueError('the validation report must be a dict (the parsed JSON of gpu_bench.py), got %s'
                         % type(report).__name__)
    device = report.get('device')
    if not isinstance(device, Mapping) or not device.get('name'):
        raise ValueError('the validation report has no device.name: is it a gpu_bench.py report '
                         '(schema_version %s)?' % report.get('schema_version'))
    if not isinstance(thresholds, Mapping):
        raise ValueError('thresholds must be a dict of GPU model name -> {figure: minimum}, got %s'
                         % type(thresholds).__name__)
    model = device['name']
    if model in thresholds:
        return model, thresholds[model]
    wanted = _normalise(model)
    for key, value in thresholds.items():
        if _normalise(key) == wanted:
            return model, value
    return model, None


def _minimum(model, figure, value):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError('threshold %s for %r must be a number, got %r: fix rocm_validate_thresholds'
                         % (figure, model, value))
    return float(value)


def failures(report, thresholds, unknown_model='report', scale=1.0):
    """Every figure of the report under its model's threshold (times scale), as sentences; [] when all pass.

    A threshold whose figure is missing from the report fails too (the benchmark broke or was not run), so a
    validation can never pass by measuring nothing. A model without thresholds passes (report only) unless
    unknown_model is 'fail'.
    """
    if unknown_model not in UNKNOWN_MODEL_POLICIES:
        raise ValueError('unknown_model must be one of %s, got %r' % (', '.join(UNKNOWN_MODEL_POLICIES),
                                                                      unknown_model))
    if isinstance(scale, bool) or not isinstance(scale, (int, float)) or math.isnan(scale) or scale <= 0:
        raise ValueError('scale must be a number > 0 (rocm_validate_threshold_scale), got %r' % (scale,))
    model, wanted = model_thresholds(report, thresholds)
    if wanted is None:
        if unknown_model == 'fail':
            return ['no thresholds for GPU model %r (rocm_validate_unknown_model: fail): add an entry named '
                    'exactly as the report\'s device.name to rocm_validate_thresholds' % model]
        return []
    if not isinstance(wanted, Mapping):
        raise ValueError('thresholds for %r must be a dict of figure -> minimum, got %s'
                         % (model, type(wanted).__name__))
    figures = report.get('figures')
    if not isinstance(figures, Mapping):
        raise ValueError('the validation report has no figures dict')
    errors = report.get('errors') or {}
    found = []
    for figure in sorted(wanted):
        minimum = _minimum(model, figure, wanted[figure]) * scale
        value = figures.get(figure)
        if value is None:
            bench = figure.split('_', 1)[0]
            cause = ('benchmark %s failed: %s' % (bench, errors[bench])) if bench in errors else \
                'not measured: enable its benchmark or remove the threshold'
            found.append('%s: missing from the report, threshold %g (%s)' % (figure, minimum, cause))
        elif not isinstance(value, (int, float)) or isinstance(value, bool) or value < minimum:
            found.append('%s = %s is under its threshold %g' % (figure, value, minimum))
    return ['%s: %s' % (model, line) for line in found]


def remote_dir_problems(path, folder, parent, uid=0):
    """Why rocm_validate_remote_dir is no place for root's private folder; [] when it is.

    folder, parent: ansible.builtin.stat results (follow: false) of the folder and of its parent; uid: who runs
    the benchmarks. The private folder made there is 0700, but whoever may write the folder itself can rename it
    away and put one of their own, with their own gpu_bench.py, under the same name: only the sticky bit (as on
    /tmp and /var/tmp) stops that. The same holds one level up for the folder itself."""
    problems = []
    for what, name, stat in (('rocm_validate_remote_dir', path, folder),
                             ('the parent of rocm_validate_remote_dir', _parent(path), parent)):
        stat = stat if isinstance(stat, Mapping) else {}
        if not stat.get('exists'):
            problems.append('%s %s does not exist' % (what, name))
            continue
        if stat.get('islnk') or not stat.get('isdir'):
            problems.append('%s %s is %s, not a folder (root follows no link there)'
                            % (what, name, 'a symlink' if stat.get('islnk') else 'not a folder'))
            continue
        mode = int(str(stat.get('mode') or '0'), 8)
        if stat.get('uid') not in (0, uid):
            problems.append('%s %s belongs to uid %s: its owner can rename what root makes there'
                            % (what, name, stat.get('uid')))
        elif mode & 0o022 and not mode & 0o1000:
            problems.append('%s %s has mode %04o: its %s may rename the private folder made there and put their own '
                            'in its place (no sticky bit)' % (what, name, mode,
                                                              'group' if not mode & 0o002 else 'other users'))
    return problems


def _parent(path):
    parent = str(path).rstrip('/').rsplit('/', 1)[0]
    return parent or '/'
