# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What rocm_sdk changes: the ROCm packages at exactly the wanted release(s), the MIOpen kernel packages of the
host's GPUs, the /opt/rocm alternative and the holds. Pure; the package plan itself is rocm_packages.plan()."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
import time

from ansible_collections.gpulab.rocm.plugins.module_utils.planning import gpu_support, rocm_packages, rocm_release
from ansible_collections.gpulab.rocm.plugins.module_utils.parsers.gfx import is_gfx_target
from ansible_collections.gpulab.rocm.plugins.module_utils.planning.plan_common import Plan, PlanError

# The phase's contract (docs/plan-contract.md): the probe sections it reads, the keys of its result that its
# role reads, and how the plan pass treats it; planner.REGISTRY collects it.
PHASE = {
    'name': 'sdk',
    'role': 'rocm_sdk',
    'changes_host': True,
    'sections': ('os', 'packages', 'apt', 'alternatives', 'gpus'),
    'keys': {
        'repair': 'Whether an interrupted dpkg run must be finished first.',
        'refresh_lists': "Whether the distribution's lists are refreshed before asking apt.",
        'query': 'Package names to ask apt about (its candidates decide the package change).',
        'orphan_check': 'Whether apt autoremove is read before purging the distribution packages.',
        'packages': 'The package change once the candidates are known: install, prepurge, purge, download_first, '
                    'unpublished; null before.',
        'refresh_after': 'Probe sections to read again after the package change.',
        'purge_orphans': 'Dependencies only the purged distribution packages needed, to remove.',
        'alternative': 'The release /opt/rocm must point at now, or null.',
        'set_alternative': 'The release /opt/rocm is set to after a package change (side by side), or null.',
        'allow_held': 'Whether apt may change held packages (rocm_sdk_hold owns the holds).',
        'holds': 'Package name to V(hold) for the holds to set.',
    },
}


# The distribution's own ROCm packages per OS (rocm-reference.md section 9): Debian 13's are resolved against its
# real archive in the distro scenario (test_distro_defaults.py), Ubuntu 24.04's follow its package index.
DISTRO_DEFAULTS = {
    'Debian 13': ['rocminfo', 'rocm-smi', 'amd-smi', 'hipcc', 'libamdhip64-dev', 'librocblas-dev'],
    'Ubuntu 24.04': ['rocminfo', 'rocm-smi', 'hipcc', 'libamdhip64-dev', 'librocblas-dev'],
}
# A Debian package name (policy 5.6.1); anything else could reach apt as an option or a pattern.
_PACKAGE_RE = re.compile(r'^[a-z0-9][a-z0-9+.-]+\Z')


def check(wanted):
    problems = []
    for key in ('packages', 'dev_packages', 'extra_packages', 'distro_packages'):
        bad = [name for name in wanted.get(key) or [] if not isinstance(name, str) or not _PACKAGE_RE.match(name)]
        if bad:
            problems.append('rocm_sdk_%s holds names that are not Debian package names: %s (lower case letters, '
                            'digits, "+", "-", "."; no leading "-")' % (key, ', '.join(repr(name) for name in bad)))
    bad = [t for t in wanted.get('kdb_gfx_targets') or [] if not is_gfx_target(t)]
    if bad:
        problems.append('rocm_sdk_kdb_gfx_targets holds values that are not gfx targets such as gfx90a: %s'
                        % ', '.join(repr(t) for t in bad))
    return problems


def gfx_targets(node, wanted, version):
    """The ISA each GPU runs (an overridden gfx1031 runs gfx1030 code, so it needs gfx1030's kernels)."""
    gpus = wanted.get('kdb_gfx_targets') or gpu_support.amd_gpus(node.get('gpu_pci') or {})
    return gpu_support.effective_targets(gpus, version)


