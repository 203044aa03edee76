# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which ROCm packages to install, replace and remove: the plan behind rocm_sdk's version switch, side-by-side
releases, install-source switch and uninstall. Pure functions over `dpkg-query` and `apt-cache madison` output.

Terms:
- AMD package: its version has AMD's form `<component>.<MMmmpp>-<build>~<NN.NN>` (rocblas 4.2.4.60204-139~22.04
  is ROCm 6.2.4; reference 1.2). The amdgpu driver's versions end in `.22.04`, not `~22.04`, so the driver is
  never touched here.
- versioned package: an AMD package whose name ends with its own release, X.Y.Z (rocm-core6.2.4; reference 4.3).
  A plain and a versioned package of one release install the same files, so they never coexist.
- distro package: a package of the distribution's own ROCm list (rocminfo 6.1.2-2 in Debian 13; reference 9).
- Core package: a package of AMD's ROCm Core SDK (7.14 on): its name starts with amdrocm, carries the release's X.Y
  (amdrocm10.1-gfx942), and its version is the release itself, X.Y.Z-<build> (10.0.0-4; rocm-reference.md 13). A
  patch release replaces X.Y's packages in place; releases of two X.Y install side by side by design.
- stream: legacy (AMD packages) or core (Core packages). AMD says to uninstall the legacy stream before installing
  the Core SDK ("If you have ROCm 7.2.4 or older installed, please uninstall it"), so a move between the streams
  removes the other stream's packages first.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpulab.rocm.plugins.module_utils.apt import apt_errors
from ansible_collections.gpulab.rocm.plugins.module_utils.planning import gpu_support
from ansible_collections.gpulab.rocm.plugins.module_utils.planning import rocm_release as rr

_AMD_VERSION_RE = re.compile(r'\.(\d{5,6})-\d+~\d+\.\d+$')
_CORE_VERSION_RE = re.compile(r'^(\d+)\.(\d+)\.(\d+)-')
# The placeholder plan_sdk puts in a Core package name, filled with each wanted release's X.Y.
SERIES = '{series}'
# dpkg-query --showformat '${db:Status-Abbrev}\t${Package}\t${Version}\n'
DPKG_QUERY_FORMAT = '${db:Status-Abbrev}\\t${Package}\\t${Version}\\n'


def amd_code(version):
    """'4.2.4.60204-139~22.04' -> '60204'; None for a version that is not AMD's ROCm form."""
    match = _AMD_VERSION_RE.search(str(version))
    return match.group(1) if match else None


def release_of_code(code):
    """'60204' -> '6.2.4' (MMmmpp; reference 1.2)."""
    return '%d.%d.%d' % (int(code[:-4]), int(code[-4:-2]), int(code[-2:]))


def amd_release(name, version):
    """The release 'X.Y.Z' an AMD package belongs to, of either stream; None for any other package."""
    code = amd_code(version)
    if code:
        return release_of_code(code)
    match = _CORE_VERSION_RE.match(str(version)) if str(name).startswith('amdrocm') else None
    return '%s.%s.%s' % match.groups() if match else None


def stream_of(name, version):
    """'legacy', 'core' or None (not AMD's)."""
    if amd_code(version):
        return 'legacy'
    return 'core' if amd_release(name, version) else None


def parse_installed(lines):
    """dpkg-query lines -> {name: {'status': 'ii', 'version': ..., 'installed': bool}}.

    'installed' means files on disk (unpacked or configured, even half-configured); 'rc' (removed, config files
    left) and 'pn' (purged) are not installed but 'rc' still has something to purge.
    """
    packages = {}
    for line in lines:
        parts = line.rstrip('\n').split('\t')
        if len(parts) != 3 or not parts[1]:
            continue
        status, name, version = parts[0].strip(), parts[1].split(':')[0], parts[2]
        if len(status) < 2 or status[1] == 'n':
            continue
        packages[name] = {'status': status, 'version': version, 'installed': status[1] not in 'nc'}
    return packages


def parse_madison(lines):
    """apt-cache madison lines -> {name: [version, ...]} in apt's order (newest first)."""
    versions = {}
    for line in lines:
        parts = [part.strip() for part in line.split('|')]
        if len(parts) < 3 or not parts[0] or not parts[1]:
            continue
        versions.setdefault(parts[0], [])
        if parts[1] not in versions[parts[0]]:
            versions[parts[0]].append(parts[1])
    return versions


