# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpulab.rocm.controller_files: write files on the controller, in this process (docs in
plugins/modules/controller_files.py). A report is the controller's own output: no module needs to run for it."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import tempfile

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase


class ActionModule(ActionBase):

    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        _valid, args = self.validate_argument_spec(argument_spec=dict(
            dest=dict(type='path', required=True),
            files=dict(type='dict', required=True),
            mode=dict(type='str', default='0644'),
        ))
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        folder, mode = args['dest'], int(args['mode'], 8)
        changed, diffs = [], []
        for name, content in sorted(args['files'].items()):
            if os.path.basename(name) != name or name in ('.', '..'):
                raise AnsibleActionFail('%r is not a file name (no folders): the files go in dest' % (name,))
            path = os.path.join(folder, name)
            data = content.encode('utf-8')
            try:
                with open(path, 'rb') as handle:
                    before = handle.read()
            except (IOError, OSError):
                before = None
            if before == data:
                continue
            changed.append(path)
            diffs.append(dict(before_header=path, after_header=path,
                              before=(before or b'').decode('utf-8', 'replace'), after=content))
            if self._task.check_mode:
                continue
            try:
                if not os.path.isdir(folder):
                    os.makedirs(folder, 0o755)
                handle, temporary = tempfile.mkstemp(dir=folder, prefix='.%s.' % name)
                with os.fdopen(handle, 'wb') as out:
                    out.write(data)
                os.chmod(temporary, mode)
                os.rename(temporary, path)
            except (IOError, OSError) as exc:
                raise AnsibleActionFail('Cannot write %s on the controller: %s' % (path, exc))
        result.update(changed=bool(changed), changed_files=changed, diff=diffs)
        return result
