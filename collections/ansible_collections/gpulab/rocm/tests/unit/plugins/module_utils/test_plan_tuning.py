# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""plan_tuning over fake roots laid out like real hosts (tuning_state reads them as the probe does).

Provenance of the real contents:
- DEBIAN12_GRUB: /usr/share/grub/default/grub of Debian 12's grub2-common 2.06-13+deb12u2 (the package's
  postinst copies it to /etc/default/grub), unpacked from the package with dpkg-deb on 2026-12-06.
- UBUNTU2404_GRUB: the head of Ubuntu 24.04's /etc/default/grub (GRUB_DISTRIBUTOR through os-release,
  GRUB_TIMEOUT_STYLE=hidden, "quiet splash"), as several public install notes and boot-repair reports quote it,
  and 50-cloudimg-settings.cfg of its cloud images, which sets GRUB_TIMEOUT again (abridged).
- UBUNTU2404_CMDLINE: a real Ubuntu 24.04.4 /proc/cmdline (HWE kernel 6.17.0-22, LVM root) quoted in a public
  host inventory; VM_CMDLINE: this build machine's own /proc/cmdline (a Firecracker VM: no GRUB, no cpufreq).
- sysctl and limits files: the formats of sysctl.d(5) and limits.conf(5); Debian's /etc/sysctl.d/99-sysctl.conf
  is a link to /etc/sysctl.conf, not read as its own file here.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import time

import pytest

from ansible_collections.gpulab.rocm.plugins.module_utils.host import node_state as ns, tuning_state as ts
from ansible_collections.gpulab.rocm.plugins.module_utils.planning import planner, plan_tuning
from ansible_collections.gpulab.rocm.plugins.module_utils.planning.plan_common import PlanError, sha1

DEBIAN12_GRUB = """# If you change this file, run 'update-grub' afterwards to update
# /boot/grub/grub.cfg.
# For full documentation of the options in this file, see:
#   info -f grub -n 'Simple configuration'

GRUB_DEFAULT=0
GRUB_TIMEOUT=5
GRUB_DISTRIBUTOR=`lsb_release -i -s 2> /dev/null || echo Debian`
GRUB_CMDLINE_LINUX_DEFAULT="quiet"
GRUB_CMDLINE_LINUX=""

# If your computer has multiple operating systems installed, then you
# probably want to run os-prober. However, if your computer is a host
# for guest OSes installed via LVM or raw disk devices, running
# os-prober can cause damage to those guest OSes as it mounts
# filesystems to look for things.
GRUB_DISABLE_OS_PROBER=true

# Uncomment to disable graphical terminal
#GRUB_TERMINAL=console
"""
UBUNTU2404_GRUB = """# If you change this file, run 'update-grub' afterwards to update
# /boot/grub/grub.cfg.
# For full documentation of the options in this file, see:
#   info -f grub -n 'Simple configuration'

GRUB_DEFAULT=0
GRUB_TIMEOUT_STYLE=hidden
GRUB_TIMEOUT=0
GRUB_DISTRIBUTOR=`( . /etc/os-release; echo ${NAME:-Ubuntu} ) 2>/dev/null || echo Ubuntu`
GRUB_CMDLINE_LINUX_DEFAULT="quiet splash"
GRUB_CMDLINE_LINUX=""
"""
UBUNTU_CLOUDIMG_CFG = """# Cloud Image specific Grub settings for Generic Cloud Images
# CLOUD_IMG: This file was created/modified by the Cloud Image build process

# Set the recordfail timeout
GRUB_RECORDFAIL_TIMEOUT=0

# Do not wait on grub prompt
GRUB_TIMEOUT=0
"""
DEBIAN12_CMDLINE = 'BOOT_IMAGE=/boot/vmlinuz-6.1.0-28-amd64 root=UUID=3f1c6e0a-0b1e-4c55-9f7e-2c6a1f0e8d11 ro quiet'
UBUNTU2404_CMDLINE = ('BOOT_IMAGE=/vmlinuz-6.17.0-22-generic root=/dev/mapper/ubuntu--vg-ubuntu--lv ro quiet '
                      'splash nouveau.modeset=1 vt.handoff=7')
VM_CMDLINE = ('mitigations=auto,no_guest_host,no_guest_guest console=ttyS0 quiet reboot=k panic=1 nomodule '
              'random.trust_cpu=1 swiotlb=noforce psi=1')
LIMITS_HEAD = "# /etc/security/limits.conf\n#\n#<domain>      <type>  <item>         <value>\n#\n\n#*  soft  core  0\n"
PROC_LIMITS = ('Limit                     Soft Limit           Hard Limit           Units     \n'
               'Max locked memory         8388608              8388608              bytes     \n')

WANTED = {'profile': 'instinct', 'kernel_args_extra': [], 'memlock_domain': '*', 'reboot': False,
          'reboot_through_slurm': False}
STACK = {'version': '6.2.4'}


def write(root, path, text):
    full = os.path.join(root, path.lstrip('/'))
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, 'w') as handle:
        handle.write(text)
    return full


