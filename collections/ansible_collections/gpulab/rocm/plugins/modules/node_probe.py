#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: node_probe
short_description: Read everything the gpulab.rocm roles decide on, in one read-only call
version_added: 0.2.0
description:
  - Reads a node's state in one module run - OS and kernel, the installed packages with their holds and any
    interrupted dpkg run, the apt sources, pin and keyrings the roles manage and whether apt has their lists, the
    GPU users with their groups and the C(gpulab.rocm) block of their C(~/.bashrc), C(adduser.conf), the
    C(/opt/rocm) alternative, the linker cache, free disk, Secure Boot, whether the kernel
    headers of the running and of every installed kernel are installed or installable, the kernel side of the
    driver (section C(driver)), the GPUs on the PCI bus (M(gpulab.rocm.gpu_pci_facts)) and what
    C(rocminfo), C(amd-smi) and, where it is installed, C(rocm-smi) report (legacy ROCm and the ROCm Core SDK
    alike); on request, the container engines and their GPU settings.
  - Changes nothing. M(gpulab.rocm.plan) runs it once per host and keeps the result as C(gpulab_node); the roles
    plan from it. Run alone, it returns the same under C(ansible_facts.gpulab_node).
  - Never follows a user's symlink and never returns a user's C(~/.bashrc) beyond the gpulab.rocm block.
author:
  - gpulab.rocm contributors (@gpulab)
