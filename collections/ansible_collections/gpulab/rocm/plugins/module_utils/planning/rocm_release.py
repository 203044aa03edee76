# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Facts about a ROCm release number: repo directory spelling, package version code, apt suites, kdb naming, and
from ROCm 7.0 the graphics repository and the amdgpu driver with its own numbers (the release table RELEASES_7).

One source of truth for every role; each fact cites docs/rocm-reference.md (a copy of the team's reference) or,
for the 7.x rows, AMD's own sources named beside them. docs/releases.md shows the table.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

# Ubuntu suites AMD publishes per ROCm series (reference 1.3). Key: (major, minor) or (major, minor, patch).
# 6.2.0 dropped focal; 4.2-5.2 used the suite "ubuntu" (1.4), which we do not support.
_UBUNTU_SUITES = [
    ((5, 3), ('focal', 'jammy')),
    ((6, 0), ('focal', 'jammy')),
    ((6, 2), ('jammy', 'noble')),
    ((7, 0), ('jammy', 'noble')),
]

# PyTorch wheel indexes named for a point release (reference 8.1).
_POINT_RELEASE_INDEXES = ('6.2.4',)

# AMD's instructions reuse Ubuntu suites on Debian (reference 1.3 and 9; for 7.x ROCm/amdgpu-docs docs/conf.py
# debian_version_numbers = [('13', 'noble'), ('12', 'jammy')], the 7.2.3 driver docs).
DEBIAN_SUITES = {'12': 'jammy', '13': 'noble'}
UBUNTU_SUITES = {'20.04': 'focal', '22.04': 'jammy', '24.04': 'noble'}

_VERSION_RE = re.compile(r'^(\d+)\.(\d+)(?:\.(\d+))?\Z')
_DRIVER_RE = re.compile(r'^(\d+)\.(\d+)(?:\.(\d+))?\Z')

# ROCm 7.x releases this collection knows: release -> the amdgpu driver directory released with it (its own numbers
# from 7.0 on; reference 1.1). Sources:
# - AMD GPU Driver release history, ROCm/amdgpu-docs docs/release/versions.rst: 30.10.0 16 Sep 2025, 30.10.1
#   17 Sep 2025, 30.10.2 10 Oct 2025, 30.20.0 30 Oct 2025, 30.20.1 26 Nov 2025, 30.30.0 21 Jan 2026; the ROCm
#   releases of the same days (ROCm/rocminfo release tags rocm-7.0.1 17 Sep, rocm-7.0.2 10 Oct, rocm-7.1.0 30 Oct,
#   rocm-7.1.1 26 Nov 2025, rocm-7.2.0 21 Jan 2026) pair them.
# - ROCm/amdgpu-docs docs/conf.py: rocm 7.0.1 <-> amdgpu_url_version 30.10.1; 7.2.1 <-> 30.30.2 and 7.2.3 <->
#   30.30.3 (PR #97); the ROCm 7.2.2 release notes list 30.30.x (x 0-2) as its newest driver.
# - Directory spelling of an x.y.0 driver: "30.10" is seen beside rocm/apt/7.0 in a third-party apt log (reference
#   1.1); 30.20 and 30.30 follow the same rule, PLAUSIBLE, NOT VERIFIED. Point releases use three components
#   (amdgpu/30.10.2/, AMD's ROCm blog on the Instinct driver version scheme).
RELEASES_7 = (
    ('7.0.0', '30.10'),
    ('7.0.1', '30.10.1'),
    ('7.0.2', '30.10.2'),
    ('7.1.0', '30.20'),
    ('7.1.1', '30.20.1'),
    ('7.2.0', '30.30'),
    ('7.2.1', '30.30.2'),
    ('7.2.2', '30.30.2'),
    ('7.2.3', '30.30.3'),
)
# The oldest driver a 7.x release runs on: the ROCm 7.2.2 release notes list amdgpu 30.30.x, 30.20.x and 30.10.x;
# AMD's driver blog gives each driver a window of one year of ROCm releases either side. A ROCm-numbered driver
# directory (6.4.3) for a 7.x release is refused as too old: the table answers with the release's own driver.
MIN_DRIVER_7 = '30.10'
# From ROCm 7.9 AMD builds ROCm with TheRock: previews 7.9-7.12, then 7.13 on from a separate repository
# (repo.amd.com/rocm/packages-multi-arch, suite stable, its own signing key). Neither the layout nor the key's
# fingerprint could be checked against AMD's own documentation (only third-party installers name them), so this
# collection refuses those releases instead of guessing (docs/releases.md).
THEROCK_FROM = (7, 9)


def version_tuple(version):
    """'6.2.4' -> (6, 2, 4); '6.2' -> (6, 2, 0) (the same release); None when it is no release number. Any release,
    known or not: what a host reports is compared with it, parse_version() decides what the roles install."""
    match = _VERSION_RE.match(str(version).strip())
    if not match:
        return None
    return int(match.group(1)), int(match.group(2)), int(match.group(3) or 0)


def parse_version(version):
    """'6.2.4' -> (6, 2, 4); '6.2' -> (6, 2, 0). Raises ValueError naming the accepted forms."""
    parsed = version_tuple(version)
    if parsed is None:
        raise ValueError("ROCm version %r is not a release number like '6.2.4' or '6.2' (for 6.2.0)" % (version,))
    major, minor, patch = parsed
    if (major, minor) < (5, 3):
        raise ValueError('ROCm %s is older than 5.3, whose repositories used the legacy "ubuntu"/"xenial" suites; '
                         'this collection supports ROCm 5.3 and later' % version)
    if minor > 99 or patch > 99:
        raise ValueError('ROCm version %r has a component above 99' % (version,))
    if (major, minor) >= THEROCK_FROM:
        raise ValueError('ROCm %s is built by TheRock and published only in AMD\'s separate repository '
                         '(repo.amd.com/rocm/packages-multi-arch, its own signing key); this collection has not '
                         'verified that repository\'s layout and key fingerprint from AMD\'s documentation and does '
                         'not install it. Choose a release of the table (newest: %s)' % (version, RELEASES_7[-1][0]))
    return major, minor, patch


def ubuntu_suites(major, minor):
    suites = ()
    for since, names in _UBUNTU_SUITES:
        if (major, minor) >= since:
            suites = names
    return list(suites)


def kdb_scheme(major, minor):
    """MIOpen kernel-db package naming per series (reference 4.4)."""
    if (major, minor) <= (5, 4):
        return 'miopenkernels-{gfx}-{cus}kdb'
    if (major, minor) <= (5, 6):
        return 'miopen-hip-{gfx}-{cus}kdb'
    return 'miopen-hip-{gfx}kdb'


def driver_code(directory):
    """The code an amdgpu-dkms version carries for a driver directory: ROCm's MMmmpp up to 6.4
    (1:6.8.5.60204-... for 6.2.4), the 8-digit driver number from 30.x (6.10.5.30100200-... for 30.10.2, AMD's blog
    on the Instinct driver version scheme). None for a directory that is not a version."""
    match = _DRIVER_RE.match(str(directory or ''))
    if not match:
        return None
    major, minor, patch = int(match.group(1)), int(match.group(2)), int(match.group(3) or 0)
    if major >= 30:
        return '%d%02d%02d00' % (major, minor, patch)
    return '%d%02d%02d' % (major, minor, patch)


def driver_key(directory):
    """A driver directory as a comparable tuple on one scale: ROCm-numbered (6.4.3) ones sort below 30.x."""
    match = _DRIVER_RE.match(str(directory or ''))
    if not match:
        return None
    return tuple(int(part or 0) for part in match.groups())


def known_7x():
    return [version for version, _driver in RELEASES_7]


def release(version):
    """Everything the roles derive from one ROCm version string."""
    major, minor, patch = parse_version(version)
    full = '%d.%d.%d' % (major, minor, patch)
    repo_dir = '%d.%d' % (major, minor) if patch == 0 else full
    drivers = dict(RELEASES_7)
    seven = major >= 7
    return {
        'version': full,
        'major': major,
        'minor': minor,
        'patch': patch,
        'series': '%d.%d' % (major, minor),
        # A .0 release lives in a two-component directory (6.2), a point release in three (6.2.4) (reference 1.2).
        'repo_dir': repo_dir,
        # From 7.0 a second user-space repository, graphics/<repo dir>/ubuntu (rocm.list; reference 1.1: AMD's
        # ROCm/hipThreads README for 7.0.2, the 7.0.1 install page for the RPM form).
        'graphics_dir': repo_dir if seven else None,
        # The amdgpu driver directory: the ROCm directory for 5.3-6.4 (reference 1.1, 11.2); the table's for 7.x,
        # None for a 7.x release the table does not know (rocm_repo_amdgpu_version must then name it).
        'amdgpu_dir': drivers.get(full) if seven else repo_dir,
        'amdgpu_min': MIN_DRIVER_7 if seven else None,
        # AMD documents the 7.x driver line with arch=amd64,i386 for Ubuntu and arch=amd64 for Debian
        # (ROCm/amdgpu-docs package-manager-ubuntu.rst and package-manager-debian.rst).
        'driver_architectures': {'Ubuntu': 'amd64,i386', 'Debian': 'amd64'} if seven else {},
        # Versioned (side-by-side) packages always use three components: rocm-hip-sdk6.2.0 (reference 4.3).
        'package_suffix': full,
        # MMmmpp code inside every package version: 6.2.4 -> 60204 (reference 1.2).
        'code': '%d%02d%02d' % (major, minor, patch),
        'prefix': '/opt/rocm-%s' % full,
        'ubuntu_suites': ubuntu_suites(major, minor),
        'kdb_scheme': kdb_scheme(major, minor),
        # PyTorch's wheel index (reference 8.1): rocmX.Y, except 6.2.4's own; torch 2.10 is built for 7.1 and 2.11
        # for 7.2 (PyTorch RELEASE.md); a rocm7.0 index is assumed by the same rule, not verified.
        'pytorch_index': 'rocm%s' % (full if full in _POINT_RELEASE_INDEXES else '%d.%d' % (major, minor)),
    }


def newest_stable():
    """The newest release of the table: the stack's default."""
    return RELEASES_7[-1][0]


def driver_problem(version, directory):
    """None, or why the driver directory does not fit the release (too old for a 7.x release), with the table's
    answer."""
    info = release(version)
    if not info['amdgpu_min'] or not directory:
        return None
    key = driver_key(directory)
    if key is None:
        return ('rocm_repo_amdgpu_version %s is not a driver version such as %s (ROCm %s uses its own driver '
                'numbers)' % (directory, info['amdgpu_dir'] or info['amdgpu_min'], info['version']))
    if key < driver_key(info['amdgpu_min']):
        return ('rocm_repo_amdgpu_version %s is too old for ROCm %s, which needs amdgpu %s or later (its own driver '
                'is %s): set rocm_repo_amdgpu_version to %s, or leave it empty for the table\'s'
                % (directory, info['version'], info['amdgpu_min'], info['amdgpu_dir'] or 'not in the table',
                   info['amdgpu_dir'] or info['amdgpu_min']))
    return None


def apt_suite(distribution, version, rocm_version, override=None):
    """The repo.radeon.com suite for a host, or ValueError saying why there is none."""
    info = release(rocm_version)
    if override:
        return override
    dist = str(distribution)
    ver = str(version)
    if dist == 'Debian':
        suite = DEBIAN_SUITES.get(ver.split('.', 1)[0])
    elif dist == 'Ubuntu':
        suite = UBUNTU_SUITES.get(ver)
    else:
        suite = None
    if suite is None:
        raise ValueError('%s %s has no ROCm apt suite: supported are Ubuntu %s and Debian %s. Set the suite override '
                         '(rocm_apt_suite) if your mirror has one for it.'
                         % (dist, ver, ', '.join(sorted(UBUNTU_SUITES)), ', '.join(sorted(DEBIAN_SUITES))))
    if suite not in info['ubuntu_suites']:
        raise ValueError('ROCm %s publishes no %s suite (%s %s); it has %s. Choose another ROCm version or OS release.'
                         % (info['version'], suite, dist, ver, ', '.join(info['ubuntu_suites'])))
    return suite