def core_packages(targets, dev):
    """The Core SDK packages of a node, with rocm_packages.SERIES for each release's X.Y: the runtime of exactly its
    GPU targets (amdrocm<X.Y>-<target>, which pulls the host part, rocBLAS/hipBLAS in amdrocm-blas and MIOpen with
    its kernel database in amdrocm-dnn), or every target's (amdrocm<X.Y>) where it has no AMD GPU; a build node also
    the development meta-package of the same targets (amdrocm-core-dev<X.Y>[-<target>]). AMD's 10.0 install page
    and its 7.13 packages page (rocm-reference.md 13); docs/releases.md maps the legacy packages onto these."""
    series = rocm_packages.SERIES
    names = ['amdrocm%s-%s' % (series, target) for target in targets] or ['amdrocm%s' % series]
    if dev:
        names += ['amdrocm-core-dev%s-%s' % (series, target) for target in targets] or ['amdrocm-core-dev%s' % series]
    return names


def spec(node, wanted, stack):
    """What rocm_packages.plan() works from."""
    os_info = node.get('os') or {}
    os_key = '%s %s' % (os_info.get('distribution'), os_info.get('version'))
    core = rocm_release.release(stack['version'])['stream'] == 'core'
    kdb = wanted.get('kdb_enabled', True) and not core
    targets = gfx_targets(node, wanted, stack['version']) if kdb or core else []
    if core:
        required = core_packages(targets, wanted.get('dev_packages_enabled'))
    else:
        required = list(wanted.get('packages') or [])
        if wanted.get('dev_packages_enabled'):
            required += list(wanted.get('dev_packages') or [])
    required += list(wanted.get('extra_packages') or [])
    return {
        'state': wanted.get('state', 'present'),
        'source': stack['install_source'],
        'stream': 'core' if core else 'legacy',
        'default': stack['version'],
        'versions': stack['versions'],
        'packages': required,
        'kdb_default': gpu_support.kdb_packages(targets, stack['version']) if kdb else [],
        'kdb_targets': targets if kdb else [],
        'gfx_targets': targets,
        'distro_packages': list(wanted.get('distro_packages') or DISTRO_DEFAULTS.get(os_key, [])),
        'os': os_key,
    }


def _installed(node):
    return dict((name, {'status': abbrev, 'version': version, 'installed': abbrev[1] not in 'nc'})
                for name, (abbrev, version) in (node.get('packages') or {}).items())


