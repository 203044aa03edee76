#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: apt_packages
short_description: Install, remove and hold Debian packages with apt-get and dpkg, without python3-apt
version_added: 0.3.0
description:
  - Runs C(apt-get), C(apt-mark) and C(dpkg-query) with argument lists (no shell), so the host needs no
    python3-apt. One C(dpkg-query) says what is installed; nothing else runs when every package is as asked.
  - In this order, each step only when something is left to do, with C(DEBIAN_FRONTEND=noninteractive) and dpkg's
    C(--force-confdef --force-confold) (a changed configuration file is kept), waiting at most O(lock_timeout)
    seconds for another process's dpkg lock. Refreshes apt's lists (O(refresh)), downloads first
    (O(download_first)), removes O(remove_first), installs O(install) in one apt transaction (exact versions where
    an item says C(name=version)), removes O(remove), then sets and releases the O(holds).
  - A failed step stops the module with apt's own reason and what to do (gpulab.rocm's apt_errors), the tail of
    apt's output, and what the steps before it already changed.
author:
  - gpulab.rocm contributors (@gpulab)
options:
  install:
    description:
      - Packages to install, C(name) or C(name=version). A name is installed when dpkg has it fully installed (at
        that version, when one is given); a package that dpkg left half done is installed again.
      - The version may be a pattern with C(*) and C(?), such as C(amdgpu-dkms=*.60204-*); the newest version apt
        offers that matches it is installed (C(apt-get) itself takes no pattern).
    type: list
    elements: str
    default: []
  remove_first:
    description: Packages to remove before the install (the packages the new ones replace).
    type: list
    elements: str
    default: []
  remove:
    description: Packages to remove after the install.
    type: list
    elements: str
    default: []
  purge:
    description: Remove with C(apt-get purge) (configuration files too); a package left in the config-files state
      is purged as well.
    type: bool
    default: false
  holds:
    description: Package name to V(hold) or V(install) (the hold released); packages dpkg does not know are skipped.
    type: dict
    default: {}
  refresh:
    description:
      - Refresh apt's lists before installing, and only when something is to be installed (or, in a call that
        names no package, only refresh; not in check mode). V(never); V(all) every source, unless the newest list is
        younger than O(cache_valid_time); V(sources) only the sources files in O(sources) (the host's other lists
        are kept). A refresh alone is not reported as a change.
    type: str
    choices: [never, all, sources]
    default: never
  sources:
    description: The sources files whose lists O(refresh=sources) refreshes.
    type: list
    elements: path
    default: []
  cache_valid_time:
    description: With O(refresh=all), seconds for which lists are fresh enough; 0 always refreshes.
    type: int
    default: 0
  download_first:
    description: Download the packages to install before removing O(remove_first), so that a failed download
      changes nothing.
    type: bool
    default: false
  install_recommends:
    description: Install the packages' recommendations too.
    type: bool
    default: false
  allow_downgrade:
    description: Allow an item's version to be older than the installed one.
    type: bool
    default: false
  allow_change_held_packages:
    description: Allow apt to change or remove held packages.
    type: bool
    default: false
  lock_timeout:
    description: Seconds to wait for another process's dpkg lock (apt waits) or apt's lists lock (the module waits, as
      apt-get update does not) before failing with the lock and the process that holds it.
    type: int
    default: 60
attributes:
  check_mode:
    support: full
    description: Says what would change from dpkg's status, and asks C(apt-get --simulate) what the transaction
      would install and remove (RV(simulation)). Where apt cannot resolve it yet (a repository an earlier task would
      configure), it warns with apt's line and reports the change without the simulation.
  diff_mode:
    support: full
    description: What changes (or in check mode would change), one line per package, as C(prepared) text.
notes:
  - Debian and Ubuntu only. Needs C(apt-get), C(apt-mark) and C(dpkg-query); not python3-apt.
seealso:
  - module: gpulab.rocm.apt_source
'''

EXAMPLES = r'''
- name: ROCm at exact versions, and held there
  gpulab.rocm.apt_packages:
    install: [rocm-core=6.2.4.60204-139~22.04, rocminfo=1.0.0.60204-139~22.04]
    allow_downgrade: true
    holds: {rocm-core: hold, rocminfo: hold}
    lock_timeout: 120

- name: The distribution's packages, refreshing lists older than an hour
  gpulab.rocm.apt_packages:
    install: [podman, busybox]
    refresh: all
    cache_valid_time: 3600

- name: Purge what the plan removes
  gpulab.rocm.apt_packages:
    remove: [rocm-core, rocminfo]
    purge: true
'''

RETURN = r'''
installed:
  description: Package to version that dpkg set up (dependencies included); in check mode what apt would install.
  returned: always
  type: dict