def host(tmp_path, distro='debian12', numa='1', governor='schedutil', cpus=4, cpufreq=True, boot_grub=True):
    """A fake root, proc and sysfs laid out like a bare-metal host (or a VM without cpufreq)."""
    root = str(tmp_path / 'root')
    proc = str(tmp_path / 'proc')
    sysfs = str(tmp_path / 'sys')
    grub = DEBIAN12_GRUB if distro == 'debian12' else UBUNTU2404_GRUB
    write(root, '/etc/default/grub', grub)
    if distro == 'ubuntu2404':
        write(root, '/etc/default/grub.d/50-cloudimg-settings.cfg', UBUNTU_CLOUDIMG_CFG)
    if boot_grub:
        os.makedirs(os.path.join(root, 'boot/grub'))
        write(root, '/usr/sbin/update-grub', '#!/bin/sh\nexec grub-mkconfig -o /boot/grub/grub.cfg "$@"\n')
    write(root, '/etc/sysctl.conf', '#\n# /etc/sysctl.conf - Configuration file for setting system variables\n'
                                    '#kernel.domainname = example.com\n')
    write(root, '/etc/security/limits.conf', LIMITS_HEAD)
    # Folders every Debian and Ubuntu host has (procps, libpam-modules, systemd); /etc/default/grub.d is Ubuntu's.
    for folder in ('etc/security/limits.d', 'etc/sysctl.d', 'etc/systemd/system'):
        os.makedirs(os.path.join(root, folder), exist_ok=True)
    cmdline = {'debian12': DEBIAN12_CMDLINE, 'ubuntu2404': UBUNTU2404_CMDLINE, 'vm': VM_CMDLINE}[distro]
    write(proc, '/cmdline', cmdline + '\n')
    write(proc, '/stat', 'cpu  1 2 3 4\nbtime %d\n' % (int(time.time()) - 600))
    write(proc, '/self/limits', PROC_LIMITS)
    if numa is not None:
        write(proc, '/sys/kernel/numa_balancing', numa + '\n')
    for cpu in range(cpus):
        base = '/devices/system/cpu/cpu%d' % cpu
        os.makedirs(os.path.join(sysfs, base.lstrip('/')), exist_ok=True)
        if cpufreq:
            write(sysfs, base + '/cpufreq/scaling_governor', governor + '\n')
            write(sysfs, base + '/cpufreq/scaling_available_governors', 'performance schedutil\n')
    return root, proc, sysfs


def node_of(paths, container=False, systemd=True):
    root, proc, sysfs = paths
    state = ts.tuning_state(root, proc, sysfs)
    return {'os': {'euid': 0, 'systemd': systemd, 'machine_id': 'a' * 32}, 'gpu_pci': {'in_container': container},
            'tuning': state, 'sections': ['os', 'gpus', 'tuning']}


def plan(node, previous=None, **over):
    return planner.plan('tuning', node, dict(WANTED, **over), STACK,
                        {'connection': 'ssh', 'controller_machine_id': 'b' * 32}, previous)


def converge(paths, result):
    """Apply a plan to the fake root as the role does (files written and removed, the reboot record, the sysctl,
    update-grub's effect on nothing, the governor unit's effect on sysfs), each file root-owned in a real run: here
    the owner is whoever runs the test, so the probe's description is patched to root's."""
    root, proc, sysfs = paths
    for path, content in result['files'].items():
        write(root, path, content)
    for path in result['remove']:
        os.unlink(os.path.join(root, path.lstrip('/')))
    if result['reboot']['needed'] and result['reboot_record'] is not None:
        write(root, ts.REBOOT_RECORD, result['reboot_record'])
    if result['sysctl_apply']:
        write(proc, '/sys/kernel/numa_balancing', '0\n')
    if result['governor_service']:
        for cpu in os.listdir(os.path.join(sysfs, 'devices/system/cpu')):
            write(sysfs, '/devices/system/cpu/%s/cpufreq/scaling_governor' % cpu, 'performance\n')
        os.makedirs(os.path.join(root, 'etc/systemd/system/multi-user.target.wants'), exist_ok=True)
        link = os.path.join(root, ts.GOVERNOR_WANTS.lstrip('/'))
        if not os.path.islink(link):
            os.symlink(ts.GOVERNOR_UNIT, link)


def as_root(node):
    for info in node['tuning']['files'].values():
        if info.get('exists'):
            info.update(uid=0, gid=0, mode='0644')
    return node


def names(result):
    return dict((entry['name'], entry) for entry in result['settings'])


def bare_node(paths, container=False, systemd=True, **over):
    """The node a run without a profile plans from: no section 'tuning', only what probe_needs asks of section
    'paths' (each path described by the probe's own reader, under the fake root), as the action does."""
    root = paths[0]
    node = {'os': {'euid': 0, 'systemd': systemd, 'machine_id': 'a' * 32}, 'gpu_pci': {'in_container': container},
            'sections': ['os', 'gpus']}
    needs = planner.probe_needs('tuning', node, dict(WANTED, **over), STACK)
    if needs:
        assert needs['sections'] == ['paths']
        node['paths'] = dict((path, ns.describe_file(os.path.join(root, path.lstrip('/')), with_content=False))
                             for path in needs['paths'])
        node['sections'].append('paths')
    return node


def earlier_run(tmp_path, **host_args):
    """A host an earlier run with the profile converged: every file of ours there, the reboot marked."""
    paths = host(tmp_path, **host_args)
    converge(paths, plan(node_of(paths)))
    return paths