options:
  sections:
    description:
      - What to read; the default is everything but C(candidates), C(autoremove), C(fix_broken), C(containers),
        C(slurm_state), C(gpu_holders) and C(tuning), and C(paths) only where O(paths) names some.
      - Section C(gpu_holders) (read for the C(rocm_partition) role before a partition change) lists the processes
        that hold C(/dev/kfd), a render node or a card open, from the links of C(/proc/<pid>/fd) (at most 4096
        processes and 4096 descriptors each; complete only as root).
      - Section C(containers) (read for the C(rocm_containers) role) reads the container engines present
        (C(podman), C(docker) and their versions), whether dockerd runs, when it started and how many containers it
        runs, C(/etc/docker/daemon.json), the CDI specs of C(/etc/cdi) and C(/var/run/cdi), C(/dev/kfd) and
        C(/dev/dri), C(/bin/busybox), the ranges of C(/etc/subuid) and C(/etc/subgid), and which of O(users) are
        local (in C(/etc/passwd)).
      - Section C(modules) (read for the C(rocm_modules) role) reads the ROCm releases under C(/opt) (each
        C(/opt/rocm-X.Y.Z) folder, and each ROCm Core SDK C(/opt/rocm/core-X.Y) folder, with its C(.info/version)),
        where C(/opt/rocm) points (C(/opt/rocm/core) for the Core SDK), the C(rocm) folder of each of
        O(modulefiles_dirs) with its files, and the lines of C(/etc/ld.so.conf.d) that name a ROCm folder.
      - Section C(driver) (read for C(rocm_driver)'s guard and C(rocm_verify)) reads, under O(kernel_root), the
        installed kernels (each folder of C(/lib/modules) with a C(modules.dep)) with, per kernel, its headers
        package, whether C(build/include) is there, its image package, its in-tree
        C(kernel/drivers/gpu/drm/amd/amdgpu/amdgpu.ko*) and its DKMS C(updates/dkms/amdgpu.ko*); the running kernel;
        every DKMS tree under C(/var/lib/dkms) (module, version, where C(source) links, the kernels it was built
        and installed for, whether it built an C(amdgpu.ko)); the loaded amdgpu under O(sysfs_root)
        (C(module/amdgpu/version), C(srcversion), and whether AMD's C(amdkcl) is loaded); the free space of
        C(/boot) and C(/var/lib/dkms). Where DKMS installed an amdgpu for the running kernel, C(modinfo -F
        srcversion) of the module it built (one run).
      - Section C(tuning) (read for C(rocm_tuning) where a profile is set) reads C(/proc/cmdline), GRUB's
        C(/etc/default/grub) and C(/etc/default/grub.d/*.cfg), whether C(/boot/grub) and C(update-grub) are there,
        C(/proc/sys/kernel/numa_balancing), C(/etc/sysctl.conf) and C(/etc/sysctl.d/*.conf), C(limits.conf) and
        C(/etc/security/limits.d/*.conf), the probe's own memlock limit, each CPU's cpufreq governor under
        O(sysfs_root), the role's own files and its reboot record, and the boot time (at most 64 files a folder,
        64 KiB a file, no link followed).
    type: list
    elements: str
    choices: [os, packages, apt, files, users, alternatives, ldconfig, disk, firmware, gpus, tools, versions,
              candidates, paths, autoremove, fix_broken, containers, slurm, slurm_state, modules,
              health, driver, gpu_holders, tuning]
  users:
    description: Users whose groups and C(~/.bashrc) block are read (the stack-wide C(rocm_gpu_users)).
    type: list
    elements: str
    default: []
  groups:
    description: Groups whose existence and members are read.
    type: list
    elements: str
    default: [video, render]
  kernel_driver:
    description:
      - The stack-wide C(rocm_kernel_driver); where the driver would be installed, whether the headers of the
        running kernel and of every installed kernel are offered by apt's lists is read too (one pass over the
        lists).
    type: str
    choices: [auto, always, never]
    default: auto
  kernel_root:
    description:
      - Where section C(driver) reads C(/lib/modules), C(/boot), C(/var/lib/dkms) and C(/usr/src) (links are
        resolved under it); C(/) on a host. Tests and the Molecule scenario lay out a tree elsewhere (a container
        shares the host's kernel).
    type: path
    default: /
    version_added: 0.4.0
  candidates:
    description:
      - Packages whose versions in the apt sources are read (C(apt-cache madison)), for section C(candidates).
      - Section C(autoremove) lists what C(apt-get autoremove) would remove, and section C(fix_broken) what
        C(apt-get install --fix-broken) would remove (simulations, so nothing changes).
      - Section C(slurm) reads Slurm's configuration files in O(slurm_conf_dir), the munge key's owner, mode and
        checksum (never its content), Slurm's binaries and version, whether slurmd has the C(gpu_rsmi.so) plugin
        and the linker's folders ROCm SMI's library (C(librocm_smi64), which that plugin loads), which of munged,
        slurmd and slurmctld run (processes of root and the C(munge) and C(slurm) users only), and the CPU and NUMA
        topology under O(sysfs_root). Section C(slurm_state) asks the controller for every node as
        Slurm sees it (C(scontrol show node -o)).
      - Section C(health) reads the last result of C(gpulab-gpu-health) (C(/var/lib/gpulab/health/last.json),
        role C(rocm_health)) - its verdict and failing checks; a link, a file not owned by root or writable by others
        is not read - and the GPU count its data file C(/etc/gpulab/health.json) records (only from a regular file
        owned by root).
    type: list
    elements: str
    default: []
  paths:
    description: More paths described for section C(paths) (type, owner, mode; never followed).
    type: list
    elements: path
    default: []
  modulefiles_dirs:
    description: Modulefile folders whose C(rocm) folder is read, for section C(modules).
    type: list
    elements: path
    default: [/etc/lmod/modules, /etc/environment-modules/modules]
    version_added: 0.3.0
  disk_path:
    description: Where ROCm goes; the free space of its filesystem (or of its nearest existing parent) is read.
    type: path
    default: /opt
  rocm_path:
    description:
      - The ROCm installation. Section C(versions) reads its version file - C(.info/version) of a legacy release,
        else C(core/.info/version) of the ROCm Core SDK (C(/opt/rocm/core) links to the newest C(/opt/rocm/core-X.Y)).
      - Where a GPU tool is not in C(PATH), it is looked for in its C(bin), C(core/bin) and the newest
        C(core-X.Y/bin).
    type: path
    default: /opt/rocm
  amd_smi_metric:
    description: Also run C(amd-smi metric) (current PCIe link, sensors); its slowest call.
    type: bool
    default: true
  sysfs_root:
    description: Where sysfs is read (tests point it at a fixture tree).
    type: path
    default: /sys
  slurm_conf_dir:
    description: Slurm's configuration folder, for sections C(slurm) and C(slurm_state).
    type: path
    default: /etc/slurm
    version_added: 0.3.0
  slurm_plugin_dir:
    description:
      - Where slurmd's plugins are, for section C(slurm); empty reads C(PluginDir) from slurm.conf, else the
        distributions' folders (C(/usr/lib/<triplet>/slurm-wlm), C(/usr/lib64/slurm), C(/usr/lib/slurm),
        C(/usr/local/lib/slurm)).
    type: str
    default: ''
    version_added: 0.3.0
  tool_timeout:
    description:
      - Seconds each GPU tool (C(rocminfo), C(rocm-smi), each C(amd-smi) call) may run before it is stopped
        (coreutils C(timeout) sends TERM, then KILL 5 seconds later; the probe kills the tool's whole process group
        itself if anything of it is left). A tool stopped so is a problem of the host that preflight names; the
        other commands of the probe (apt, ldconfig, the engines, Slurm) have fixed limits.
      - Every command's output is read to at most 16 MiB per stream while it runs; a command that prints more is
        stopped and named in C(timeouts), as is one that exits while a process it started keeps its output open.
    type: int
    default: 60
    version_added: 0.3.0
attributes:
  check_mode:
    support: full
    description: The module only reads; it runs the same in check mode.
  diff_mode:
    support: none
    description: Nothing changes, so there is no diff.
  facts:
    support: full
    description: Run alone, the result is returned under C(ansible_facts.gpulab_node).
notes:
  - Runs as root to read other users' groups and dotfile blocks; every read is done without following symlinks,
    and bounded (docs/security.md gives the bounds).
  - Every string it returns is valid UTF-8; a byte that is not (in a tool's output, a link's target) is replaced
    by U+FFFD and named in C(notices).
seealso:
  - module: gpulab.rocm.plan
  - module: gpulab.rocm.gpu_pci_facts
  - module: gpulab.rocm.rocminfo_facts
'''

EXAMPLES = r'''
- name: Read the node
  gpulab.rocm.node_probe:
    users: [alice, bob]

- name: Read only what the packages changed
  gpulab.rocm.node_probe:
    sections: [packages, tools]
'''

RETURN = r'''
ansible_facts:
  description: The node's state under C(gpulab_node); the schema is in docs/facts.md ("The node probe").
  returned: always
  type: dict
  contains:
    gpulab_node:
      description:
        - One key per section read (C(os), C(packages), C(apt), C(files), C(users), C(groups), C(alternatives),
          C(ldconfig), C(disk), C(firmware), C(gpu_pci), C(tools), C(versions), C(candidates), C(containers),
          C(slurm), C(slurm_state), C(modules), C(health) with C(health_recorded_gpu_count), C(driver), C(tuning)), plus
          C(sections),
          C(params), C(notices) (what was replaced or left unread, and why) and C(timeouts) (the tools stopped - by
          their time limit, for printing more than 16 MiB, or for a process they started that held their output
          open).
      returned: always
      type: dict
'''

import grp
import os
import pwd
import shutil
import tempfile
import time
from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpulab.rocm.plugins.module_utils.host import node_state as ns
from ansible_collections.gpulab.rocm.plugins.module_utils.host.tuning_state import tuning_state
from ansible_collections.gpulab.rocm.plugins.module_utils.parsers._facts_common import (
    ToolTimeout, process_run, rocm_version_files, timed_run, tool_dirs, utf8_notice, valid_utf8,
)
from ansible_collections.gpulab.rocm.plugins.module_utils.parsers import firmware
from ansible_collections.gpulab.rocm.plugins.module_utils.parsers.gpu_tools import read_all
from ansible_collections.gpulab.rocm.plugins.module_utils.node.health_run import (
    read_recorded_count, read_result as read_health_result,
)
from ansible_collections.gpulab.rocm.plugins.module_utils.apt.openpgp import (
    dearmor, expired_keys, primary_fingerprints, trusted_keyring,
)
from ansible_collections.gpulab.rocm.plugins.module_utils.parsers.pci import gather_pci, read_cpu_topology
from ansible_collections.gpulab.rocm.plugins.module_utils.planning.rocm_packages import parse_madison
from ansible_collections.gpulab.rocm.plugins.module_utils.parsers.slurm_conf import (
    parse_scontrol_nodes, split_line, words_to_dict,
)
from ansible_collections.gpulab.rocm.plugins.module_utils.planning.stack import driver_wanted

SECTIONS = ['os', 'packages', 'apt', 'files', 'users', 'alternatives', 'ldconfig', 'disk', 'firmware', 'gpus',
            'tools', 'versions', 'candidates', 'paths', 'autoremove', 'fix_broken', 'containers', 'slurm',
            'slurm_state', 'modules', 'health', 'driver', 'gpu_holders', 'tuning']
DEFAULT_SECTIONS = [section for section in SECTIONS
                    if section not in ('candidates', 'paths', 'autoremove', 'fix_broken', 'containers', 'slurm_state',
                                       'gpu_holders', 'tuning')]
# Slurm's own files as the role rocm_slurm reads them (never the munge key's content).
SLURM_FILES = ('slurm.conf', 'gres.conf', 'cgroup.conf')
SLURMD_DEFAULTS = '/etc/default/slurmd'
MUNGE_KEY = '/etc/munge/munge.key'
SLURM_BINARIES = ('slurmd', 'slurmctld', 'scontrol', 'sinfo', 'munged', 'mungekey')
SLURM_DAEMONS = ('munged', 'slurmd', 'slurmctld')
# Plain C locale for the tools whose output is parsed.
ENV = {'LANG': 'C', 'LC_ALL': 'C', 'DEBIAN_FRONTEND': 'noninteractive'}
# Seconds for the probe's other commands: apt (its own network timeouts are shorter), ldconfig, the engines' and
# Slurm's --version; docker ps and scontrol ask a daemon that may be wedged, so they get less.
COMMAND_TIMEOUT = 300
DAEMON_TIMEOUT = 20


class Probe(object):
    def __init__(self, module):
        self.module = module
        self.params = module.params
        self.node = {'notices': [], 'timeouts': []}
        timeout = module.get_bin_path('timeout')
        self._gpu_run = timed_run(self._run, timeout, module.params['tool_timeout'], self.node['notices'])
        self._run_bounded = timed_run(self._run, timeout, COMMAND_TIMEOUT, self.node['notices'])

    @staticmethod
    def _run(argv, **kwargs):
        """process_run: its output bounded while read, the tool's process group stopped at timed_run's timeout."""
        return process_run(argv, environ_update=ENV, **kwargs)

    def run(self, argv, seconds=None):
        """A command with a time limit; one stopped (by it, for printing more than process_run reads, or for a process
        it started holding its output open) is recorded in timeouts and returns rc 124."""
        try:
            return self._run_bounded(argv, seconds=seconds)
        except ToolTimeout as exc:
            self.node['timeouts'].append(str(exc))
            return 124, '', str(exc)

    def find(self, tool):
        """A tool in PATH or the ROCm folders, legacy or Core SDK (_facts_common.tool_dirs)."""
        return self.module.get_bin_path(tool, opt_dirs=tool_dirs(self.params['rocm_path']))

    def packages(self):
        status = ns.read_text('/var/lib/dpkg/status', limit=64 << 20) or ''
        packages = ns.parse_dpkg_status(status)
        self.node['packages'] = packages
        self.node['dpkg_pending'] = ns.dpkg_pending('/', packages)

    def files(self):
        files = dict((path, ns.describe_file(path)) for path in ns.MANAGED_FILES)
        files[ns.APT_JOURNAL] = ns.describe_file(ns.APT_JOURNAL, with_content=False)
        # Both streams' keyrings, and any other one a managed sources file names (a lab's own path).
        keyrings = dict((path, self.keyring(path)) for path in (ns.KEYRING, ns.CORE_KEYRING))
        for path in ns.ROCM_SOURCES_FILES:
            for line in ns.sources_of(path, files[path].get('content')):
                keyring = line['options'].get('signed-by')
                if keyring and keyring.startswith('/') and keyring not in keyrings:
                    keyrings[keyring] = self.keyring(keyring)
        self.node['files'] = files
        self.node['keyrings'] = keyrings

    @staticmethod
    def keyring(path):
        """A keyring's primary-key fingerprints, and whether it holds nothing but those public keys (clean)."""
        info = ns.describe_file(path, with_content=False)
        if info.get('type') == 'file':
            data = ns.read_bytes(path, ns.KEYRING_LIMIT) or b''
            try:
                if len(data) > ns.KEYRING_LIMIT:
                    raise ValueError('it is larger than %d bytes, which no signing key is' % ns.KEYRING_LIMIT)
                info['fingerprints'] = primary_fingerprints(dearmor(data))
                info['clean'] = trusted_keyring(data, info['fingerprints']) == data
                # apt then fails with EXPKEYSIG: the vendor re-issues the key with a new expiry, fetch it again.
                info['expired'] = expired_keys(dearmor(data), time.time())
            except ValueError as exc:
                info.update(fingerprints=info.get('fingerprints') or [], clean=False, error=str(exc))
        return info

    def apt(self):
        texts = dict((path, ns.read_text(path)) for path in ns.ROCM_SOURCES_FILES)
        apt = ns.apt_lists('/', dict((path, text) for path, text in texts.items() if text))
        # Installed or installable: the packages preflight needs before any change.
        packages = self.node.get('packages')
        if packages is None:
            self.packages()
            packages = self.node['packages']
        wanted = []
        gpu_pci = self.node.get('gpu_pci') or {}
        kernel = os.uname()[2]
        headers = 'linux-headers-' + kernel
        if driver_wanted(self.params['kernel_driver'], gpu_pci.get('in_container', _in_container())):
            # The running kernel's headers, and every installed kernel's: DKMS builds amdgpu for each of them.
            wanted += ns.headers_packages(self.params.get('kernel_root') or '/', kernel)
        apt['headers_package'] = headers
        # Installed, else offered by a package list (read directly: building apt's cache costs a second or so).
        query = [name for name in wanted if (packages.get(name) or ['  '])[0][1] != 'i']
        policy = dict((name, {'installed': packages[name][1], 'candidate': None})
                      for name in wanted if name not in query)
        listed = ns.listed_packages('/', query)
        for name in query:
            policy[name] = {'installed': None, 'candidate': 'listed' if name in listed else None}
        apt['policy'] = policy
        apt['lists_empty'] = not ns.has_package_lists('/')
        if apt['lists_empty']:
            apt['archive'] = self.archive_reachable()
        self.node['apt'] = apt

    def archive_reachable(self):
        """Whether apt reaches the host's own package sources: their Release files fetched into a folder of the
        probe's (the host's lists stay as they are), with apt's own proxy and TLS settings. Only on a host whose
        lists are empty, to tell whether the first refresh can bring the distribution's packages."""
        workdir = tempfile.mkdtemp(prefix='gpulab-probe-apt-')
        try:
            os.chmod(workdir, 0o755)
            parts = os.path.join(workdir, 'sources.list.d')
            os.mkdir(parts)
            for entry in sorted(os.listdir('/etc/apt/sources.list.d')):
                path = os.path.join('/etc/apt/sources.list.d', entry)
                if entry.endswith(('.list', '.sources')) and path not in ns.ROCM_SOURCES_FILES:
                    shutil.copy(path, parts)
            argv = ['apt-get', 'update', '--quiet', '-o', 'Dir::State::Lists=%s' % workdir,
                    '-o', 'Dir::Etc::SourceParts=%s' % parts, '-o', 'APT::Get::List-Cleanup=0']
            for target in ('Packages', 'Translations', 'DEP-11', 'DEP-11-icons', 'DEP-11-icons-small',
                           'DEP-11-icons-hidpi', 'CNF', 'Contents-deb'):
                argv += ['-o', 'Acquire::IndexTargets::deb::%s::DefaultEnabled=false' % target]
            rc, stdout, stderr = self.run(argv)
            output = (stdout + '\n' + stderr).strip()
            lines = [line.strip() for line in output.splitlines()]
            # apt's W:/E: lines name the URL and the reason ("Failed to fetch URL  Temporary failure resolving ...").
            errors = ([line for line in lines if line.startswith(('E:', 'W:')) and 'Failed to fetch' in line]
                      + [line for line in lines if line.startswith(('E:', 'W:', 'Err:'))])
            return {'reachable': rc == 0 and not errors, 'error': errors[0] if errors else None}
        finally:
            shutil.rmtree(workdir, ignore_errors=True)

    def candidates(self):
        names = [name for name in self.params['candidates'] if name and not name.startswith('-')]
        result = {}
        if names:
            rc, stdout, stderr = self.run(['apt-cache', 'madison'] + names)
            result = parse_madison(stdout.splitlines())
            if rc != 0:
                self.node['candidates_error'] = (stderr or stdout).strip()[-2000:]
                self.node['sources_error'] = ns.apt_source_error('/', stderr + '\n' + stdout)
        self.node['candidates'] = dict((name, result.get(name, [])) for name in names)

    def autoremove(self):
        rc, stdout, stderr = self.run(['apt-get', '--simulate', '--quiet', 'autoremove'])
        self.node['autoremove'] = ns.parse_simulated_removals(stdout) if rc == 0 else []
        if rc != 0:
            self.node['autoremove_error'] = (stderr or stdout).strip()[-2000:]

    def fix_broken(self):
        rc, stdout, stderr = self.run(['apt-get', '--simulate', '--quiet', 'install', '--fix-broken'])
        self.node['fix_broken'] = {
            'removes': ns.parse_simulated_removals(stdout), 'rc': rc,
            'error': None if rc == 0 else (stderr or stdout).strip()[-2000:]}

    def users(self):
        users = {}
        for name in self.params['users']:
            try:
                entry = pwd.getpwnam(name)
            except KeyError:
                users[name] = {'exists': False}
                continue
            try:
                groups = sorted(set(grp.getgrgid(gid).gr_name for gid in os.getgrouplist(name, entry.pw_gid)))
            except (KeyError, OSError):
                groups = []
            path = os.path.join(entry.pw_dir, '.bashrc')
            bashrc = ns.describe_file(path, with_content=False)
            home = ns.describe_file(entry.pw_dir, with_content=False)
            if bashrc.get('type') == 'file' and bashrc.get('size', 0) > ns.BASHRC_LIMIT:
                bashrc.update(block=None, markers='over_limit', limit=ns.BASHRC_LIMIT)
            elif bashrc.get('type') == 'file':
                text = ns.read_bytes(path, ns.BASHRC_LIMIT)
                if text is not None and len(text) > ns.BASHRC_LIMIT:  # it grew since the lstat
                    bashrc.update(block=None, markers='over_limit', limit=ns.BASHRC_LIMIT)
                else:
                    bashrc.update(ns.bashrc_block(path, (text or b'').decode('utf-8', 'replace')))
            users[name] = {'exists': True, 'uid': entry.pw_uid, 'gid': entry.pw_gid, 'home': entry.pw_dir,
                           'home_state': home, 'groups': groups, 'bashrc': bashrc}
        groups = {}
        for name in self.params['groups']:
            try:
                entry = grp.getgrnam(name)
                groups[name] = {'exists': True, 'gid': entry.gr_gid, 'members': list(entry.gr_mem)}
            except KeyError:
                groups[name] = {'exists': False}
        self.node['users'] = users
        self.node['groups'] = groups

    def ldconfig(self):
        rc, stdout, _stderr = self.run(['ldconfig', '-p']) if self.find('ldconfig') else (1, '', '')
        self.node['ldconfig'] = ns.ldconfig_state('/', ns.LDCONFIG_FILE, ns.parse_ldconfig_p(stdout))

    def gpus(self):
        self.node['gpu_pci'] = firmware.add_to_pci(gather_pci(self.params['sysfs_root'], '/', '/proc'),
                                                   self.params['sysfs_root'])

    def tools(self):
        self.node['tools'] = read_all(self._gpu_run, self.find, self.params['amd_smi_metric'], self.module.warn)
        self.node['timeouts'] += [facts['error'] for _key, facts in sorted(self.node['tools'].items())
                                  if facts.get('error_kind') == 'timeout']

    def containers(self):
        """The container engines and their GPU settings (rocm_containers). Read-only: `--version` of each engine, and
        `docker ps --quiet` (through timeout, so a wedged daemon cannot stall the probe) only when dockerd runs."""
        engines = {}
        for name in ('podman', 'docker'):
            path = self.module.get_bin_path(name)
            version = None
            if path:
                rc, stdout, _stderr = self.run([path, '--version'])
                version = ns.parse_engine_version(stdout) if rc == 0 else None
            engines[name] = {'path': path, 'version': version}
        daemon = ns.docker_daemon('/', '/proc')
        daemon.update(containers_running=None, error=None)
        if daemon['running'] and engines['docker']['path']:
            rc, stdout, stderr = self.run([engines['docker']['path'], 'ps', '--quiet'], seconds=DAEMON_TIMEOUT)
            if rc == 0:
                daemon['containers_running'] = len(stdout.split())
            else:
                daemon['error'] = (stderr or stdout).strip()[-500:] or 'docker ps exited with %d' % rc
        specs, folders = ns.cdi_specs('/')
        self.node['containers'] = {
            'engines': engines,
            'docker_daemon': daemon,
            'daemon_json': ns.describe_file(ns.DOCKER_DAEMON_JSON),
            'docker_dir': ns.describe_file(os.path.dirname(ns.DOCKER_DAEMON_JSON), with_content=False),
            'cdi_specs': specs,
            'cdi_dirs': folders,
            'devices': ns.gpu_device_nodes('/'),
            'busybox': ns.describe_file('/bin/busybox', with_content=False),
            'subids': dict((path, ns.parse_subids(ns.read_text(path, limit=16 << 20)))
                           for path in ns.SUBID_FILES),
            'local_users': [name for name in ns.local_users('/') if name in self.params['users']],
        }

    def slurm(self):
        conf_dir = self.params['slurm_conf_dir']
        files = dict((name, ns.describe_file(os.path.join(conf_dir, name))) for name in SLURM_FILES)
        files['defaults'] = ns.describe_file(SLURMD_DEFAULTS)
        binaries = dict((name, self.module.get_bin_path(name, opt_dirs=['/usr/sbin', '/usr/local/sbin']))
                        for name in SLURM_BINARIES)
        version = None
        tool = binaries['slurmd'] or binaries['scontrol']
        if tool:
            rc, stdout, _stderr = self.run([tool, '-V'])
            version = stdout.strip().splitlines()[0] if rc == 0 and stdout.strip() else None
        plugin_dir, rsmi = slurm_plugins(self.params['slurm_plugin_dir'], (files['slurm.conf'].get('content')))
        users = {}
        for name in ('munge', 'slurm'):
            try:
                entry = pwd.getpwnam(name)
                users[name] = {'uid': entry.pw_uid, 'gid': entry.pw_gid}
            except KeyError:
                users[name] = None
        daemon_owners = set([0]) | set(user['uid'] for user in users.values() if user)
        self.node['slurm'] = {
            'conf_dir': conf_dir,
            'conf_dir_state': ns.describe_file(conf_dir, with_content=False),
            'files': files,
            'munge_key': ns.describe_file(MUNGE_KEY, with_content=False),
            'users': users,
            'binaries': binaries,
            'version': version,
            'plugin_dir': plugin_dir,
            'rsmi_plugin': rsmi,
            'rsmi_library': rocm_smi_library('/'),
            'daemons': running_daemons('/proc', SLURM_DAEMONS, daemon_owners),
            'hostname': os.uname()[1].split('.')[0],
            'topology': read_cpu_topology(self.params['sysfs_root']),
        }

    def slurm_state(self):
        scontrol = self.module.get_bin_path('scontrol', opt_dirs=['/usr/sbin'])
        conf = os.path.join(self.params['slurm_conf_dir'], 'slurm.conf')
        state = {'nodes': [], 'error': None}
        if not scontrol or not os.path.isfile(conf):
            state['error'] = 'no Slurm here (%s)' % ('no scontrol' if not scontrol else 'no %s' % conf)
        else:
            rc, stdout, stderr = self.run([scontrol, 'show', 'node', '-o'], seconds=DAEMON_TIMEOUT)
            state['nodes'] = parse_scontrol_nodes(stdout)
            if rc != 0:
                state['error'] = 'scontrol show node failed (rc %s): %s' % (rc, (stderr or stdout).strip()[-500:])
        self.node['slurm_state'] = state

    def modules(self):
        self.node['modules'] = ns.modules_state('/', self.params['modulefiles_dirs'])

    def driver(self):
        """The kernel side of the driver (node_state.driver_state) and, where DKMS installed an amdgpu for the running
        kernel, the srcversion of the module it built (one modinfo run: the kernel packages compress modules with
        zstd or xz, which modinfo reads)."""
        packages = self.node.get('packages')
        if packages is None:
            self.packages()
            packages = self.node['packages']
        root = self.params.get('kernel_root') or '/'
        state = ns.driver_state(root, self.params['sysfs_root'], os.uname()[2], os.uname()[4], packages)
        path = ns.running_dkms_module(state)
        state['running_dkms_srcversion'] = None
        modinfo = self.module.get_bin_path('modinfo', opt_dirs=['/usr/sbin', '/sbin']) if path else None
        if modinfo:
            rc, stdout, _stderr = self.run([modinfo, '-F', 'srcversion', ns.at(root, path)])
            state['running_dkms_srcversion'] = ns.modinfo_field(stdout) if rc == 0 else None
        self.node['driver'] = state

    def versions(self):
        # The legacy release's .info/version, else the ROCm Core SDK's core/.info/version ('10.1.0-2'); rocm_file
        # says which was read.
        rocm, rocm_file = None, None
        for path in rocm_version_files(self.params['rocm_path']):
            text = (ns.read_text(path, limit=4096) or '').strip()
            if text:
                rocm, rocm_file = text.splitlines()[0].strip(), path
                break
        amdgpu = (ns.read_text(os.path.join(self.params['sysfs_root'], 'module/amdgpu/version')) or '').strip()
        self.node['versions'] = {'rocm': rocm, 'rocm_file': rocm_file,
                                 'amdgpu': amdgpu.splitlines()[0] if amdgpu else None}
        # Whether the installed amdgpu-dkms can be the loaded one: installed (unpacked) after this boot means not
        # yet, whatever a killed run left undone; the reboot marker says whether someone was told.
        self.node['versions'].update(ns.driver_boot_state('/', '/proc', 'amdgpu-dkms'))


def slurm_plugins(configured, slurm_conf):
    """(slurmd's plugin folder, whether gpu_rsmi.so is in it): the configured folder, else PluginDir of slurm.conf
    (its first folder), else the first of the distributions' folders that exists."""
    candidates = []
    if configured:
        candidates.append(configured)
    for line in (slurm_conf or '').splitlines():
        words, _comment = split_line(line)
        for key, value in words_to_dict(words):
            if key.lower() == 'plugindir' and value:
                candidates.append(value.split(':')[0])
    candidates += ['/usr/lib/%s/slurm-wlm' % _triplet(), '/usr/lib64/slurm', '/usr/lib/slurm', '/usr/local/lib/slurm']
    for folder in candidates if not configured else candidates[:1]:
        if os.path.isdir(folder):
            return folder, os.path.isfile(os.path.join(folder, 'gpu_rsmi.so'))
    return None, False


def _triplet():
    """Debian's multiarch folder name for this machine (x86_64-linux-gnu)."""
    return {'x86_64': 'x86_64-linux-gnu', 'aarch64': 'aarch64-linux-gnu',
            'ppc64le': 'powerpc64le-linux-gnu'}.get(os.uname()[4], os.uname()[4] + '-linux-gnu')


def rocm_smi_library(root='/'):
    """The first librocm_smi64.so* (ROCm SMI's library, rocm-smi-lib) in the linker's folders - its default ones and
    those /etc/ld.so.conf.d names - or None. Slurm's AutoDetect=rsmi dlopen()s it and finds no GPU without it
    (openhpc/ohpc#2057): the ROCm Core SDK does not register its libraries with ldconfig (TheRock#6718), and it is
    dropping rocm-smi-lib (TheRock stopped building it in July 2026, TheRock#6852)."""
    folders = ['/lib/' + _triplet(), '/usr/lib/' + _triplet(), '/lib64', '/usr/lib64', '/lib', '/usr/lib']
    try:
        confs = sorted(name for name in os.listdir(ns.at(root, '/etc/ld.so.conf.d')) if name.endswith('.conf'))
    except OSError:
        confs = []
    for name in confs:
        text = ns.read_text(ns.at(root, '/etc/ld.so.conf.d/' + name)) or ''
        folders += [line.strip() for line in text.splitlines() if line.strip().startswith('/')]
    for folder in folders:
        try:
            names = sorted(os.listdir(ns.at(root, folder)))
        except OSError:
            continue
        for entry in names:
            if entry == 'librocm_smi64.so' or entry.startswith('librocm_smi64.so.'):
                return folder.rstrip('/') + '/' + entry
    return None


def running_daemons(proc_root, names, owners):
    """{name: running} for each process name, from /proc/<pid>/comm, counting only processes of the uids in owners
    (root and the daemons' own users): any user can start a process named slurmctld."""
    found = dict((name, False) for name in names)
    try:
        entries = os.listdir(proc_root)
    except OSError:
        return found
    for entry in entries:
        if entry.isdigit():
            comm = (ns.read_text(os.path.join(proc_root, entry, 'comm'), limit=64) or '').strip()
            if comm in found and not found[comm]:
                try:
                    found[comm] = os.stat(os.path.join(proc_root, entry)).st_uid in owners
                except OSError:
                    continue
    return found


def _in_container():
    from ansible_collections.gpulab.rocm.plugins.module_utils.parsers.pci import detect_container
    return detect_container('/', '/proc')[0]


def main():
    module = AnsibleModule(
        argument_spec=dict(
            sections=dict(type='list', elements='str', choices=SECTIONS),
            users=dict(type='list', elements='str', default=[]),
            groups=dict(type='list', elements='str', default=['video', 'render']),
            kernel_driver=dict(type='str', choices=['auto', 'always', 'never'], default='auto'),
            kernel_root=dict(type='path', default='/'),
            candidates=dict(type='list', elements='str', default=[]),
            paths=dict(type='list', elements='path', default=[]),
            disk_path=dict(type='path', default='/opt'),
            rocm_path=dict(type='path', default='/opt/rocm'),
            amd_smi_metric=dict(type='bool', default=True),
            sysfs_root=dict(type='path', default='/sys'),
            slurm_conf_dir=dict(type='path', default='/etc/slurm'),
            slurm_plugin_dir=dict(type='str', default=''),
            tool_timeout=dict(type='int', default=60),
            modulefiles_dirs=dict(type='list', elements='path',
                                  default=['/etc/lmod/modules', '/etc/environment-modules/modules']),
        ),
        supports_check_mode=True,
    )
    # The whole probe also describes the paths it is given (the files the phases compare: one read for all).
    sections = module.params['sections'] or DEFAULT_SECTIONS + (['paths'] if module.params['paths'] else [])
    probe = Probe(module)
    node = probe.node
    # GPUs first: whether the host is a container decides what the apt section asks.
    for section in ['gpus'] + [name for name in SECTIONS if name != 'gpus']:
        if section not in sections:
            continue
        try:
            if section == 'os':
                node['os'] = ns.os_facts('/', os.uname()[2], os.uname()[4])
            elif section == 'disk':
                node['disk'] = ns.disk_free('/', module.params['disk_path'])
            elif section == 'firmware':
                node['firmware'] = {'secure_boot': ns.secure_boot(module.params['sysfs_root'])}
            elif section == 'paths':
                node['paths'] = dict((path, ns.describe_file(path, with_content=False))
                                     for path in module.params['paths'])
            elif section == 'health':
                node['health'] = read_health_result()
                node['health_recorded_gpu_count'] = read_recorded_count()
            elif section == 'gpu_holders':
                # Only for a partition change (plan_partition.probe_needs): every process's fd links, bounded.
                holders, truncated = ns.gpu_holders('/proc')
                node['gpu_holders'] = {'processes': holders, 'truncated': truncated}
            elif section == 'tuning':
                node['tuning'] = tuning_state('/', '/proc', module.params['sysfs_root'])
            elif section == 'alternatives':
                node['alternatives'] = {'rocm': ns.alternative('/', 'rocm')}
            else:
                getattr(probe, section)()
        except (IOError, OSError) as exc:
            module.fail_json(msg='The probe could not read %s: %s' % (section, exc), section=section)
    node['sections'] = sorted(sections)
    node['params'] = dict((key, module.params[key]) for key in ('users', 'groups', 'kernel_driver', 'kernel_root',
                                                                'disk_path',
                                                                'rocm_path', 'amd_smi_metric', 'sysfs_root',
                                                                'paths', 'slurm_conf_dir', 'slurm_plugin_dir',
                                                                'tool_timeout', 'modulefiles_dirs'))
    # Last: every string valid UTF-8 (a user's link to '/tmp/\xff' would make ansible-core refuse the whole reply).
    places = []
    node = valid_utf8(node, 'gpulab_node', places)
    if places:
        node['notices'].append(utf8_notice(places))
    module.exit_json(changed=False, ansible_facts={'gpulab_node': node})


if __name__ == '__main__':
    main()