removed:
  description: Packages removed (or in check mode, that apt would remove).
  returned: always
  type: list
  elements: str
held:
  description: Packages put on hold.
  returned: always
  type: list
  elements: str
unheld:
  description: Packages whose hold was released.
  returned: always
  type: list
  elements: str
refreshed:
  description: Whether apt's lists were refreshed.
  returned: always
  type: bool
packages:
  description: dpkg's status of the named packages after the run, name to [status abbreviation, version] (as
    gpulab.rocm.node_probe reports packages), so that nothing reads the host again to learn it.
  returned: always
  type: dict
unfinished:
  description: On a failed install or removal, the packages dpkg has left unfinished, name to state
    (half-configured, unpacked, half-installed, triggers-awaiting, triggers-pending).
  returned: on such a failure, when there are any
  type: dict
reason:
  description: On a failure, apt's reason in one sentence with what to do, and what this run had already changed.
  returned: failure
  type: str
simulation:
  description: In check mode, what C(apt-get --simulate) says (install, remove, purge, configure), or null when apt
    could not resolve the transaction.
  returned: in check mode when something would change
  type: dict
'''

import os
import shutil
import tempfile
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpulab.rocm.plugins.module_utils.apt import apt_packages as ap
from ansible_collections.gpulab.rocm.plugins.module_utils.apt.apt_errors import classify, lock_held, unfinished
from ansible_collections.gpulab.rocm.plugins.module_utils.planning.rocm_packages import parse_madison

LISTS = '/var/lib/apt/lists'


class Apt(object):
    def __init__(self, module):
        self.module = module
        self.params = module.params
        self.result = dict(changed=False, installed={}, removed=[], held=[], unheld=[], refreshed=False, packages={})

    def run(self, argv, step):
        rc, stdout, stderr = self.module.run_command(argv, environ_update=ap.ENVIRONMENT)
        if rc != 0:
            self.fail(step, stdout, stderr)
        return stdout + '\n' + stderr

    def fail(self, step, stdout, stderr):
        done = [key for key in ('installed', 'removed', 'held', 'unheld') if self.result[key]]
        changed = ('; before it, this run changed: %s' % ', '.join(
            '%s %s' % (key, ', '.join(sorted(self.result[key]))) for key in done)) if done else ''
        self.result['changed'] = self.result['changed'] or bool(done)
        found = classify([stderr, stdout])
        reason = found['reason'] + self.unfinished_packages(found['kind']) + changed + self.gap(step)
        self.module.fail_json(msg='%s failed: %s' % (step, reason), reason=reason, stdout=stdout[-4000:],
                              stderr=stderr[-4000:], **self.result)

    def gap(self, step):
        """After the packages a release replaces were removed and its own failed to install (a move between ROCm's
        streams removes one before the other comes): what the host has now, and that the next run finishes it."""
        removed_first = [name for name in self.params['remove_first'] if name in self.result['removed']]
        if not step.startswith('Installing') or not removed_first:
            return ''
        return (' The packages the new ones replace were removed before (%s), so neither the old nor the new packages '
                'are complete on this host now: fix the cause and run the same play again; its plan installs what is '
                'missing.' % ', '.join(removed_first))

    def unfinished_packages(self, kind):
        """After a failed install or removal: the packages dpkg has left unfinished (half-configured, unpacked,
        triggers-awaiting), named, since each blocks every later apt run until configured or removed."""
        if kind not in ('package_failed', 'dpkg_interrupted', 'other'):
            return ''
        _rc, stdout, _stderr = self.module.run_command(ap.status_argv([]), environ_update=ap.ENVIRONMENT)
        left = unfinished(ap.parse_status(stdout))
        if not left:
            return ''
        self.result['unfinished'] = left
        return ' dpkg has these packages unfinished now: %s.' % ', '.join(
            '%s (%s)' % item for item in sorted(left.items()))

    def update(self, argv, step):
        """apt-get update, waiting up to lock_timeout for apt's lists lock (apt-get update fails at once while
        another update, such as apt-daily's, holds it)."""
        deadline = time.time() + self.params['lock_timeout']
        while True:
            rc, stdout, stderr = self.module.run_command(argv, environ_update=ap.ENVIRONMENT)
            held = lock_held(stdout + '\n' + stderr) if rc != 0 else None
            if held is None or held['lock'] != 'lists' or time.time() >= deadline:
                break
            time.sleep(max(0.1, min(2, deadline - time.time())))
        if rc != 0:
            self.fail(step, stdout, stderr)
        return stdout + '\n' + stderr

    def status(self, package_names):
        if not package_names:
            return {}
        # rc 1 only says that some names are unknown to dpkg (not installed).
        _rc, stdout, _stderr = self.module.run_command(ap.status_argv(package_names), environ_update=ap.ENVIRONMENT)
        return ap.parse_status(stdout)

    def refresh(self):
        params = self.params
        if params['refresh'] == 'all':
            try:
                mtimes = [os.stat(os.path.join(LISTS, name)).st_mtime for name in os.listdir(LISTS)
                          if ap.release_file(name)]
            except OSError:
                mtimes = []
            if ap.lists_fresh(mtimes, time.time(), params['cache_valid_time']):
                return
            self.update(ap.update_argv(params['lock_timeout']), 'apt-get update')
        else:
            workdir = tempfile.mkdtemp(prefix='gpulab-apt-')
            try:
                for index, path in enumerate(params['sources']):
                    shutil.copy(path, os.path.join(workdir, '%02d-%s' % (index, os.path.basename(path))))
                output = self.update(ap.update_argv(params['lock_timeout'], workdir), 'apt-get update of %s'
                                     % ', '.join(params['sources']))
            finally:
                shutil.rmtree(workdir, ignore_errors=True)
            # apt exits 0 when a source was not refreshed; its E:/W: lines say so.
            if any(line.startswith(('E:', 'W:')) and 'Download is performed unsandboxed' not in line
                   for line in output.splitlines()):
                self.fail('apt-get update of %s' % ', '.join(params['sources']), output, '')
        self.result['refreshed'] = True

    def simulate(self, todo):
        params = self.params
        steps = []
        if todo['install']:
            # The removal first and the install as one simulated transaction (apt's "name-" removes): each alone
            # would be asked of a state the other changes.
            steps.append(ap.install_argv(todo['install'] + ['%s-' % name for name in todo['remove_first']],
                                         params['lock_timeout'], simulate=True, recommends=params['install_recommends'],
                                         downgrade=params['allow_downgrade'], held=params['allow_change_held_packages'],
                                         purge=params['purge']))
        elif todo['remove_first']:
            steps.append(ap.remove_argv(todo['remove_first'], params['lock_timeout'], params['purge'], simulate=True,
                                        held=params['allow_change_held_packages']))
        if todo['remove']:
            steps.append(ap.remove_argv(todo['remove'], params['lock_timeout'], params['purge'], simulate=True,
                                        held=params['allow_change_held_packages']))
        simulation = {'install': {}, 'remove': [], 'purge': [], 'configure': []}
        for argv in steps:
            rc, stdout, stderr = self.module.run_command(argv, environ_update=ap.ENVIRONMENT)
            if rc != 0:
                self.module.warn('Check mode: apt cannot simulate this yet (%s); the steps before it would change '
                                 'what apt knows (a repository not configured yet, lists not refreshed).'
                                 % classify([stderr, stdout])['reason'])
                return None
            step = ap.parse_simulation(stdout)
            simulation['install'].update(step['install'])
            for key in ('remove', 'purge', 'configure'):
                simulation[key] += step[key]
        return simulation

    def apply(self):
        params = self.params
        try:
            install = ap.parse_items(params['install'], 'install')
            remove_first = ap.parse_items(params['remove_first'], 'remove_first')
            remove = ap.parse_items(params['remove'], 'remove')
            ap.check_holds(params['holds'])
        except ValueError as exc:
            self.module.fail_json(msg='%s. Nothing was changed.' % exc)
        if params['refresh'] == 'sources' and not params['sources']:
            self.module.fail_json(msg='refresh=sources needs the sources files to refresh (sources). Nothing was '
                                      'changed.')
        named = ap.names([name for name, _v in install + remove_first + remove], list(params['holds']))
        if not named:
            # A call that names no package only refreshes (lists are a cache: not a change); check mode does not.
            if params['refresh'] != 'never' and not self.module.check_mode:
                self.refresh()
            return self.result
        before = self.status(named)
        todo = ap.plan(before, install, remove_first, remove, params['purge'], params['holds'])
        self.result['packages'] = dict((name, list(value)) for name, value in before.items())
        if not any(todo.values()):
            return self.result
        self.result['changed'] = True
        if self.module.check_mode:
            if todo['install']:
                todo['install'] = self.pin_patterns(todo['install'], check=True)
            simulation = self.simulate(todo) if (todo['install'] or todo['remove'] or todo['remove_first']) else {}
            self.result['simulation'] = simulation
            if simulation:
                self.result['installed'] = simulation['install']
                self.result['removed'] = sorted(set(simulation['remove'] + simulation['purge']))
            else:
                self.result['installed'] = dict((name, version or 'candidate') for name, version in
                                                ap.parse_items(todo['install'], 'install'))
                self.result['removed'] = todo['remove_first'] + todo['remove']
            self.result['held'], self.result['unheld'] = todo['hold'], todo['unhold']
            return self.result

        lock, held = params['lock_timeout'], params['allow_change_held_packages']
        if todo['install'] and params['refresh'] != 'never':
            self.refresh()
        todo['install'] = self.pin_patterns(todo['install'])
        if todo['install'] and params['download_first'] and todo['remove_first']:
            self.run(ap.install_argv(todo['install'], lock, download_only=True, recommends=params['install_recommends'],
                                     downgrade=params['allow_downgrade'], held=held), 'Downloading the packages')
        for key, items, step in (('remove_first', todo['remove_first'], 'Removing the packages the new ones replace'),
                                 ('install', todo['install'], 'Installing %s' % ', '.join(todo['install'])),
                                 ('remove', todo['remove'], 'Removing %s' % ', '.join(todo['remove']))):
            if not items:
                continue
            argv = (ap.install_argv(items, lock, recommends=params['install_recommends'],
                                    downgrade=params['allow_downgrade'], held=held) if key == 'install'
                    else ap.remove_argv(items, lock, params['purge'], held=held))
            rc, stdout, stderr = self.module.run_command(argv, environ_update=ap.ENVIRONMENT)
            done = ap.parse_done(stdout)
            self.result['installed'].update(done['installed'])
            self.result['removed'] = sorted(set(self.result['removed'] + done['removed'] + done['purged']))
            if rc != 0:
                self.fail(step, stdout, stderr)
        for selection, key in (('hold', 'held'), ('unhold', 'unheld')):
            if todo[selection]:
                self.mark(selection, todo[selection])
                self.result[key] = todo[selection]
        after = self.status(sorted(set(named) | set(self.result['installed']) | set(self.result['removed'])))
        self.result['packages'] = dict((name, list(value)) for name, value in after.items())
        return self.result

    def pin_patterns(self, items, check=False):
        """name=pattern items pinned to the newest matching version apt offers (apt-get takes no pattern)."""
        parsed = ap.parse_items(items, 'install')
        patterns = [name for name, version in parsed if ap.is_pattern(version)]
        if not patterns:
            return items
        _rc, stdout, _stderr = self.module.run_command(ap.madison_argv(patterns), environ_update=ap.ENVIRONMENT)
        resolved, unmatched = ap.resolve(parsed, parse_madison(stdout.splitlines()))
        if unmatched and check:
            self.module.warn('Check mode: apt offers no version matching %s yet (a repository an earlier task would '
                             'configure).' % ', '.join(unmatched))
            return [item for item in items if item not in unmatched]
        if unmatched:
            # Worded as apt words it for a version it does not have, so that apt_errors gives its advice.
            self.fail('Choosing the versions', stdout, '\n'.join(
                "E: Version '%s' for '%s' was not found" % tuple(reversed(item.split('=', 1))) for item in unmatched))
        return ['%s=%s' % item if item[1] else item[0] for item in resolved]

    def diff(self):
        lines = ['install %s %s' % item for item in sorted(self.result['installed'].items())]
        lines += ['remove %s' % name for name in self.result['removed']]
        lines += ['hold %s' % name for name in self.result['held']]
        lines += ['unhold %s' % name for name in self.result['unheld']]
        return {'prepared': '\n'.join(lines) + '\n'}

    def mark(self, selection, package_names):
        """apt-mark hold/unhold, retried while another process holds dpkg's lock (apt-mark has no lock timeout)."""
        deadline = time.time() + self.params['lock_timeout']
        while True:
            rc, stdout, stderr = self.module.run_command(ap.mark_argv(selection, package_names),
                                                         environ_update=ap.ENVIRONMENT)
            if rc == 0:
                return
            if classify([stderr, stdout])['kind'] != 'lock' or time.time() >= deadline:
                self.fail('apt-mark %s %s' % (selection, ' '.join(package_names)), stdout, stderr)
            time.sleep(1)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            install=dict(type='list', elements='str', default=[]),
            remove_first=dict(type='list', elements='str', default=[]),
            remove=dict(type='list', elements='str', default=[]),
            purge=dict(type='bool', default=False),
            holds=dict(type='dict', default={}),
            refresh=dict(type='str', choices=['never', 'all', 'sources'], default='never'),
            sources=dict(type='list', elements='path', default=[]),
            cache_valid_time=dict(type='int', default=0),
            download_first=dict(type='bool', default=False),
            install_recommends=dict(type='bool', default=False),
            allow_downgrade=dict(type='bool', default=False),
            allow_change_held_packages=dict(type='bool', default=False),
            lock_timeout=dict(type='int', default=60),
        ),
        supports_check_mode=True,
    )
    apt = Apt(module)
    result = apt.apply()
    if module._diff and result['changed']:
        result['diff'] = apt.diff()
    module.exit_json(**result)


if __name__ == '__main__':
    main()
