# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The stack-wide inputs: declared here once, with their defaults, read by every phase of the plan.

They carry no role prefix because every role reads them (rocm_version is the release of the repository, the
packages, the environment and the checks alike). Each role reads its own variables and these, never another
role's. gpulab.rocm.plan reads them from the host's variables; resolve() applies the defaults and checks them.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpulab.rocm.plugins.module_utils.planning import rocm_release

# name: (default, description). The table of stack-wide inputs in docs/roles.md is generated from this.
INPUTS = (
    ('rocm_version', rocm_release.newest_stable(),
     'ROCm release of the whole stack: repository, packages, driver, environment, checks: a ROCm Core SDK release '
     '(10.1.0, 10.0, 7.14.1) or a legacy one (7.2.4, or 7.2 for 7.2.0); the default is the newest production '
     'release of the release table (docs/releases.md). With rocm_versions, the default release behind /opt/rocm.'),
    ('rocm_versions', [],
     'Releases installed side by side (each under /opt/rocm-X.Y.Z, or /opt/rocm/core-X.Y for the Core SDK), all of '
     'one stream; it must include rocm_version. Empty installs rocm_version alone.'),
    ('rocm_install_source', 'amd',
     "amd: AMD's repository (or a lab mirror of it); distro: the distribution's own ROCm packages (Debian 13, "
     'Ubuntu 24.04).'),
    ('rocm_gpu_users', [],
     'Existing users who use the GPUs: they get the video and render groups and the shell environment.'),
    ('rocm_kernel_driver', 'auto',
     'The amdgpu kernel driver (DKMS): auto installs it on bare metal and VMs, not in containers (they use the '
     "host's driver); always also in containers (image builds); never leaves the kernel's own driver."),
    ('rocm_apt_suite', '',
     'AMD apt suite to use as is; empty derives it from the OS (Debian 12 -> jammy, 13 -> noble, Ubuntu its own '
     'codename). Only for an OS that has no mapping, with a mirror that serves it.'),
    ('rocm_expected_gpu_count', -1,
     'AMD GPUs each host must show (rocminfo agents), for every role (docs/health.md, the expected GPU count); -1: '
     'the count the health data file recorded where the bus shows fewer GPUs now, else every AMD GPU on the PCI bus '
     'that the ROCm release runs on (natively or with an HSA override).'),
)
DEFAULTS = dict((name, default) for name, default, _help in INPUTS)
KERNEL_DRIVER_CHOICES = ('auto', 'always', 'never')
INSTALL_SOURCES = ('amd', 'distro')
# What useradd accepts on Debian and Ubuntu (NAME_REGEX of adduser.conf, plus upper case and dots).
SUITE_RE = re.compile(r'^[A-Za-z0-9][A-Za-z0-9._-]*\Z')
USER_NAME_RE = re.compile(r'^[A-Za-z_][A-Za-z0-9_.-]{0,31}\$?\Z')


class StackError(ValueError):
    """A stack-wide input is invalid; the message names it and says what it accepts."""


def resolve(values):
    """The stack-wide inputs with defaults applied and checked: {'version': '6.2.4', 'versions': [...], ...}.

    values: the host's variables (only the names in INPUTS are read; a missing name takes its default).
    Raises StackError listing every invalid input.
    """
    get = dict((name, values.get(name, default) if values.get(name) is not None else default)
               for name, default, _help in INPUTS)
    problems = []

    version = str(get['rocm_version']).strip()
    try:
        version = rocm_release.release(version)['version']
    except ValueError as exc:
        problems.append('rocm_version: %s' % exc)

    versions = get['rocm_versions']
    if isinstance(versions, str) or not isinstance(versions, (list, tuple)):
        problems.append('rocm_versions must be a list of releases such as ["6.2.4", "6.2"], got %r' % (versions,))
        versions = []
    full_versions = []
    for item in versions:
        try:
            full = rocm_release.release(str(item).strip())['version']
        except ValueError as exc:
            problems.append('rocm_versions: %s' % exc)
            continue
        if full not in full_versions:
            full_versions.append(full)
    streams = set(rocm_release.release(item)['stream'] for item in full_versions + [version]) if not problems else ()
    if len(streams) > 1:
        problems.append('rocm_versions mixes the legacy stream and the ROCm Core SDK (%s with %s): AMD says to '
                        'uninstall the legacy stream before installing the Core SDK, so side by side takes '
                        'releases of one stream only' % (version, ', '.join(full_versions)))
    elif full_versions and not problems and version not in full_versions:
        problems.append('rocm_version %s is not among rocm_versions (%s): add it to the list, or choose the default '
                        'among them' % (version, ', '.join(full_versions)))

    source = get['rocm_install_source']
    if source not in INSTALL_SOURCES:
        problems.append('rocm_install_source must be one of %s, got %r' % (', '.join(INSTALL_SOURCES), source))
    if source == 'distro' and full_versions:
        problems.append("rocm_versions (side by side) needs AMD's versioned packages; the distribution's packages "
                        'are one release: empty rocm_versions, or use rocm_install_source amd')

    users = get['rocm_gpu_users']
    if isinstance(users, str) or not isinstance(users, (list, tuple)):
        problems.append('rocm_gpu_users must be a list of user names, got %r' % (users,))
        users = []
    bad = [user for user in users if not isinstance(user, str) or not USER_NAME_RE.match(user)]
    if bad:
        problems.append('rocm_gpu_users holds names that are not user names: %s (letters, digits, "_", "-" and '
                        '"." only, starting with a letter or "_")' % ', '.join(repr(user) for user in bad))

    driver = get['rocm_kernel_driver']
    if driver not in KERNEL_DRIVER_CHOICES:
        problems.append('rocm_kernel_driver must be one of %s, got %r' % (', '.join(KERNEL_DRIVER_CHOICES), driver))

    suite = str(get['rocm_apt_suite'] or '').strip()
    if suite and not SUITE_RE.match(suite):
        problems.append('rocm_apt_suite must be an apt suite name such as jammy (letters, digits, ".", "-", "_"), '
                        'got %r' % (suite,))

    expected = get['rocm_expected_gpu_count']
    try:
        expected = int(expected)
        if isinstance(get['rocm_expected_gpu_count'], bool) or expected < -1:
            raise ValueError()
    except (TypeError, ValueError):
        problems.append('rocm_expected_gpu_count must be a number of GPUs, or -1 for every AMD GPU of the PCI bus '
                        'that ROCm runs on; got %r' % (get['rocm_expected_gpu_count'],))
        expected = -1

    if problems:
        raise StackError('Invalid stack-wide inputs: %s. Nothing was changed.' % '; '.join(problems))
    return {
        'version': version,
        'versions': full_versions,
        'install_source': source,
        'gpu_users': list(_unique(users)),
        'kernel_driver': driver,
        'apt_suite': suite,
        'expected_gpu_count': expected,
    }


def driver_wanted(kernel_driver, in_container):
    """Whether the amdgpu driver is installed on a host: the one place this is decided."""
    if kernel_driver == 'never':
        return False
    return kernel_driver == 'always' or not in_container


def _unique(items):
    seen = set()
    for item in items:
        if item not in seen:
            seen.add(item)
            yield item