def plan(node, wanted, stack, host=None, previous=None):
    """wanted: state, packages, dev_packages_enabled, dev_packages, extra_packages, distro_packages, hold,
    kdb_enabled, kdb_gfx_targets, cache_valid_time. With the probe's 'candidates' (apt-cache madison of the names in
    'query'), the package changes; without them, whether anything must change at all.

    previous: this phase's last plan in this run (the action keeps it): what apt would autoremove before the
    package change comes from there. host: in check mode (its check_mode), packages apt does not offer are a
    notice, not a refusal (the repository may not be configured yet).

    Returns the Plan: refresh_after (probe sections to read again after the package change),
    repair (finish an interrupted dpkg run), refresh_lists (distro source, stale lists), query
    (names to look up), packages (rocm_packages.plan's result once candidates are known), alternative (the release
    /opt/rocm must point at), holds {name: hold|install}.
    """
    result = Plan('sdk')
    problems = check(wanted)
    if problems:
        raise PlanError('rocm_sdk: %s.' % '; '.join(problems))
    package_spec = spec(node, wanted, stack)
    if package_spec['state'] == 'present' and package_spec['source'] == 'distro' and not package_spec['distro_packages']:
        raise PlanError("rocm_sdk: no list of the distribution's ROCm packages for %s (known: %s). Set "
                        'rocm_sdk_distro_packages to the package names of this OS, or use rocm_install_source amd.'
                        % (package_spec['os'], ', '.join(sorted(DISTRO_DEFAULTS))))
    installed = _installed(node)
    pending = node.get('dpkg_pending') or {}
    result.update(repair=bool(pending.get('packages') or pending.get('journal')), refresh_lists=False, query=[],
                  packages=None, alternative=None, set_alternative=None, holds={}, orphans_before=None,
                  purge_orphans=[], orphan_check=False, refresh_after=[],
                  gfx_targets=package_spec['gfx_targets'],
                  spec=package_spec)
    if result['repair']:
        result.change('finish the interrupted dpkg run', 'packages left half installed: %s'
                      % ', '.join(pending.get('packages') or ['(dpkg journal)']))
    fix_broken = node.get('fix_broken')
    if fix_broken is not None:
        rocm = set(rocm_packages.removable(package_spec, installed))
        foreign = [name for name in fix_broken['removes'] if name not in rocm]
        if foreign:
            raise PlanError("rocm_sdk: finishing the interrupted dpkg run (apt-get install --fix-broken) would also "
                            'remove %s, which are not ROCm packages; the role does not remove what it did not install. '
                            'Look at `apt-get --simulate install --fix-broken`, repair it by hand, then run again.'
                            % ', '.join(foreign))

    candidates = node.get('candidates')
    if candidates is None:
        # Decide from what is installed whether apt must be asked at all: on a converged host it need not.
        needed, why = _needs_change(package_spec, installed)
        if needed:
            result['query'] = rocm_packages.query_names_from(package_spec, installed)
            distro_names = set(package_spec['distro_packages'])
            result['orphan_check'] = package_spec['source'] != 'distro' or package_spec['state'] != 'present'
            result['orphan_check'] = result['orphan_check'] and any(
                name in distro_names and info['installed'] and not rocm_packages.amd_release(name, info['version'])
                for name, info in installed.items())
            result.change('change the ROCm packages', why)
            if package_spec['source'] == 'distro' and package_spec['state'] == 'present':
                newest = (node.get('apt') or {}).get('newest_release_mtime')
                age = time.time() - newest if newest else None
                if age is None or age > int(wanted.get('cache_valid_time') or 0):
                    result['refresh_lists'] = True
                    result.change("refresh the distribution's package lists", 'they are %s' % (
                        'missing' if age is None else '%d s old (rocm_sdk_cache_valid_time)' % age))
    else:
        available = dict((name, list(versions)) for name, versions in candidates.items())
        packages = rocm_packages.plan_from(package_spec, installed, available)
        if packages['missing'] and node.get('sources_error'):
            # apt-cache read no source at all: the packages are not missing, another list file is broken.
            raise PlanError('rocm_sdk: apt cannot read the host\'s apt sources, so it offers none of %s: %s. Fix or '
                            'remove that file, then run again. No package was changed (the ROCm sources that '
                            'rocm_repo wrote stay).' % (', '.join(packages['missing']), node['sources_error']))
        if packages['missing'] and not (host or {}).get('check_mode'):
            raise PlanError('rocm_sdk: not in the configured apt repositories: %s. Check the package names '
                            '(rocm_sdk_packages, rocm_sdk_extra_packages%s) and that the repository holds this '
                            'release.%s' % (
                                ', '.join(packages['missing']),
                                ', rocm_sdk_distro_packages' if package_spec['source'] == 'distro' else '',
                                _no_package_yet(previous)))
        result['packages'] = packages
        # Purging the distribution's packages orphans the dependencies they brought: note what apt would already
        # autoremove now, so that only the orphans of this run are removed afterwards (never the admin's).
        result['orphans_before'] = node.get('autoremove') if (
            packages['prepurge_autoremove'] or packages['purge_autoremove']) else None
        # What the package change makes stale, read again after it (the orphans only where they are compared), with
        # the releases under /opt that rocm_modules plans from and the kernel side rocm_verify checks (their PHASEs'
        # derived_from_packages): one read for all.
        result['refresh_after'] = ['packages', 'tools', 'ldconfig', 'alternatives', 'versions', 'modules',
                                   'driver'] + (
            ['autoremove'] if result['orphans_before'] is not None else [])
        for key, text in (('prepurge', 'remove before the install'), ('install', 'install'),
                          ('purge', 'remove')):
            if packages[key]:
                result.change('%s %s' % (text, ', '.join(packages[key])), 'the wanted ROCm release(s) %s' % (
                    ', '.join([stack['version']] + [v for v in stack['versions'] if v != stack['version']])))

    before = (previous or {}).get('orphans_before')
    if before is not None and node.get('autoremove') is not None:
        result['purge_orphans'] = sorted(set(node['autoremove']) - set(before))
        if result['purge_orphans']:
            result.change('remove %s' % ', '.join(result['purge_orphans']), "only the distribution's ROCm packages "
                          'that were just purged needed them')

    # The Core SDK's /opt/rocm links are AMD's own alternatives (the amdrocm meta-package): not ours to point.
    if package_spec['state'] == 'present' and package_spec['source'] == 'amd' and package_spec['stream'] == 'legacy':
        prefix = rocm_release.release(stack['version'])['prefix']
        # Side by side, the highest release wins /opt/rocm unless it is set: set it after every package change.
        result['set_alternative'] = prefix if package_spec['versions'] else None
        alt = (node.get('alternatives') or {}).get('rocm') or {}
        if alt.get('value') != prefix and prefix in (alt.get('choices') or []):
            result['alternative'] = prefix
            result.change('point /opt/rocm at %s' % prefix, 'it points at %s' % (alt.get('value') or 'nothing'))

    if package_spec['state'] == 'present' and wanted.get('hold'):
        # rocm_sdk_hold: the role owns the holds of the wanted packages (it moves them on a release change).
        for name, _release, _required in rocm_packages.wanted(package_spec):
            info = installed.get(name)
            if info and info['installed'] and info['status'][0] != 'h':
                result['holds'][name] = 'hold'
        if result['holds']:
            result.change('hold %s' % ', '.join(sorted(result['holds'])), 'rocm_sdk_hold is true')
    held = sorted(name for name, info in installed.items() if info['status'][0] == 'h')
    touched = set(_moving(package_spec, installed))
    if result['packages']:
        for key in ('prepurge', 'install', 'purge'):
            touched.update(item.split('=', 1)[0] for item in result['packages'][key])
    blocked = [name for name in held if name in touched]
    result['allow_held'] = bool(wanted.get('hold'))
    if blocked and not wanted.get('hold'):
        raise PlanError('rocm_sdk: %s %s held (apt-mark hold) and the wanted change moves or removes %s; the role '
                        'leaves holds it does not own alone. Release the hold (apt-mark unhold %s) or set '
                        'rocm_sdk_hold: true to let the role own the holds of its packages.%s'
                        % (', '.join(blocked), 'is' if len(blocked) == 1 else 'are',
                           'it' if len(blocked) == 1 else 'them', ' '.join(blocked),
                           _no_package_yet(previous) if candidates is not None else ''))
    return result


