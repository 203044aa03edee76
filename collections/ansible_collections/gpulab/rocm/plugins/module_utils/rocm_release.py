# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Facts about a ROCm release number: repo directory spelling, package version code, apt suites, kdb naming.

One source of truth for every role; each fact cites docs/rocm-reference.md (a copy of the team's reference).
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

# AMD's instructions reuse Ubuntu suites on Debian (reference 1.3 and 9).
DEBIAN_SUITES = {'12': 'jammy', '13': 'noble'}
UBUNTU_SUITES = {'20.04': 'focal', '22.04': 'jammy', '24.04': 'noble'}

_VERSION_RE = re.compile(r'^(\d+)\.(\d+)(?:\.(\d+))?\Z')


def parse_version(version):
    """'6.2.4' -> (6, 2, 4); '6.2' -> (6, 2, 0). Raises ValueError naming the accepted forms."""
    match = _VERSION_RE.match(str(version).strip())
    if not match:
        raise ValueError("ROCm version %r is not a release number like '6.2.4' or '6.2' (for 6.2.0)" % (version,))
    major, minor, patch = int(match.group(1)), int(match.group(2)), int(match.group(3) or 0)
    if (major, minor) < (5, 3):
        raise ValueError('ROCm %s is older than 5.3, whose repositories used the legacy "ubuntu"/"xenial" suites; '
                         'this collection supports ROCm 5.3 and later' % version)
    if minor > 99 or patch > 99:
        raise ValueError('ROCm version %r has a component above 99' % (version,))
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


def release(version):
    """Everything the roles derive from one ROCm version string."""
    major, minor, patch = parse_version(version)
    full = '%d.%d.%d' % (major, minor, patch)
    return {
        'version': full,
        'major': major,
        'minor': minor,
        'patch': patch,
        'series': '%d.%d' % (major, minor),
        # A .0 release lives in a two-component directory (6.2), a point release in three (6.2.4) (reference 1.2).
        'repo_dir': '%d.%d' % (major, minor) if patch == 0 else full,
        # Versioned (side-by-side) packages always use three components: rocm-hip-sdk6.2.0 (reference 4.3).
        'package_suffix': full,
        # MMmmpp code inside every package version: 6.2.4 -> 60204 (reference 1.2).
        'code': '%d%02d%02d' % (major, minor, patch),
        'prefix': '/opt/rocm-%s' % full,
        'ubuntu_suites': ubuntu_suites(major, minor),
        'kdb_scheme': kdb_scheme(major, minor),
    }


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