def test_none_is_the_default_and_reads_nothing():
    node = {'os': {'euid': 0}, 'sections': ['os', 'gpus']}
    # Alone (no whole probe before): only our own files, by name, and update-grub's rule; never section 'tuning'.
    needs = plan_tuning.probe_needs(node, {'profile': 'none'}, STACK)
    assert needs == {'sections': ['paths'], 'paths': list(plan_tuning.OWN_PATHS + plan_tuning.GRUB_PATHS)}
    # After a whole probe (planner.probe_paths describes our files): none there, nothing more to read.
    described = dict((path, {'exists': False, 'type': None}) for path in planner.probe_paths())
    assert set(plan_tuning.OWN_PATHS) <= set(described)
    whole = dict(node, paths=described, sections=['os', 'gpus', 'paths'])
    assert plan_tuning.probe_needs(whole, {'profile': 'none'}, STACK) is None
    result = plan(whole, profile='none')
    assert result['skip'] == 'rocm_tuning_profile is none' and not result['changes'] and not result['files']
    assert result['remove'] == [] and result['notices'] == [] and not result['reboot']['needed']
    assert not planner.has_work('tuning', result, dict(WANTED, profile='none'))
    assert plan_tuning.probe_needs(node, WANTED, STACK) == {'sections': ['tuning']}


@pytest.mark.parametrize('over, words', [
    ({'profile': 'mi300x'}, "rocm_tuning_profile is 'mi300x'; use one of none, instinct"),
    ({'kernel_args_extra': ['amd_iommu=on; reboot']}, "'amd_iommu=on; reboot', not kernel arguments"),
    ({'kernel_args_extra': ['$(id)']}, "'$(id)'"),
    ({'kernel_args_extra': ['a b']}, "'a b'"),
    ({'memlock_domain': 'all users'}, "rocm_tuning_memlock_domain is 'all users'"),
])
def test_bad_input_is_refused_before_any_change(over, words):
    with pytest.raises(PlanError) as error:
        plan({'os': {'euid': 0}}, **over)
    assert words in str(error.value)


def test_debian12_bare_metal_fresh_plans_every_drop_in(tmp_path):
    paths = host(tmp_path)
    result = plan(node_of(paths))
    settings = names(result)
    assert sorted(result['files']) == sorted([ts.SYSCTL_FILE, ts.LIMITS_FILE, ts.GRUB_DROPIN, ts.GOVERNOR_UNIT])
    assert result['files'][ts.GRUB_DROPIN].endswith(
        'GRUB_CMDLINE_LINUX_DEFAULT="${GRUB_CMDLINE_LINUX_DEFAULT} iommu=pt"\n')
    assert 'kernel.numa_balancing = 0\n' in result['files'][ts.SYSCTL_FILE]
    assert '* soft memlock unlimited\n* hard memlock unlimited\n' in result['files'][ts.LIMITS_FILE]
    assert 'echo performance > "$f"' in result['files'][ts.GOVERNOR_UNIT]
    assert result['dirs'] == [ts.GRUB_DIR] and result['update_grub'] == '/usr/sbin/update-grub'
    assert result['sysctl_apply'] == ts.SYSCTL_FILE and result['governor_service'] == 'started'
    assert result['daemon_reload'] is True
    assert result['reboot']['needed'] and result['reboot']['args'] == ['iommu=pt']
    assert not result['reboot']['allowed'] and 'rocm_driver_reboot' not in result['reboot']['reason']
    assert result['reboot']['mark'] == '*** System restart required (kernel arguments: iommu=pt) ***\n'
    assert settings['kernel command line']['state'] == 'reboot_pending'
    assert 'wanted iommu=pt, the running node has none: reboot pending' in ' '.join(result['findings'])
    assert settings['numa_balancing']['state'] == 'apply'


def test_the_second_plan_lists_nothing_but_the_pending_reboot(tmp_path):
    paths = host(tmp_path)
    first = plan(node_of(paths))
    converge(paths, first)
    second = plan(as_root(node_of(paths)), previous=first)
    assert second['files'] == {} and second['update_grub'] is None and second['sysctl_apply'] is None
    assert second['governor_service'] is None and second['problems'] == []
    # The kernel line waits for its reboot, marked in this boot: no change, still needed (a maintenance run reboots
    # it through Slurm), and verify's finding.
    assert second['changes'] == [] and second['reboot']['needed']
    assert names(second)['kernel command line']['state'] == 'reboot_pending'
    # After the reboot (the running kernel has it): nothing at all.
    write(paths[1], '/cmdline', DEBIAN12_CMDLINE + ' iommu=pt\n')
    third = plan(as_root(node_of(paths)))
    assert third['changes'] == [] and third['findings'] == [] and not third['reboot']['needed']
    assert set(entry['state'] for entry in third['settings']) == {'in_effect'}


def test_no_second_reboot_for_the_same_arguments(tmp_path):
    paths = host(tmp_path)
    first = plan(node_of(paths))
    converge(paths, first)
    record = os.path.join(paths[0], ts.REBOOT_RECORD.lstrip('/'))
    os.utime(record, (time.time() - 3600, time.time() - 3600))  # before this boot: rebooted and came back without
    result = plan(as_root(node_of(paths)))
    assert not result['reboot']['needed'] and result['changes'] == []
    assert 'not rebooted again' in result['problems'][0]


