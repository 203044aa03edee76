#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: container_check
short_description: Start a small local container with the node's CDI GPUs and check the devices it sees
version_added: 0.3.0
description:
  - Runs C(ENGINE run --device amd.com/gpu=NAME) for each name of O(cases) and checks that the container sees
    exactly the listed device nodes under C(/dev/kfd) and C(/dev/dri), and (run as root) the additional groups
    O(gids).
  - The image is built on the node from its static busybox (O(busybox)) and imported into the engine's own storage
    (the calling user's, for rootless Podman) when it is missing; no registry is asked (C(--pull=never)), and the
    containers get no network.
  - Run it as a user (C(become_user)) to check that the user can start GPU containers with rootless Podman.
author:
  - gpulab.rocm contributors (@gpulab)
options:
  engine:
    description: The container engine.
    type: str
    choices: [podman, docker]
    required: true
  cases:
    description: CDI device name (V(all), V(0), ...) to the device paths the container must show, exactly.
    type: dict
    required: true
  gids:
    description: Groups the container's root process must have (the spec's additional groups); not checked rootless.
    type: list
    elements: int
    default: []
  image:
    description: The local image; built from O(busybox) when the engine lacks it.
    type: str
    default: localhost/gpulab-rocm-gpu-check:1
  busybox:
    description: A statically linked busybox (Debian's busybox-static installs C(/bin/busybox)).
    type: path
    default: /bin/busybox
attributes:
  check_mode:
    support: full
    description: Says whether the image would be imported; starts no container.
  diff_mode:
    support: none
    description: Nothing is configured.
notes:
  - Rootless Podman passes the user's own groups into the container with C(--group-add keep-groups) (AMD's container
    toolkit documents it for rootless use); the module adds it when it runs as a user other than root.
seealso:
  - module: gpulab.rocm.plan
'''

EXAMPLES = r'''
- name: Check that a container sees the node's GPUs
  gpulab.rocm.container_check:
    engine: podman
    cases:
      all: [/dev/kfd, /dev/dri/card0, /dev/dri/renderD128]
      "0": [/dev/kfd, /dev/dri/card0, /dev/dri/renderD128]
    gids: [44, 992]
'''

RETURN = r'''
imported:
  description: Whether the image was imported (or would be, in check mode).
  returned: always
  type: bool
runs:
  description: One entry per case, as C(device), C(expected), C(seen) (device paths), C(gids) and C(ok).
  returned: when containers were started
  type: list
  elements: dict
