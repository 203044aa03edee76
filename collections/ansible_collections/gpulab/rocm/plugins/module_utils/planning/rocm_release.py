# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Facts about a ROCm release number, for both of AMD's streams: the legacy one (5.3 to 7.2.4, repo.radeon.com:
repo directory spelling, package version code, apt suites, kdb naming, from 7.0 the graphics repository and the
amdgpu driver with its own numbers, RELEASES_7) and the ROCm Core SDK (7.14 on: its repository, key, per-target
packages, /opt/rocm/core-X.Y and driver window, CORE_RELEASES).

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
UBUNTU_SUITES = {'20.04': 'focal', '22.04': 'jammy', '24.04': 'noble', '26.04': 'resolute'}

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
# - 7.2.4 (29 May 2026), the last release of the legacy stream, with driver 30.30.4: the rocminfo tag rocm-7.2.4 and
#   the driver support table of AMD's Enterprise AI installer (silogen/cluster-bloom docs/gpu-driver-support.md, not
#   an AMD docs page; rocm-reference.md 13). AMD's Core SDK install pages say "If you have ROCm 7.2.4 or older
#   installed, please uninstall it", naming it the last.
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
    ('7.2.4', '30.30.4'),
)
# The oldest driver a 7.x release runs on: the ROCm 7.2.2 release notes list amdgpu 30.30.x, 30.20.x and 30.10.x;
# AMD's driver blog gives each driver a window of one year of ROCm releases either side. A ROCm-numbered driver
# directory (6.4.3) for a 7.x release is refused as too old: the table answers with the release's own driver.
MIN_DRIVER_7 = '30.10'

# The ROCm Core SDK, AMD's production line built by TheRock since July 2026 (rocm-reference.md 13; AMD's transition
# guide, rocm.docs.amd.com docs-10.0.0 about/transition-guide-TheRock). 7.9-7.13 were technology previews ("versions
# 7.9 and later represent the technology preview release stream", therock-7.9.0 release notes); 7.14.0 is the first
# production release. Previews are refused; 7.14 on is the Core stream.
PREVIEWS = ((7, 9), (7, 13))
CORE_FROM = (7, 14)
# Core releases: (release, date, stream, the driver AMD documents with it, the oldest and the newest driver it runs
# on). Sources:
# - dates: AMD's transition guide and TheRock's releases (7.14.0 16 Jul 2026, 7.14.1 31 Aug, 10.0.0 26 Aug, 10.1.0
#   5 Oct 2026; the rocm-systems tag therock-10.0 is dated 26 Aug 2026).
# - stream: 7.14 is published under repo.amd.com/rocm/packages-multi-arch (its install page), 10.x under
#   stable.repo.amd.com/rocm/core/packages (the 10.0 install page).
# - drivers: AMD's install pages point 10.1.0 and 10.0.0 at the amdgpu 31.50.0 documentation (amdgpu-install
#   31.50.315000-1 on the 10.0 install page) and 7.14.1/7.14.0 at 31.40.1 (the TensorFlow-on-ROCm install page's
#   release selector); 7.14 runs on 31.40.1 down to 30.10.0 (legacy-rocm-build docs/about/include/
#   driver-firmware-support-table.md). For 10.x no older driver is documented, so only the 31.50 line is accepted.
CORE_RELEASES = (
    ('7.14.0', '2026-07-16', 'multi-arch', '31.40.1', '30.10', '31.40.1'),
    ('7.14.1', '2026-08-31', 'multi-arch', '31.40.1', '30.10', '31.40.1'),
    ('10.0.0', '2026-08-26', 'stable', '31.50', '31.50', '31.50'),
    ('10.1.0', '2026-10-05', 'stable', '31.50', '31.50', '31.50'),
)
# The two Core repositories: the folder holding the per-distribution folders, and the signing key's URL (7.14's
# install page: repo.amd.com/rocm/packages-multi-arch/<distro> and its gpg/rocm.gpg; 10.0's install page:
# stable.repo.amd.com/rocm/core/packages/<distro>/ and stable.repo.amd.com/rocm/gpg/packages.gpg).
CORE_STREAMS = {
    'multi-arch': ('https://repo.amd.com/rocm/packages-multi-arch',
                   'https://repo.amd.com/rocm/packages-multi-arch/gpg/rocm.gpg'),
    'stable': ('https://stable.repo.amd.com/rocm/core/packages', 'https://stable.repo.amd.com/rocm/gpg/packages.gpg'),
}
# The Core signing key's primary fingerprint. No AMD docs page prints it; AMD-authored code pins it as the AMD ROCm
# signing key (ROCm/TheRock build_tools/packaging/linux/build_repo_package.py, EXPECTED_KEY_FINGERPRINT, PR #7269)
# and the key is checked against it after every download, as the legacy key is (rocm-reference.md 13).
CORE_FINGERPRINTS = ('D0F004A0025A1145C7807FCD0701EAC4D5E02107',)
CORE_KEYRING = '/etc/apt/keyrings/amdrocm.gpg'
# Per-distribution folders of the Core repositories (the 10.0 install page: ubuntu2604, ubuntu2404, ubuntu2204,
# debian13, debian12; Debian no longer reuses Ubuntu's suites).
CORE_DISTROS = {
    ('Ubuntu', '22.04'): 'ubuntu2204',
    ('Ubuntu', '24.04'): 'ubuntu2404',
    ('Ubuntu', '26.04'): 'ubuntu2604',
    ('Debian', '12'): 'debian12',
    ('Debian', '13'): 'debian13',
}
# The GPU targets a Core release ships one package each for (amdrocm<X.Y>-<target>): the 10.0 install page lists
# these fifteen; 7.14's page the same (rocm-reference.md 13). A release missing from the table is asked through its
# repository's index instead.
CORE_TARGETS = ('gfx950', 'gfx942', 'gfx90a', 'gfx908', 'gfx1201', 'gfx1200', 'gfx1100', 'gfx1101', 'gfx1102',
                'gfx1103', 'gfx1030', 'gfx1151', 'gfx1150', 'gfx1152', 'gfx1153')