def test_a_lab_that_has_everything_is_left_alone(tmp_path):
    paths = host(tmp_path, numa='0', governor='performance')
    root = paths[0]
    write(root, '/etc/default/grub', DEBIAN12_GRUB.replace('GRUB_CMDLINE_LINUX=""', 'GRUB_CMDLINE_LINUX="iommu=pt"'))
    write(paths[1], '/cmdline', DEBIAN12_CMDLINE + ' iommu=pt\n')
    write(root, '/etc/sysctl.d/10-lab-numa.conf', '# lab\nkernel.numa_balancing=0\n')
    write(root, '/etc/security/limits.d/90-rdma.conf', '# configuration for rdma tuning\n'
                                                       '*       soft    memlock         unlimited\n'
                                                       '*       hard    memlock         unlimited\n')
    result = plan(node_of(paths))
    assert result['changes'] == [] and result['files'] == {} and result['findings'] == []
    settings = names(result)
    assert set(entry['state'] for entry in settings.values()) == {'lab'}
    assert settings['numa_balancing']['by'] == '/etc/sysctl.d/10-lab-numa.conf'
    assert settings['kernel command line']['by'] == ts.GRUB_DEFAULT
    assert 'left as it is' in settings['memlock']['why']


def test_our_grub_drop_in_goes_once_the_lab_has_the_arguments(tmp_path):
    paths = host(tmp_path)
    converge(paths, plan(node_of(paths)))
    write(paths[0], '/etc/default/grub', DEBIAN12_GRUB.replace('GRUB_CMDLINE_LINUX=""',
                                                               'GRUB_CMDLINE_LINUX="iommu=pt"'))
    write(paths[1], '/cmdline', DEBIAN12_CMDLINE + ' iommu=pt iommu=pt\n')
    result = plan(as_root(node_of(paths)))
    assert result['remove'] == [ts.GRUB_DROPIN] and result['update_grub'] == '/usr/sbin/update-grub'
    assert names(result)['kernel command line']['state'] == 'lab'
    converge(paths, result)
    assert plan(as_root(node_of(paths)))['changes'] == []


def test_a_lab_setting_that_is_configured_but_not_running_is_ours_to_apply(tmp_path):
    paths = host(tmp_path, numa='1')
    write(paths[0], '/etc/sysctl.d/10-lab-numa.conf', 'kernel.numa_balancing = 0\n')
    result = plan(node_of(paths))
    assert names(result)['numa_balancing']['state'] == 'apply'


def test_a_lab_file_read_after_ours_wins_and_is_named(tmp_path):
    paths = host(tmp_path)
    write(paths[0], '/etc/sysctl.conf', 'kernel.numa_balancing = 1\n')
    result = plan(node_of(paths))
    assert ts.SYSCTL_FILE not in result['files'] and names(result)['numa_balancing']['state'] == 'overridden'
    assert '/etc/sysctl.conf sets kernel.numa_balancing = 1' in result['notices'][0]


def test_ubuntu2404_appends_to_quiet_splash_and_extra_arguments(tmp_path):
    paths = host(tmp_path, distro='ubuntu2404')
    result = plan(node_of(paths), kernel_args_extra=['amd_iommu=on'])
    assert result['dirs'] == [ts.GRUB_DIR]
    texts = dict(node_of(paths)['tuning']['grub'], **{ts.GRUB_DROPIN: result['files'][ts.GRUB_DROPIN]})
    booted, _by, unreadable = plan_tuning.grub_cmdline(texts)
    assert unreadable == [] and booted == ['quiet', 'splash', 'iommu=pt', 'amd_iommu=on']
    assert result['reboot']['args'] == ['iommu=pt', 'amd_iommu=on']


def test_a_grub_line_the_role_cannot_read_is_left_to_the_lab(tmp_path):
    paths = host(tmp_path)
    write(paths[0], '/etc/default/grub', DEBIAN12_GRUB + 'GRUB_CMDLINE_LINUX_DEFAULT="$(cat /etc/args)"\n')
    result = plan(node_of(paths))
    assert ts.GRUB_DROPIN not in result['files'] and names(result)['kernel command line']['state'] == 'not_settable'
    assert '/etc/default/grub:' in result['notices'][0]


def test_container_writes_the_files_and_plans_the_kernel_line_without_applying_it(tmp_path):
    paths = host(tmp_path, cpufreq=True, boot_grub=False)
    result = plan(node_of(paths, container=True))
    settings = names(result)
    assert sorted(result['files']) == sorted([ts.SYSCTL_FILE, ts.LIMITS_FILE])
    assert result['update_grub'] is None and result['sysctl_apply'] is None and result['governor_service'] is None
    assert not result['reboot']['needed']
    assert settings['kernel command line']['state'] == 'not_settable'
    assert 'container' in settings['kernel command line']['why'] and 'container' in settings['cpu governor']['why']
    assert any('iommu=pt is planned but not applied' in text for text in result['notices'])


def test_vm_without_cpufreq_or_grub(tmp_path):
    paths = host(tmp_path, distro='vm', cpufreq=False, boot_grub=False)
    result = plan(node_of(paths))
    settings = names(result)
    assert 'no cpufreq' in settings['cpu governor']['why'] and ts.GOVERNOR_UNIT not in result['files']
    assert 'no /boot/grub' in settings['kernel command line']['why'] and ts.GRUB_DROPIN not in result['files']
    assert result['sysctl_apply'] == ts.SYSCTL_FILE


