# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpulab.rocm.container_check run in-process with run_command patched: the image it builds, the commands it runs,
and how it judges what a container saw. (The real engines run it in molecule/containers.)"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import io
import tarfile

from ansible_collections.gpulab.rocm.plugins.modules import container_check
from ansible_collections.gpulab.rocm.tests.unit.gpu_facts_helpers import run_module

PODMAN = '/usr/bin/podman'
CASES = {'all': ['/dev/kfd', '/dev/dri/renderD128', '/dev/dri/renderD129'],
         '1': ['/dev/kfd', '/dev/dri/renderD129']}


def test_the_image_holds_busybox_alone(tmp_path):
    busybox = tmp_path / 'busybox'
    busybox.write_bytes(b'\x7fELF fixture busybox')
    with tarfile.open(fileobj=io.BytesIO(container_check.image_tar(str(busybox)))) as tar:
        members = dict((member.name, member) for member in tar.getmembers())
        assert sorted(members) == ['bin', 'bin/busybox', 'bin/sh', 'dev', 'etc', 'proc', 'root', 'sys', 'tmp']
        assert tar.extractfile('bin/busybox').read() == b'\x7fELF fixture busybox'
        assert members['bin/sh'].issym() and members['bin/sh'].linkname == 'busybox'
        assert all(member.uid == 0 and member.gid == 0 for member in members.values())


def podman(seen, gids='0 44 999', image_present=True):
    """An engine whose containers show the devices of seen[name] for --device amd.com/gpu=<name>."""
    def run(argv):
        if argv[1:3] == ['image', 'inspect']:
            return (0, 'sha256:0123\n', '') if image_present else (125, '', 'Error: image not known')
        if argv[1] == 'import':
            return 0, 'sha256:0123\n', ''
        name = argv[argv.index('--device') + 1].split('=', 1)[1]
        return 0, ''.join('dev %s\n' % path for path in seen[name]) + 'gids %s\n' % gids, ''
    return run


def test_a_container_that_sees_exactly_its_gpus_passes():
    result, runner = run_module(container_check.main, {'engine': 'podman', 'cases': CASES, 'gids': [44, 999]},
                                podman(CASES), bin_path=PODMAN)
    assert result['failed'] is False and result['changed'] is False
    assert [run['device'] for run in result['runs']] == ['amd.com/gpu=all', 'amd.com/gpu=1']
    argv = runner.call_args_list[1][0][0]
    assert argv[:7] == [PODMAN, 'run', '--rm', '--pull=never', '--network=none', '--device', 'amd.com/gpu=all']
    assert argv[7:10] == ['localhost/gpulab-rocm-gpu-check:1', '/bin/busybox', 'sh']


def test_one_device_too_many_or_a_missing_group_fails_with_both_lists():
    seen = dict(CASES, **{'1': CASES['all']})
    result, _runner = run_module(container_check.main, {'engine': 'podman', 'cases': CASES, 'gids': [44, 999]},
                                 podman(seen, gids='0 44'), bin_path=PODMAN)
    assert result['failed'] is True
    assert ('amd.com/gpu=1 shows /dev/dri/renderD128, /dev/dri/renderD129, /dev/kfd, expected exactly /dev/dri/renderD129, '
            '/dev/kfd') in result['msg']
    assert 'amd.com/gpu=all runs without the groups 999 (it has 0 44)' in result['msg']


def test_a_missing_image_is_imported_from_busybox(tmp_path, monkeypatch):
    busybox = tmp_path / 'busybox'
    busybox.write_bytes(b'fixture')
    monkeypatch.setattr(container_check.AnsibleModule, 'tmpdir', str(tmp_path), raising=False)
    result, runner = run_module(container_check.main, {'engine': 'podman', 'cases': CASES, 'busybox': str(busybox)},
                                podman(CASES, image_present=False), bin_path=PODMAN)
    assert result['changed'] is True and result['imported'] is True
    assert runner.call_args_list[1][0][0] == [PODMAN, 'import', str(tmp_path / 'gpu-check.tar'),
                                              'localhost/gpulab-rocm-gpu-check:1']
