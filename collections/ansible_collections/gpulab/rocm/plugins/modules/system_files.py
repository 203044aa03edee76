#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: system_files
short_description: Write or remove root-owned configuration files and system groups, all in one module run
version_added: 0.2.0
description:
  - Writes each file of O(files), O(library) and O(executables) whose content, owner or mode differs, and removes
    each path of O(remove), in one module run (M(ansible.builtin.copy) transfers a file per item); makes the
    system groups of O(groups) and adds the users of O(members) to theirs in the same run, so a phase's writes are
    one round trip to the host. The contents come from the task, typically built by M(gpulab.rocm.plan).
  - Everything is checked first (paths, folders, group and user names, that the users exist); a refusal changes
    nothing.
  - Every write is atomic (a temporary file in the same folder, renamed over the target), so a link at the target
    is replaced, never followed. A folder that is not owned by root, or that others can write to, is refused before
    anything is written.
author:
  - gpulab.rocm contributors (@gpulab)
options:
  dirs:
    description:
      - Folders to make first, in this order (parents before children), owned by root with mode 0755; one that
        exists gets that owner and mode. A path that is there but is not a folder (a link is never followed), or
        that must be made in a folder others can write to or a login user (uid 1000 or more) owns, is refused before
        anything changes.
    type: list
    elements: path
    default: []
    version_added: 0.3.0
  files:
    description: Path to content of the files to write (mode O(mode)).
    type: dict
    default: {}
  library:
    description:
      - Path to content of code to write like O(files) (mode O(mode)), without a diff of its content (the
        collection's own module_utils that a program on the host runs, thousands of lines); C(changed_files) names
        each one written.
    type: dict
    default: {}
    version_added: 0.3.0
  executables:
    description: Path to content of the commands to write, mode 0755.
    type: dict
    default: {}
    version_added: 0.3.0
  groups:
    description: Groups that must exist, made as system groups (C(groupadd --system)) where missing, before the files.
    type: list
    elements: str
    default: []
    version_added: 0.3.0
  members:
    description:
      - User name to the groups it must be in (C(gpasswd --add)); only adds, leaving a user's other groups as they
        are. Every user must exist and every group be there or in O(groups).
    type: dict
    default: {}
    version_added: 0.3.0
  remove:
    description: Paths to remove.
    type: list
    elements: path
    default: []
  mode:
    description: Mode of the files of O(files) and O(library).
    type: str
    default: '0644'
  ldconfig:
    description:
      - Rebuild the dynamic linker cache (C(ldconfig)) afterwards. It is rebuilt anyway when a file under
        C(/etc/ld.so.conf.d/) was written or removed, in the same run, so no later step can be lost between the two.
    type: bool
    default: false
attributes:
  check_mode:
    support: full
    description: Reports the files it would write or remove without touching them.
  diff_mode:
    support: full
    description: One diff per folder made, file written or removed (but O(library)'s), and one of the groups.
seealso:
  - module: ansible.builtin.copy
'''

EXAMPLES = r'''
- name: Write the profile and linker files
  gpulab.rocm.system_files:
    files:
      /etc/profile.d/rocm.sh: |
        export ROCM_PATH=/opt/rocm
      /etc/ld.so.conf.d/rocm.conf: |
        /opt/rocm/lib

- name: GPU groups, their users and adduser.conf in one round trip
  gpulab.rocm.system_files:
    groups: [video, render]
    members:
      alice: [video, render]
    files:
      /etc/adduser.conf: "{{ adduser_conf_text }}"

- name: A program's folders, code and command
  gpulab.rocm.system_files:
    dirs: [/usr/local/lib/gpulab]
    library:
      /usr/local/lib/gpulab/checks.py: "{{ lookup('ansible.builtin.file', 'checks.py') }}"
    executables:
      /usr/local/sbin/gpulab-check: |
        #!/usr/bin/python3
        import sys; sys.path.insert(0, '/usr/local/lib/gpulab'); import checks; checks.main()
'''

RETURN = r'''
changed_files:
  description: The folders made or given root's ownership and mode, and the paths written or removed.
  returned: always
  type: list
  elements: str
created:
  description: The groups made.
  returned: always
  type: list
  elements: str
  version_added: 0.3.0
added:
  description: User to the groups it was added to.
  returned: always
  type: dict
  version_added: 0.3.0
ldconfig:
  description: Whether the linker cache was rebuilt (or would be, in check mode).
  returned: always
  type: bool
'''

import errno
import os
import stat

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpulab.rocm.plugins.module_utils.host import groups as system_groups
from ansible_collections.gpulab.rocm.plugins.module_utils.host.root_files import (
    folder_changes, make_folders, write_atomic,
)


def current(path):
    """(content bytes or None, mode, uid, gid, is_file)."""
    try:
        info = os.lstat(path)
    except OSError:
        return None, None, None, None, False
    if not stat.S_ISREG(info.st_mode):
        return None, stat.S_IMODE(info.st_mode), info.st_uid, info.st_gid, False
    fd = os.open(path, os.O_RDONLY | getattr(os, 'O_NOFOLLOW', 0))
    with os.fdopen(fd, 'rb') as handle:
        data = handle.read()
    return data, stat.S_IMODE(info.st_mode), info.st_uid, info.st_gid, True


def check_folder(module, path):
    folder = os.path.dirname(path)
    try:
        info = os.stat(folder)
    except OSError as exc:
        if module.check_mode and exc.errno == errno.ENOENT:
            return  # made by an earlier task of the role, which check mode only reported
        module.fail_json(msg='Cannot write %s: its folder %s is not there (%s). Nothing was changed.'
                             % (path, folder, exc))
    if info.st_uid != 0 or info.st_mode & 0o022:
        module.fail_json(msg='Refusing to write %s: its folder %s is owned by uid %d with mode %04o; a system file '
                             'goes in a folder only root can write to. Nothing was changed.'
                             % (path, folder, info.st_uid, stat.S_IMODE(info.st_mode)))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            dirs=dict(type='list', elements='path', default=[]),
            files=dict(type='dict', default={}),
            library=dict(type='dict', default={}),
            executables=dict(type='dict', default={}),
            remove=dict(type='list', elements='path', default=[]),
            mode=dict(type='str', default='0644'),
            groups=dict(type='list', elements='str', default=[]),
            members=dict(type='dict', default={}),
            ldconfig=dict(type='bool', default=False),
        ),
        supports_check_mode=True,
    )
    mode = int(module.params['mode'], 8)
    # path -> (content, mode, whether its diff is shown)
    wanted = {}
    for option, file_mode, shown in (('files', mode, True), ('library', mode, False), ('executables', 0o755, True)):
        for path, content in module.params[option].items():
            if path in wanted:
                module.fail_json(msg='%s is given twice (%s). Nothing was changed.' % (path, option))
            wanted[path] = (content.encode('utf-8'), file_mode, shown)
    for path in list(wanted) + module.params['remove'] + module.params['dirs']:
        if not os.path.isabs(path) or '/../' in path + '/':
            module.fail_json(msg='%s is not an absolute path. Nothing was changed.' % path)
    try:
        created, added = system_groups.missing(module.params['groups'], module.params['members'])
        folders = folder_changes(module.params['dirs'])
    except (ValueError, OSError) as exc:
        module.fail_json(msg='%s. Nothing was changed.' % exc)
    made = set(path for path, _action in folders)
    writes, diffs = [], []
    for path, action in folders:
        diffs.append(dict(before_header=path, after_header=path, before='' if action == 'make' else 'a folder\n',
                          after='a folder of root, mode 0755\n'))
    if created or added:
        diffs.append(dict(before_header='groups', after_header='groups', before='',
                          after=system_groups.describe(created, added)))
    for path in sorted(wanted):
        if os.path.dirname(path) not in made:
            check_folder(module, path)
        content, file_mode, shown = wanted[path]
        data, current_mode, uid, gid, is_file = current(path)
        if not (is_file and data == content and current_mode == file_mode and uid == 0 and gid == 0):
            writes.append(path)
            if shown:
                diffs.append(dict(before_header=path, after_header=path,
                                  before=(data or b'').decode('utf-8', 'replace') if is_file else '',
                                  after=content.decode('utf-8', 'replace')))
    removals = [path for path in module.params['remove'] if os.path.lexists(path)]
    for path in removals:
        data = current(path)[0]
        diffs.append(dict(before_header=path, after_header='(removed)',
                          before=(data or b'').decode('utf-8', 'replace'), after=''))
    changed = [path for path, _action in folders] + writes + removals
    ldconfig = module.params['ldconfig'] or any(path.startswith('/etc/ld.so.conf.d/') for path in changed)
    if not module.check_mode:
        try:
            make_folders(folders)
        except OSError as exc:
            module.fail_json(msg='Cannot make the folders %s: %s' % (', '.join(path for path, _a in folders), exc))
        system_groups.add(module.run_command, created, added)
        for path in writes:
            try:
                write_atomic(path, wanted[path][0], wanted[path][1])
            except (IOError, OSError) as exc:
                module.fail_json(msg='Cannot write %s: %s' % (path, exc), changed_files=writes[:writes.index(path)])
        for path in removals:
            os.unlink(path)
        if ldconfig:
            module.run_command(['ldconfig'], check_rc=True)
    # The diff only where it was asked for (a task with diff: false gets none, whatever the command line says).
    module.exit_json(changed=bool(changed or created or added) or ldconfig, changed_files=changed, created=created,
                     added=added, ldconfig=ldconfig, **(dict(diff=diffs) if module._diff else {}))


if __name__ == '__main__':
    main()