# The kernels each amdgpu driver line's DKMS module builds on (rocm_driver's guard, planning/driver_guard.py;
# docs/hardware.md shows this table). Per line: the DKMS module version its amdgpu-dkms carries, the oldest and the
# newest kernel series (major.minor) it is known to build on, how the newest is known, and the sources.
# - 'documented': an AMD docs page lists a distribution whose kernel is that series with this driver.
# - 'tested': AMD staff built it on that series in an issue thread (not a docs page).
# - 'inferred': PLAUSIBLE, NOT VERIFIED: no AMD page or test names it; derived as the source says.
# The oldest is Ubuntu 22.04's GA kernel 5.15, the oldest Debian/Ubuntu kernel in every 7.x and Core matrix (7.10's
# release notes, 7.14's compatibility matrix); Debian 12 (6.1) and 13 (6.12) lie inside every row.
# AMD documents distribution kernels only (GA and HWE); a mainline or backport kernel of a listed series is taken
# as that series. A stable update inside a series can still break a build (Debian 13's 6.12.100 broke 30.30.4:
# ROCm/ROCm#5111, where a later comment built 31.40 on it): the series bound cannot see that; the DKMS build fails
# and apt says so.
DRIVER_KERNELS = (
    ('30.10', '6.14.14', '5.15', '6.14', 'documented',
     'ROCm 7.10.0 release notes (rocm.docs.amd.com/en/7.10.0-preview/about/release-notes.html): Radeon PRO and RX '
     'on Ubuntu 24.04.3 (HWE kernel: 6.14) with amdgpu 30.10.0-30.10.2 and 30.20.0; DKMS module 6.14.14 '
     '(30.10.2 = 6.14.14.30100200-2226257: silogen/cluster-bloom docs/gpu-driver-support.md). No build on 6.15 '
     'or later is documented or reported'),
    ('30.20', '6.16.6', '5.15', '6.17', 'tested',
     'AMD staff built amdgpu/6.16.6-2255209.24.04 (30.20.1, ROCm 7.1.1) on 6.17.0-5 and 6.17.0-8 (Ubuntu 25.10): '
     'github.com/ROCm/ROCm/issues/5624; AMD documents it with Ubuntu 24.04.3 HWE 6.14 (ROCm 7.10.0 release notes)'),
    ('30.30', '6.16.13', '5.15', '6.17', 'inferred',
     'INFERRED: the same 6.16 module base as 30.20 (6.16.13: cluster-bloom docs/gpu-driver-support.md), so 6.17 as '
     'for 30.20 (Ubuntu 24.04.4 HWE); it fails on 6.18.7 (github.com/ROCm/ROCm/issues/5905), on 6.18.14 and '
     '6.19.4 (github.com/ROCm/amdgpu/issues/209) and on 7.0 (30.30.4 on Ubuntu 26.04: '
     'github.com/ROCm/ROCm/issues/6193); AMD\'s 7.2 matrix lists distribution GA kernels only (24.04.3: 6.8)'),
    ('31.40', '6.19.14', '5.15', '7.0', 'documented',
     'ROCm 7.14.0 compatibility matrix (rocm.docs.amd.com/en/docs-7.14.0/compatibility/compatibility-matrix.html; '
     'its source docs/compatibility/include/system-instinct.rst): Ubuntu 26.04 (GA kernel: 7.0) with amdgpu '
     '31.40.0 and 31.40.1; DKMS module 6.19.14 (cluster-bloom). The 31.30 preview (6.19.4) still failed on 7.0: '
     'github.com/ROCm/amdgpu/issues/220'),
    ('31.50', None, '5.15', '7.0', 'documented',
     'ROCm Core SDK 10.0 install page (rocm.docs.amd.com/en/docs-10.0.0, amdgpu-install 31.50 for jammy, noble and '
     'resolute): Ubuntu 26.04, whose GA kernel is 7.0 (rocm-reference.md 13); its DKMS module version is not '
     'documented'),
)