'''

import io
import os
import tarfile
import time

from ansible.module_utils.basic import AnsibleModule

SCRIPT = 'for f in /dev/kfd /dev/dri/*; do [ -e "$f" ] && echo "dev $f"; done; echo "gids $(id -G)"'


def image_tar(busybox):
    """A root filesystem holding busybox alone (with sh linked to it), as tar bytes."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode='w') as tar:
        for folder, mode in (('bin', 0o755), ('dev', 0o755), ('etc', 0o755), ('proc', 0o555), ('sys', 0o555),
                             ('tmp', 0o1777), ('root', 0o700)):
            info = tarfile.TarInfo(folder)
            info.type, info.mode = tarfile.DIRTYPE, mode
            tar.addfile(info)
        with open(busybox, 'rb') as handle:
            data = handle.read()
        info = tarfile.TarInfo('bin/busybox')
        info.size, info.mode = len(data), 0o755
        tar.addfile(info, io.BytesIO(data))
        link = tarfile.TarInfo('bin/sh')
        link.type, link.linkname, link.mode = tarfile.SYMTYPE, 'busybox', 0o777
        tar.addfile(link)
    return buffer.getvalue()


def parse_output(text):
    devices, gids = [], []
    for line in text.splitlines():
        if line.startswith('dev '):
            devices.append(line[4:].strip())
        elif line.startswith('gids '):
            gids = [int(word) for word in line[5:].split() if word.isdigit()]
    return sorted(devices), gids


def wait_for_docker(module, engine, seconds=30):
    """dockerd answers some time after a restart (at once with systemd's notify, later with an init script): wait
    for it, so that its check does not fail on a daemon that is still starting."""
    deadline = time.time() + seconds
    while True:
        rc, out, err = module.run_command([engine, 'version', '--format', '{{.Server.Version}}'])
        if rc == 0:
            return
        if time.time() > deadline:
            module.fail_json(msg='dockerd does not answer after %d s: %s' % (seconds, (err or out).strip()))
        time.sleep(1)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            engine=dict(type='str', choices=['podman', 'docker'], required=True),
            cases=dict(type='dict', required=True),
            gids=dict(type='list', elements='int', default=[]),
            image=dict(type='str', default='localhost/gpulab-rocm-gpu-check:1'),
            busybox=dict(type='path', default='/bin/busybox'),
        ),
        supports_check_mode=True,
    )
    params = module.params
    engine = module.get_bin_path(params['engine'])
    if not engine:
        if module.check_mode:  # an earlier task of the role installs it; check mode only said so
            module.exit_json(changed=True, imported=True, msg='check mode: %s is not installed yet' % params['engine'])
        module.fail_json(msg='%s is not installed (or not on PATH)' % params['engine'])
    rootless = os.geteuid() != 0
    if params['engine'] == 'docker' and not module.check_mode:
        wait_for_docker(module, engine)
    rc, _out, _err = module.run_command([engine, 'image', 'inspect', '--format', '{{.Id}}', params['image']])
    imported = rc != 0
    if imported and not module.check_mode:
        if not os.path.isfile(params['busybox']):
            module.fail_json(msg='%s is missing: the check image is built from a static busybox (Debian package '
                                 'busybox-static)' % params['busybox'])
        path = os.path.join(module.tmpdir, 'gpu-check.tar')
        with open(path, 'wb') as handle:
            handle.write(image_tar(params['busybox']))
        rc, out, err = module.run_command([engine, 'import', path, params['image']])
        if rc != 0:
            module.fail_json(msg='%s import of the check image failed: %s' % (params['engine'], (err or out).strip()))
    if module.check_mode:
        module.exit_json(changed=imported, imported=imported, msg='check mode: no container started')

    runs, problems = [], []
    for name in sorted(params['cases'], key=lambda item: (item != 'all', item.zfill(4))):
        expected = sorted(str(path) for path in params['cases'][name])
        argv = [engine, 'run', '--rm', '--pull=never', '--network=none', '--device', 'amd.com/gpu=%s' % name]
        if rootless and params['engine'] == 'podman':
            argv += ['--group-add', 'keep-groups']
        rc, out, err = module.run_command(argv + [params['image'], '/bin/busybox', 'sh', '-c', SCRIPT])
        if rc != 0:
            module.fail_json(msg='%s run --device amd.com/gpu=%s failed (rc %d)%s: %s' % (
                params['engine'], name, rc, ' as uid %d' % os.geteuid() if rootless else '', (err or out).strip()),
                runs=runs, imported=imported)
        seen, gids = parse_output(out)
        missing_gids = [] if rootless else sorted(set(params['gids']) - set(gids))
        ok = seen == expected and not missing_gids
        runs.append({'device': 'amd.com/gpu=%s' % name, 'expected': expected, 'seen': seen, 'gids': gids, 'ok': ok})
        if seen != expected:
            problems.append('amd.com/gpu=%s shows %s, expected exactly %s'
                            % (name, ', '.join(seen) or 'no device', ', '.join(expected)))
        if missing_gids:
            problems.append('amd.com/gpu=%s runs without the groups %s (it has %s)'
                            % (name, ', '.join(map(str, missing_gids)), ' '.join(map(str, gids))))
    if problems:
        module.fail_json(msg='%s: %s' % (params['engine'], '; '.join(problems)), runs=runs, imported=imported)
    module.exit_json(changed=imported, imported=imported, runs=runs,
                     msg='%s%s: %d container(s) saw exactly their GPUs'
                     % (params['engine'], ' (rootless, uid %d)' % os.geteuid() if rootless else '', len(runs)))


if __name__ == '__main__':
    main()