def _releases(versions, default):
    """Full versions, default first, each once ('6.2' and '6.2.0' are one release)."""
    default_full = rr.release(default)['version']
    fulls = []
    for version in versions or [default]:
        full = rr.release(version)['version']
        if full not in fulls:
            fulls.append(full)
    if default_full not in fulls:
        raise ValueError('The default ROCm release %s is not among the side-by-side releases %s: add it to the list '
                         '(rocm_versions) or choose the default among them (rocm_version).'
                         % (default, ', '.join(fulls)))
    fulls.remove(default_full)
    return [default_full] + fulls


def _is_versioned(name, release):
    """A legacy package named for its release (rocm-core6.2.4)."""
    return name.endswith(release) and len(name) > len(release)


def wanted(spec):
    """[(name, release or None, required)] that the spec asks for, in order."""
    if spec.get('state', 'present') != 'present':
        return []
    if spec.get('source', 'amd') == 'distro':
        return [(name, None, True) for name in dict.fromkeys(spec.get('distro_packages') or [])]
    releases = _releases(spec.get('versions'), spec['default'])
    versioned = bool(spec.get('versions'))
    result = []
    for release in releases:
        if spec.get('stream') == 'core':
            # Names carry X.Y: each release its own set; a name without the placeholder (an extra package) once.
            series = rr.release(release)['series']
            result.extend((name.replace(SERIES, series), release, True) for name in dict.fromkeys(spec['packages'])
                          if SERIES in name or release == releases[0])
            continue
        suffix = release if versioned else ''
        if release == releases[0]:
            kdb = spec.get('kdb_default') or []
        else:
            kdb = gpu_support.kdb_packages(spec.get('kdb_targets') or [], release)
        result.extend((name + suffix, release, True) for name in dict.fromkeys(spec.get('packages') or []))
        result.extend((name + suffix, release, False) for name in dict.fromkeys(kdb))
    return result


def query_names(spec, installed_lines):
    """Names to look up with apt-cache madison: the wanted ones and the installed ROCm ones (they may be replaced)."""
    return query_names_from(spec, parse_installed(installed_lines))


def query_names_from(spec, installed):
    names = [name for name, _release, _required in wanted(spec)]
    names += sorted(name for name, info in installed.items()
                    if info['installed'] and (amd_release(name, info['version'])
                                              or name in (spec.get('distro_packages') or [])))
    return list(dict.fromkeys(names))


def removable(spec, installed):
    """What an uninstall purges: every AMD ROCm package of both streams and the distribution's listed ones (config
    files too)."""
    distro_names = set(spec.get('distro_packages') or [])
    return sorted(name for name, info in installed.items()
                  if amd_release(name, info['version']) or name in distro_names)


def leftovers(spec, installed):
    """Installed packages the spec does not want: other releases', the other stream's, the other naming (plain vs
    versioned) of a wanted legacy release, the other install source's, and config files left by removed AMD
    packages."""
    amd = dict((name, info) for name, info in installed.items() if amd_release(name, info['version']))
    distro_names = set(spec.get('distro_packages') or [])
    if spec.get('source', 'amd') == 'distro':
        return sorted(amd)
    releases = set(_releases(spec.get('versions'), spec['default']))
    stream = spec.get('stream', 'legacy')
    versioned = bool(spec.get('versions'))
    found = []
    for name, info in sorted(amd.items()):
        release = amd_release(name, info['version'])
        fits = info['installed'] and release in releases and stream_of(name, info['version']) == stream
        if fits and stream == 'legacy':
            fits = _is_versioned(name, release) == versioned
        if not fits:
            found.append(name)
    found += sorted(name for name in installed if name in distro_names and name not in amd)
    return found


def plan(spec, installed_lines, madison_lines):
    """What rocm_sdk does, in order: prepurge, install, purge. See the module docstring for the terms.

    spec: state (present|absent), source (amd|distro), default (ROCm version), versions (side-by-side list; any
    entry means versioned packages), packages (required names), kdb_default (optional kdb names of the default
    release), kdb_targets (gfx targets for the other releases' kdb names), distro_packages.

    Returns a dict:
      missing      required packages the repositories do not offer ('name (ROCm X.Y.Z)' or 'name')
      unpublished  optional (kdb) packages they do not offer
      install      apt specs, 'name=exact-version' for AMD packages, names for distro ones
      hold         the wanted package names (what rocm_sdk_hold holds)
      prepurge     packages to purge before installing: they share files with what comes (a plain and a versioned
                   package of one release) or they are the other install source's
      purge        packages to purge after installing: other releases' leftovers
      prepurge_autoremove, purge_autoremove   whether distro packages are among them (their dependencies go too)
      download_first   fetch everything before the prepurge, so a download failure leaves the host as it was
      prefix       /opt/rocm-X.Y.Z of the default release (None for distro packages and absent)
    """
    return plan_from(spec, parse_installed(installed_lines), parse_madison(madison_lines))