def driver_line(directory):
    """'30.30' for a driver directory '30.30.4' or '30.30'; None for a ROCm-numbered one (6.2.4) or none."""
    key = driver_key(directory)
    if key is None or key[0] < 30:
        return None
    return '%d.%d' % key[:2]


def kernel_range(directory):
    """The table's row for a driver directory: {'line', 'dkms', 'oldest', 'newest', 'known', 'source'}; None when
    the table has none (a ROCm-numbered driver up to 6.4, or a driver line it does not know)."""
    line = driver_line(directory)
    for row in DRIVER_KERNELS:
        if row[0] == line:
            return dict(zip(('line', 'dkms', 'oldest', 'newest', 'known', 'source'), row))
    return None


def series_key(series):
    """'6.17' (or a kernel release '6.17.0-8-generic') -> (6, 17); None when it does not start with major.minor."""
    match = re.match(r'^(\d+)\.(\d+)', str(series or ''))
    return (int(match.group(1)), int(match.group(2))) if match else None


def lines_for_kernel(series):
    """The driver lines of the table whose newest kernel series is at least series ('7.0'), oldest first, each with
    the releases that install it: [(line, [release, ...])]."""
    wanted = series_key(series)
    found = []
    for row in DRIVER_KERNELS:
        if wanted is not None and series_key(row[3]) >= wanted >= series_key(row[2]):
            releases = [version for version, directory in RELEASES_7 if driver_line(directory) == row[0]]
            releases += [item[0] for item in CORE_RELEASES if driver_line(item[3]) == row[0]]
            found.append((row[0], releases))
    return found


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
        raise ValueError("ROCm version %r is not a release number like '10.1.0', '7.2.4' or '6.2' (for 6.2.0)"
                         % (version,))
    major, minor, patch = parsed
    if (major, minor) < (5, 3):
        raise ValueError('ROCm %s is older than 5.3, whose repositories used the legacy "ubuntu"/"xenial" suites; '
                         'this collection supports ROCm 5.3 and later' % version)
    if minor > 99 or patch > 99:
        raise ValueError('ROCm version %r has a component above 99' % (version,))
    if PREVIEWS[0] <= (major, minor) <= PREVIEWS[1]:
        raise ValueError('ROCm %s is a technology preview of the ROCm Core SDK (7.9 to 7.13), not a production '
                         'release: choose a Core SDK release (%s) or the last legacy release (%s)'
                         % (version, ', '.join(known_core()), RELEASES_7[-1][0]))
    return major, minor, patch


def is_core(version):
    """Whether a parsed release (major, minor, patch) belongs to the ROCm Core SDK stream."""
    return tuple(version[:2]) >= CORE_FROM


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


def known_core():
    return [row[0] for row in CORE_RELEASES]


def core_distro(distribution, version):
    """The Core repository's folder for a host ('debian12', 'ubuntu2404'), or ValueError naming the supported."""
    dist, ver = str(distribution), str(version)
    key = (dist, ver.split('.', 1)[0]) if dist == 'Debian' else (dist, ver)
    if key not in CORE_DISTROS:
        raise ValueError('%s %s has no ROCm Core SDK repository: AMD publishes %s' % (
            dist, ver, ', '.join('%s %s' % pair for pair in sorted(CORE_DISTROS))))
    return CORE_DISTROS[key]