def _no_package_yet(previous):
    """What rocm_sdk itself had done when a refusal comes from apt's answer (its plan before it says)."""
    return ' rocm_sdk had installed or removed no package yet%s.' % (
        ' (it had finished the interrupted dpkg run first)' if (previous or {}).get('repair') else '')


def _moving(package_spec, installed):
    """Installed packages the wanted state moves to another release or removes, known before apt is asked: a hold
    on one of them is refused in the plan pass, before any change."""
    if package_spec['state'] != 'present':
        return rocm_packages.removable(package_spec, installed)
    moving = [name for name, release, _required in rocm_packages.wanted(package_spec)
              if release and (installed.get(name) or {}).get('installed')
              and rocm_packages.amd_release(name, installed[name]['version']) != release]
    return moving + list(rocm_packages.leftovers(package_spec, installed))


def _needs_change(package_spec, installed):
    """(True, why) when the installed packages are not exactly the wanted ones; (False, None) when they are."""
    if package_spec['state'] != 'present':
        leftover = rocm_packages.removable(package_spec, installed)
        return (bool(leftover), 'rocm_sdk_state is absent: %s installed' % ', '.join(leftover[:8]) if leftover else None)
    missing, wrong = [], []
    for name, release, required in rocm_packages.wanted(package_spec):
        info = installed.get(name)
        if not info or not info['installed']:
            if required:
                missing.append(name)
            continue
        if release and rocm_packages.amd_release(name, info['version']) != release:
            wrong.append('%s %s' % (name, info['version']))
    optional_missing = [name for name, _release, required in rocm_packages.wanted(package_spec)
                        if not required and not (installed.get(name) or {}).get('installed')]
    leftover = rocm_packages.leftovers(package_spec, installed)
    reasons = []
    if missing:
        reasons.append('not installed: %s' % ', '.join(missing))
    if wrong:
        reasons.append('at another release: %s' % ', '.join(wrong))
    if leftover:
        reasons.append('left over from another release or source: %s' % ', '.join(leftover))
    if optional_missing and not reasons:
        reasons.append('MIOpen kernel packages not installed (if the repository has them): %s'
                       % ', '.join(optional_missing))
    return (bool(reasons), '; '.join(reasons) or None)