def plan_from(spec, installed, available):
    """plan() over parsed inputs: installed {name: {'status', 'version', 'installed'}}, available {name: [versions]}."""
    state = spec.get('state', 'present')
    source = spec.get('source', 'amd')
    distro_names = set(spec.get('distro_packages') or [])

    amd_installed = dict((name, info) for name, info in installed.items() if amd_release(name, info['version']))
    distro_installed = sorted(name for name, info in installed.items()
                              if name in distro_names and name not in amd_installed)

    result = {'missing': [], 'unpublished': [], 'install': [], 'hold': [], 'prepurge': [], 'purge': [],
              'prepurge_autoremove': False, 'purge_autoremove': False, 'download_first': False, 'prefix': None}

    if state != 'present':
        result['purge'] = sorted(amd_installed) + distro_installed
        result['purge_autoremove'] = bool(distro_installed)
        return result

    wants = wanted(spec)
    if source == 'distro':
        for name, _release, _required in wants:
            # The probe lists every name it asked about; one apt offers no version of is missing.
            if available.get(name):
                result['install'].append(name)
            else:
                result['missing'].append(name)
        result['hold'] = [name for name, _release, _required in wants]
        # AMD's packages share names with the distribution's (rocminfo, hipcc): they go first.
        result['prepurge'] = sorted(amd_installed)
        result['download_first'] = bool(result['prepurge'] and result['install'])
        return result

    releases = _releases(spec.get('versions'), spec['default'])
    stream = spec.get('stream', 'legacy')
    versioned = bool(spec.get('versions'))
    result['prefix'] = rr.release(releases[0])['prefix']

    install_names = set()
    for name, release, required in wants:
        version = _version_for(name, available.get(name, []), release)
        if version is None:
            result['missing' if required else 'unpublished'].append(
                '%s (ROCm %s)' % (name, release) if required else name)
            continue
        result['install'].append('%s=%s' % (name, version))
        result['hold'].append(name)
        install_names.add(name)

    for name, info in sorted(amd_installed.items()):
        release = amd_release(name, info['version'])
        if name in install_names:
            continue
        if stream_of(name, info['version']) != stream:
            result['prepurge'].append(name)  # the other stream goes before this one comes (AMD's instruction)
            continue
        same_naming = stream == 'core' or _is_versioned(name, release) == versioned
        if release in releases and same_naming:
            if not info['installed']:
                result['purge'].append(name)  # config files of a removed package
            continue  # a dependency of what is wanted
        if release in releases:
            result['prepurge'].append(name)  # plain vs versioned of a wanted release: same files
            continue
        # An older or newer release's package: one exact-version request moves it along with the wanted ones
        # (its dependants require it at the same version); otherwise it is left over and goes after the install.
        # A Core package moves only within its X.Y (a patch release in place); another X.Y is another install.
        target = _moves_to(name, info['version'], releases, stream, versioned)
        carry = _version_for(name, available.get(name, []), target) if target and info['installed'] else None
        if carry:
            result['install'].append('%s=%s' % (name, carry))
            install_names.add(name)
        else:
            result['purge'].append(name)

    if distro_installed:
        result['prepurge'] += distro_installed
        result['prepurge_autoremove'] = True
        # AMD's same-named package (rocminfo, hipcc) replaces it; name it so apt resolves the download before.
        for name in distro_installed:
            carry = _version_for(name, available.get(name, []), releases[0])
            if carry and name not in install_names and not versioned and stream == 'legacy':
                result['install'].append('%s=%s' % (name, carry))
                install_names.add(name)
    result['download_first'] = bool(result['prepurge'] and result['install'])
    return result


def _moves_to(name, version, releases, stream, versioned):
    """The wanted release an installed package of another release moves to, or None (it is removed instead)."""
    if stream == 'core':
        series = rr.release(amd_release(name, version))['series']
        same = [release for release in releases if rr.release(release)['series'] == series]
        return same[0] if same else None
    if versioned or _is_versioned(name, amd_release(name, version)):
        return None
    return releases[0]


def _version_for(name, versions, release):
    """The version apt offers of a package at a release, newest first; None when it offers none."""
    for version in versions:
        if amd_release(name, version) == release:
            return version
    return None


def apt_failure(message):
    """Classify an apt/dpkg failure message: {'kind': ..., 'reason': one clear sentence with the cause and the fix}.

    Kept for the callers of this module (the apt_failure filter, rocm_sdk); the classifier is apt_errors.classify.
    """
    return apt_errors.classify(message)
