# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The preflight verdict for one host: every problem (the run stops before any change) and every warning, from
facts gathered read-only. Pure: the rocm_preflight role gathers the inputs and calls evaluate() through a filter.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import binascii

from ansible_collections.gpulab.rocm.plugins.module_utils import gpu_support, rocm_release

POLICIES = ('fail', 'warn', 'ignore')


def _gpu_label(dev):
    return '%s %s (%s)' % (dev.get('bdf'), dev.get('name') or 'AMD GPU %s' % dev.get('device_id'),
                           dev.get('gfx_target') or 'gfx target unknown')


def _link_text(link):
    text = '%s GT/s x%s (max %s GT/s x%s)' % (link.get('current_speed_gts'), link.get('current_width'),
                                              link.get('max_speed_gts'), link.get('max_width'))
    if link.get('upstream_bdf'):
        text += ', slot link at %s: %s GT/s x%s (max %s GT/s x%s)' % (
            link.get('upstream_bdf'), link.get('upstream_current_speed_gts'), link.get('upstream_current_width'),
            link.get('upstream_max_speed_gts'), link.get('upstream_max_width'))
    return text


def free_bytes(df_output):
    """Available bytes from `df -P -B1 PATH` output (its last line, fourth column); None when unreadable."""
    lines = [line for line in (df_output or '').splitlines() if line.strip()]
    if len(lines) < 2:
        return None
    fields = lines[-1].split()
    try:
        return int(fields[3])
    except (IndexError, ValueError):
        return None


def secure_boot(efivar_b64):
    """Secure Boot from the base64 content of the SecureBoot EFI variable (4 attribute bytes, then 1 = on);
    None when there is no such variable (legacy BIOS boot, or a container)."""
    if not efivar_b64:
        return None
    try:
        data = base64.b64decode(efivar_b64)
    except (binascii.Error, ValueError, TypeError):
        return None
    return bool(data[-1]) if len(data) >= 5 else None


def evaluate(inp):
    """inp keys: rocm_version, install_source (amd|distro), distribution, distribution_version, suite_override,
    gpu_pci (gpu_pci_facts), gpus_required, unsupported_gpu (fail|warn), degraded_link (fail|warn|ignore),
    df_output (`df -P -B1 disk_path`), min_free_bytes, disk_path, secure_boot_efivar (base64), driver_enabled,
    driver_in_container, missing_users, headers_package, headers_available (True/False/None)."""
    problems, warnings, gpus = [], [], []
    for key, allowed in (('unsupported_gpu', POLICIES[:2]), ('degraded_link', POLICIES)):
        if inp.get(key) not in allowed:
            problems.append('rocm_preflight_%s is %r; use one of %s' % (key, inp.get(key), ', '.join(allowed)))

    version = inp.get('rocm_version')
    try:
        release = rocm_release.release(version)
    except ValueError as exc:
        problems.append(str(exc))
        release = None
    if release and inp.get('install_source', 'amd') == 'amd':
        try:
            rocm_release.apt_suite(inp.get('distribution'), inp.get('distribution_version'), version,
                                   inp.get('suite_override') or None)
        except ValueError as exc:
            problems.append(str(exc))

    pci = inp.get('gpu_pci') or {}
    amd = pci.get('amd') or []
    if not amd and inp.get('gpus_required'):
        problems.append('no AMD GPU on the PCI bus (rocm_preflight_gpus_required is true; set it to false for build '
                        'nodes without GPUs)')
    for dev in amd:
        verdict = gpu_support.support(dev.get('gfx_target'), release['version']) if release else None
        if verdict:
            gpus.append(dict(verdict, bdf=dev.get('bdf'), name=dev.get('name')))
            if verdict['status'] == 'unsupported':
                text = '%s: not supported by ROCm %s: %s' % (_gpu_label(dev), release['version'], verdict['note'])
                (problems if inp.get('unsupported_gpu') == 'fail' else warnings).append(text)
            elif verdict['status'] == 'override' or verdict['note']:
                warnings.append('%s: %s' % (_gpu_label(dev), verdict['note']))
        link = dev.get('link') or {}
        if link.get('degraded') and inp.get('degraded_link') != 'ignore':
            text = ('%s: PCIe link degraded, %s: a wrong slot, a riser or a bad seat (an idle GPU may train its '
                    'speed down; width is what counts)' % (_gpu_label(dev), _link_text(link)))
            (problems if inp.get('degraded_link') == 'fail' else warnings).append(text)

    in_container = bool(pci.get('in_container'))
    driver_wanted = bool(inp.get('driver_enabled')) and (not in_container or bool(inp.get('driver_in_container')))
    if driver_wanted and secure_boot(inp.get('secure_boot_efivar')):
        warnings.append('Secure Boot is on and the amdgpu driver is built by DKMS: the module must be signed with a '
                        'key enrolled in MOK (mokutil --import), or it will not load')
    if driver_wanted and inp.get('headers_available') is False:
        warnings.append('%s is not in the apt sources: DKMS cannot build amdgpu for the running kernel; install '
                        'the headers or boot a kernel that has them' % inp.get('headers_package'))

    free, need = free_bytes(inp.get('df_output')), inp.get('min_free_bytes') or 0
    if free is not None and free < need:
        problems.append('%.1f GiB free on the filesystem of %s, %.1f GiB needed (rocm_preflight_min_free_gb)'
                        % (free / 2.0 ** 30, inp.get('disk_path'), need / 2.0 ** 30))
    if inp.get('missing_users'):
        problems.append('users that do not exist: %s (rocm_access_users); create them first'
                        % ', '.join(inp['missing_users']))
    return {'problems': problems, 'warnings': warnings, 'gpus': gpus, 'driver_wanted': driver_wanted,
            'in_container': in_container, 'nvidia_present': bool(pci.get('nvidia_present'))}