def release(version):
    """Everything the roles derive from one ROCm version string."""
    major, minor, patch = parse_version(version)
    if is_core((major, minor, patch)):
        return _core_release(major, minor, patch)
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
        'stream': 'legacy',
        # Whether the release table has the row (a 7.x release it lacks has no known driver).
        'known': not seven or full in drivers,
        # A .0 release lives in a two-component directory (6.2), a point release in three (6.2.4) (reference 1.2).
        'repo_dir': repo_dir,
        # From 7.0 a second user-space repository, graphics/<repo dir>/ubuntu (rocm.list; reference 1.1: AMD's
        # ROCm/hipThreads README for 7.0.2, the 7.0.1 install page for the RPM form).
        'graphics_dir': repo_dir if seven else None,
        # The amdgpu driver directory: the ROCm directory for 5.3-6.4 (reference 1.1, 11.2); the table's for 7.x,
        # None for a 7.x release the table does not know (rocm_repo_amdgpu_version must then name it).
        'amdgpu_dir': drivers.get(full) if seven else repo_dir,
        'amdgpu_min': MIN_DRIVER_7 if seven else None,
        'amdgpu_max': None,
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
        'core_url': None,
        'core_key_url': None,
        'targets': None,
    }


def _core_release(major, minor, patch):
    full = '%d.%d.%d' % (major, minor, patch)
    series = '%d.%d' % (major, minor)
    row = dict((item[0], item) for item in CORE_RELEASES).get(full)
    # A release the table lacks: its repository follows its line (7.14.x the multi-arch one, 10 on the stable one);
    # its driver window is unknown (rocm_repo_amdgpu_version must name the driver).
    stream = row[2] if row else ('multi-arch' if (major, minor) == CORE_FROM else 'stable')
    url, key_url = CORE_STREAMS[stream]
    return {
        'version': full,
        'major': major,
        'minor': minor,
        'patch': patch,
        'series': series,
        'stream': 'core',
        'known': row is not None,
        'released': row[1] if row else None,
        'repo_dir': None,
        'graphics_dir': None,
        'amdgpu_dir': row[3] if row else None,
        'amdgpu_min': row[4] if row else None,
        'amdgpu_max': row[5] if row else None,
        # The driver stays in the legacy layout (repo.radeon.com amdgpu/<dir>/ubuntu, the 10.0 install page's
        # amdgpu-install 31.50 for jammy, noble and resolute), with the 7.x architectures.
        'driver_architectures': {'Ubuntu': 'amd64,i386', 'Debian': 'amd64'},
        # Package names end in X.Y (amdrocm10.1, amdrocm10.1-gfx942); a patch release installs in place.
        'package_suffix': series,
        'code': None,
        # /opt/rocm/core-X.Y (the transition guide; TheRock RFC0009: patches in place within X.Y).
        'prefix': '/opt/rocm/core-%s' % series,
        'ubuntu_suites': ['jammy', 'noble', 'resolute'] if major >= 10 else ['jammy', 'noble'],
        # MIOpen and its kernel databases are in amdrocm-dnn<X.Y>-<target>, pulled by amdrocm<X.Y>-<target>.
        'kdb_scheme': None,
        # AMD publishes the Core SDK's PyTorch in its own wheel index, not on download.pytorch.org (rocm-reference.md
        # 13: stable.repo.amd.com/rocm/pytorch/whl-next).
        'pytorch_index': None,
        'core_url': url,
        'core_key_url': key_url,
        'targets': list(CORE_TARGETS) if row else None,
    }


def newest_stable():
    """The newest production release of the table: the stack's default."""
    return max(known_core(), key=version_tuple)


def newest_legacy():
    """The last release of the legacy stream."""
    return RELEASES_7[-1][0]


def driver_problem(version, directory):
    """None, or why the driver directory does not fit the release (older or newer than its window), with the
    table's answer."""
    info = release(version)
    if not info['amdgpu_min'] or not directory:
        return None
    key = driver_key(directory)
    if key is None:
        return ('rocm_repo_amdgpu_version %s is not a driver version such as %s (ROCm %s uses its own driver '
                'numbers)' % (directory, info['amdgpu_dir'] or info['amdgpu_min'], info['version']))
    fix = ('set rocm_repo_amdgpu_version to %s, or leave it empty for the table\'s'
           % (info['amdgpu_dir'] or info['amdgpu_min']))
    if key < driver_key(info['amdgpu_min']):
        return ('rocm_repo_amdgpu_version %s is too old for ROCm %s, which needs amdgpu %s or later (its own driver '
                'is %s): %s' % (directory, info['version'], info['amdgpu_min'], info['amdgpu_dir'] or
                                'not in the table', fix))
    newest = info['amdgpu_max']
    # A two-part bound (31.50) covers its point releases (31.50.2).
    if newest and key > driver_key(newest)[:2] + ((driver_key(newest)[2] if newest.count('.') > 1 else 99),):
        return ('rocm_repo_amdgpu_version %s is newer than ROCm %s is documented to run on (amdgpu %s to %s): %s'
                % (directory, info['version'], info['amdgpu_min'], newest, fix))
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