def test_a_sysctl_that_does_not_take_is_a_problem_after_its_apply(tmp_path):
    paths = host(tmp_path)
    first = plan(node_of(paths))
    write(paths[0], ts.SYSCTL_FILE, first['files'][ts.SYSCTL_FILE])
    second = plan(as_root(node_of(paths)), previous=first)
    assert any('still reads 1' in text for text in second['problems'])
    # Without an apply in this run it is a finding, not a problem.
    third = plan(as_root(node_of(paths)))
    assert third['problems'] == [] and any(text.startswith('numa_balancing: wanted 0') for text in third['findings'])


def test_a_group_domain(tmp_path):
    paths = host(tmp_path)
    result = plan(node_of(paths), memlock_domain='@rdma')
    assert '@rdma soft memlock unlimited\n@rdma hard memlock unlimited\n' in result['files'][ts.LIMITS_FILE]


def test_reboot_through_slurm_and_never_the_control_node(tmp_path):
    paths = host(tmp_path)
    node = node_of(paths)
    assert plan(node, reboot=True, reboot_through_slurm=True)['reboot']['through_slurm'] is True
    assert plan(node, reboot=True)['reboot']['allowed'] is True
    node['os']['machine_id'] = 'b' * 32
    assert plan(node, reboot=True)['reboot']['allowed'] is False


def test_the_probe_reads_are_bounded(tmp_path):
    paths = host(tmp_path)
    for number in range(ts.FILES_LIMIT + 3):
        write(paths[0], '/etc/sysctl.d/%03d-x.conf' % number, 'vm.swappiness = 10\n')
    os.symlink('/etc/shadow', os.path.join(paths[0], 'etc/security/limits.d/99-link.conf'))
    state = ts.tuning_state(*paths)
    assert ts.SYSCTL_DIR in state['too_many'] and len(state['sysctl']) == ts.FILES_LIMIT + 1
    assert '/etc/security/limits.d/99-link.conf' not in state['limits']
    assert state['memlock'] == {'soft': '8388608', 'hard': '8388608'}
    assert state['cpufreq']['governors'] == {'schedutil': 4}
    assert state['files'][ts.SYSCTL_FILE] == {'exists': False, 'type': None}
    content = plan(node_of(paths))['files'][ts.SYSCTL_FILE]
    assert sha1(content)


def test_on_a_slurm_node_the_maintenance_reboots_for_the_kernel_arguments(tmp_path):
    """upgrade.yml sets rocm_tuning_reboot_through_slurm on Slurm nodes: the role only marks the reboot, and the
    maintenance (planned last, from the other phases' plans) reboots the node through Slurm."""
    from ansible_collections.gpulab.rocm.plugins.module_utils.parsers.slurm_conf import parse_scontrol_nodes
    tuning = plan(node_of(host(tmp_path)), reboot=True, reboot_through_slurm=True)
    assert tuning['reboot']['needed'] and not tuning['reboot']['allowed'] and tuning['reboot']['through_slurm']
    conf = 'ClusterName=lab\nRebootProgram=/usr/sbin/reboot\nNodeName=gpu01 State=UNKNOWN\n'
    probe = {'slurm': {'daemons': ['munged', 'slurmd'], 'hostname': 'gpu01',
                       'files': {'defaults': {'content': ''},
                                 'slurm.conf': {'exists': True, 'type': 'file', 'content': conf}}},
             'slurm_state': {'nodes': parse_scontrol_nodes('NodeName=gpu01 Arch=x86_64 CPUTot=4 State=IDLE '
                                                           'ThreadsPerCore=1 Reason=(null)'), 'error': None},
             'pass': {'order': ['tuning'], 'changes': {'tuning': [c['change'] for c in tuning['changes']]}},
             'plans': {'tuning': {'plan': tuning}}}
    maintenance = planner.plan('maintenance', probe, {'enabled': True, 'slurm_node': True, 'node_name': '',
                                                      'drain_timeout': 600}, {})
    assert maintenance['drain'] and maintenance['reboot'] and maintenance['resume']
    assert 'the kernel arguments iommu=pt wait for a reboot (rocm_tuning)' in maintenance['changes'][-1]['reason']


def test_verify_shows_what_is_not_in_effect_and_fails_on_what_did_not_take(tmp_path):
    """rocm_verify reads the tuning plan of this run (after its apply): findings are notices, problems fail it."""
    from ansible_collections.gpulab.rocm.plugins.module_utils.planning import plan_verify
    from ansible_collections.gpulab.rocm.tests.unit.plugins.module_utils.plan_helpers import CONVERGED, inputs, probe
    paths = host(tmp_path)
    first = plan(node_of(paths))
    # The files written and the sysctl and unit run, but neither took (the running values are unchanged).
    for path in (ts.SYSCTL_FILE, ts.GOVERNOR_UNIT):
        write(paths[0], path, first['files'][path])
    after = plan(as_root(node_of(paths)), previous=first)
    converged = probe(CONVERGED)
    baseline = plan_verify.plan(converged, {'expected_gfx_targets': []}, inputs(), {'name': 'n1'})
    node = dict(converged, plans={'tuning': {'plan': after}})
    result = plan_verify.plan(node, {'expected_gfx_targets': []}, inputs(), {'name': 'n1'})
    assert result['problems'][len(baseline['problems']):] == [
        'tuning: numa_balancing: %s was written and applied with sysctl -p in this run, and '
        '/proc/sys/kernel/numa_balancing still reads 1' % ts.SYSCTL_FILE,
        'tuning: cpu governor: gpulab-cpu-governor.service ran in this run and the CPUs still run schedutil on 4 '
        'CPU(s)']
    assert 'tuning: kernel command line: wanted iommu=pt, the running node has none: reboot pending: the kernel ' \
           'command line changed and needs a reboot, not done here: rocm_tuning_reboot is false; reboot it ' \
           'yourself' in result['notices']
    # No profile: nothing of the tuning in verify.
    off = plan_verify.plan(dict(converged, plans={'tuning': {'plan': plan({'os': {'euid': 0}}, profile='none')}}),
                           {'expected_gfx_targets': []}, inputs(), {'name': 'n1'})
    assert off['problems'] == baseline['problems'] and not [n for n in off['notices'] if n.startswith('tuning')]


def test_the_fleet_record_has_a_tuning_line(tmp_path):
    from ansible_collections.gpulab.rocm.plugins.module_utils.planning import fleet_report
    from ansible_collections.gpulab.rocm.tests.unit.plugins.module_utils.plan_helpers import CONVERGED, probe
    paths = host(tmp_path, distro='vm', cpufreq=False, boot_grub=False)
    tuning = plan(node_of(paths))
    record = fleet_report.host_record(dict(probe(CONVERGED), plans={'tuning': {'plan': tuning}}), 'n1')
    assert record['tuning']['line'] == ('numa_balancing: applied now; kernel command line: not settable here; '
                                        'memlock: written now; cpu governor: not settable here')
    assert any(text.startswith('cpu governor: wanted performance') for text in record['tuning']['findings'])
    assert fleet_report.valid_record(record, 'n1')['tuning'] == record['tuning']
    assert fleet_report.host_record(probe(CONVERGED), 'n1')['tuning'] is None
    with pytest.raises(fleet_report.InvalidRecord):
        fleet_report.valid_record(dict(record, tuning={'line': 7, 'findings': []}), 'n1')


# --- no profile (none) or state absent: what an earlier run wrote goes ---------------------------------------------

OURS = [ts.GRUB_DROPIN, ts.SYSCTL_FILE, ts.LIMITS_FILE, ts.GOVERNOR_UNIT, ts.GOVERNOR_WANTS, ts.REBOOT_RECORD]


def test_none_removes_what_an_earlier_run_wrote_and_plans_nothing_else(tmp_path):
    paths = earlier_run(tmp_path)
    assert all(os.path.lexists(os.path.join(paths[0], path.lstrip('/'))) for path in OURS)
    result = plan(bare_node(paths, profile='none'), profile='none')
    assert result['skip'] == 'rocm_tuning_profile is none' and result['remove'] == OURS
    assert result['files'] == {} and result['dirs'] == [] and result['sysctl_apply'] is None
    assert result['governor_service'] is None and result['daemon_reload'] is False
    assert result['settings'] == [] and result['findings'] == [] and result['problems'] == []
    # The unit is stopped and disabled before its file goes; update-grub where GRUB boots the host.
    assert result['governor_remove'] is True and result['update_grub'] == '/usr/sbin/update-grub'
    assert [c['change'] for c in result['changes']] == (
        ['stop and disable gpulab-cpu-governor.service'] + ['remove %s' % path for path in OURS]
        + ['run /usr/sbin/update-grub'])
    assert all(c['reason'].startswith('rocm_tuning_profile is none') for c in result['changes'][:-1])
    # The removed kernel argument: a reboot pending, marked and never done (whatever rocm_tuning_reboot says).
    reboot = result['reboot']
    assert reboot['needed'] and not reboot['allowed'] and not reboot['through_slurm']
    assert reboot['mark'] == '*** System restart required (kernel arguments removed: %s) ***\n' % ts.GRUB_DROPIN
    assert plan(bare_node(paths, profile='none'), profile='none', reboot=True)['reboot']['allowed'] is False
    assert plan(bare_node(paths, profile='none'), profile='none', reboot=True,
                reboot_through_slurm=True)['reboot']['through_slurm'] is False
    # What the running kernel took stays until the next boot: said, not guessed at.
    notices = ' '.join(result['notices'])
    assert 'reboot pending' in notices and 'keeps the value it has now' in notices
    assert 'does not guess what to restore' in notices and 'new logins get the lab' in notices
    assert 'the CPUs keep the governor they run now until the next boot' in notices
    # Applied: nothing of ours is left, the lab's files are, and the next plan lists nothing (changed=0).
    converge(paths, result)
    assert not any(os.path.lexists(os.path.join(paths[0], path.lstrip('/'))) for path in OURS)
    assert os.path.isfile(os.path.join(paths[0], 'etc/default/grub'))
    again = plan(bare_node(paths, profile='none'), profile='none')
    assert again['changes'] == [] and again['remove'] == [] and not again['reboot']['needed']
    assert again['notices'] == [] and not planner.has_work('tuning', again, dict(WANTED, profile='none'))
    # A later run after a whole probe reads nothing more: the drop-in is gone, update-grub's rule is not asked.
    gone = dict((path, {'exists': False, 'type': None}) for path in planner.probe_paths())
    assert plan_tuning.probe_needs({'paths': gone}, {'profile': 'none'}, STACK) is None


def test_the_labs_files_stay(tmp_path):
    """Only our names are looked at: the lab's own tuning (the same settings in its own files) is never removed, and
    our sysctl drop-in alone goes without update-grub or a reboot."""
    paths = host(tmp_path, numa='0')
    root = paths[0]
    lab = {'/etc/sysctl.d/10-lab-numa.conf': 'kernel.numa_balancing=0\n',
           '/etc/security/limits.d/90-rdma.conf': '* soft memlock unlimited\n* hard memlock unlimited\n',
           '/etc/default/grub.d/90-lab.cfg': 'GRUB_CMDLINE_LINUX="$GRUB_CMDLINE_LINUX iommu=pt"\n',
           '/etc/systemd/system/lab-cpupower.service': '[Service]\nType=oneshot\n'}
    for path, text in lab.items():
        write(root, path, text)
    write(root, ts.SYSCTL_FILE, plan_tuning.HEADER + 'kernel.numa_balancing = 0\n')
    result = plan(bare_node(paths, profile='none'), profile='none')
    assert result['remove'] == [ts.SYSCTL_FILE] and [c['change'] for c in result['changes']] == [
        'remove %s' % ts.SYSCTL_FILE]
    assert result['update_grub'] is None and not result['reboot']['needed'] and result['governor_remove'] is False
    converge(paths, result)
    for path, text in lab.items():
        with open(os.path.join(root, path.lstrip('/'))) as handle:
            assert handle.read() == text


def test_absent_removes_them_whatever_the_profile_says(tmp_path):
    """playbooks/uninstall.yml: rocm_tuning_state absent, with the profile still instinct in the inventory (or one
    that is not even valid): the same removal, no setting planned."""
    paths = earlier_run(tmp_path)
    for profile in ('instinct', 'mi300x'):
        result = plan(bare_node(paths, state='absent', profile=profile), state='absent', profile=profile,
                      kernel_args_extra=['$(id)'])
        assert result['skip'] == 'rocm_tuning_state is absent' and result['remove'] == OURS
        assert result['files'] == {} and result['settings'] == [] and result['update_grub'] == '/usr/sbin/update-grub'
        assert all(c['reason'].startswith('rocm_tuning_state is absent') for c in result['changes'][:-1])
    assert plan_tuning.probe_needs({'sections': ['os', 'gpus']}, dict(WANTED, state='absent'), STACK)['sections'] == \
        ['paths']
    with pytest.raises(PlanError) as error:
        plan({'os': {'euid': 0}}, state='gone')
    assert "rocm_tuning_state is 'gone'; use one of present, absent" in str(error.value)


@pytest.mark.parametrize('host_args, node_args, words', [
    # A container, even one whose image has /boot/grub and update-grub (built from a GRUB host's).
    ({}, {'container': True}, 'the host is a container'),
    ({'boot_grub': False}, {}, 'no /boot/grub'),
])
def test_the_grub_drop_in_goes_without_update_grub_where_grub_does_not_boot(tmp_path, host_args, node_args, words):
    """A container (or a host GRUB does not boot) with our drop-in: it goes, GRUB is not regenerated here and no
    reboot is marked (the kernel is not booted from this root); without systemd the governor unit and its link are
    removed as files, nothing is stopped."""
    paths = host(tmp_path, **host_args)
    root = paths[0]
    write(root, ts.GRUB_DROPIN, plan_tuning.HEADER + 'GRUB_CMDLINE_LINUX_DEFAULT="${GRUB_CMDLINE_LINUX_DEFAULT} '
                                                     'iommu=pt"\n')
    write(root, ts.GOVERNOR_UNIT, plan_tuning.UNIT)
    os.makedirs(os.path.join(root, 'etc/systemd/system/multi-user.target.wants'))
    os.symlink(ts.GOVERNOR_UNIT, os.path.join(root, ts.GOVERNOR_WANTS.lstrip('/')))
    result = plan(bare_node(paths, systemd=False, profile='none', **node_args), profile='none')
    assert result['remove'] == [ts.GRUB_DROPIN, ts.GOVERNOR_UNIT, ts.GOVERNOR_WANTS]
    assert result['update_grub'] is None and not result['reboot']['needed'] and result['governor_remove'] is False
    assert any(words in text and 'not regenerated here' in text for text in result['notices'])
    converge(paths, result)
    assert plan(bare_node(paths, systemd=False, profile='none', **node_args), profile='none')['changes'] == []


def test_a_folder_at_one_of_our_names_is_refused(tmp_path):
    paths = host(tmp_path)
    os.makedirs(os.path.join(paths[0], ts.LIMITS_FILE.lstrip('/')))
    with pytest.raises(PlanError) as error:
        plan(bare_node(paths, profile='none'), profile='none')
    assert '%s is a directory, not the file the role wrote' % ts.LIMITS_FILE in str(error.value)


@pytest.mark.skipif(os.geteuid() != 0, reason="system_files removes root-owned files: run as root")
def test_check_mode_and_diff_of_the_removal_through_system_files(tmp_path):
    """The role's one system_files call with the plan's remove list: check mode shows each removal as a diff and
    leaves every file; the real run removes them (the enablement link as a link, never what it points to)."""
    from ansible_collections.gpulab.rocm.plugins.modules import system_files
    from ansible_collections.gpulab.rocm.tests.unit.gpu_facts_helpers import run_main
    paths = earlier_run(tmp_path)
    root = paths[0]
    node = bare_node(paths, profile='none')
    result = plan(node, profile='none')
    checked = planner.plan('tuning', node, dict(WANTED, profile='none'), STACK,
                           {'connection': 'ssh', 'controller_machine_id': 'b' * 32, 'check_mode': True})
    assert checked == result

    def under(path):
        return os.path.join(root, path.lstrip('/'))
    # The link's target, laid out under the fake root too: removing the link must leave it.
    target = write(root, '/srv/lab/some.service', 'not ours to remove\n')
    os.unlink(under(ts.GOVERNOR_WANTS))
    os.symlink(target, under(ts.GOVERNOR_WANTS))
    args = {'dirs': [], 'files': {}, 'remove': [under(path) for path in result['remove']]}
    dry = run_main(system_files.main, args, check_mode=True, diff=True)
    assert not dry['failed'] and dry['changed'], dry
    assert all(os.path.lexists(under(path)) for path in result['remove'])
    shown = dict((entry['before_header'], entry) for entry in dry['diff'])
    assert shown[under(ts.SYSCTL_FILE)]['after_header'] == '(removed)'
    assert 'kernel.numa_balancing = 0' in shown[under(ts.SYSCTL_FILE)]['before']
    done = run_main(system_files.main, args, diff=True)
    assert not done['failed'] and done['changed'], done
    assert not any(os.path.lexists(under(path)) for path in result['remove']) and os.path.isfile(target)
    assert plan(bare_node(paths, profile='none'), profile='none')['changes'] == []
    assert run_main(system_files.main, args)['changed'] is False


@pytest.mark.skipif(os.geteuid() != 0, reason="system_files writes root-owned files: run as root")
def test_check_mode_and_diff_then_the_write_through_system_files(tmp_path):
    """The plan is the same in check mode; the role's one system_files call over the fake root shows each drop-in
    as a diff and writes nothing in check mode, writes them for real (root-owned, 0644), and the next plan, read
    from what it wrote, lists no file."""
    from ansible_collections.gpulab.rocm.plugins.modules import system_files
    from ansible_collections.gpulab.rocm.tests.unit.gpu_facts_helpers import run_main
    paths = host(tmp_path)
    root = paths[0]
    node = node_of(paths)
    result = plan(node)
    checked = planner.plan('tuning', node, WANTED, STACK, {'connection': 'ssh', 'controller_machine_id': 'b' * 32,
                                                           'check_mode': True})
    assert checked == result

    def under(path):
        return os.path.join(root, path.lstrip('/'))
    args = {'dirs': [under(path) for path in result['dirs']],
            'files': dict((under(path), text) for path, text in result['files'].items())}
    dry = run_main(system_files.main, args, check_mode=True, diff=True)
    assert not dry['failed'] and dry['changed'], dry
    assert not os.path.exists(under(ts.SYSCTL_FILE)) and not os.path.isdir(under(ts.GRUB_DIR))
    shown = dict((entry['after_header'], entry['after']) for entry in dry['diff'])
    assert shown[under(ts.GRUB_DROPIN)] == result['files'][ts.GRUB_DROPIN]
    assert shown[under(ts.LIMITS_FILE)] == result['files'][ts.LIMITS_FILE]
    done = run_main(system_files.main, args, diff=True)
    assert not done['failed'] and done['changed'], done
    again = plan(node_of(paths), previous=result)
    assert again['files'] == {} and again['dirs'] == []
    assert run_main(system_files.main, args)['changed'] is False


def test_the_probe_module_reads_the_tuning_section_of_this_machine():
    """node_probe's section 'tuning' on the machine the tests run on (read-only), and only when asked: the plan of
    its reading is well formed whatever the machine is (this build machine: a VM with no GRUB and no cpufreq)."""
    from ansible_collections.gpulab.rocm.plugins.modules import node_probe
    from ansible_collections.gpulab.rocm.tests.unit.gpu_facts_helpers import run_main
    done = run_main(node_probe.main, {'sections': ['os', 'tuning']})
    assert not done.get('failed'), done
    node = done['ansible_facts']['gpulab_node']
    with open('/proc/cmdline') as handle:
        assert node['tuning']['cmdline'] == handle.read().strip()
    assert set(node['tuning']) >= {'grub', 'boot_grub', 'numa_balancing', 'sysctl', 'limits', 'memlock', 'cpufreq',
                                   'files', 'booted_at'}
    assert 'tuning' not in node_probe.DEFAULT_SECTIONS
    result = plan(dict(node, gpu_pci={'in_container': False}, os=dict(node['os'], euid=0)))
    assert [entry['name'] for entry in result['settings']] == ['numa_balancing', 'kernel command line', 'memlock',
                                                               'cpu governor']
