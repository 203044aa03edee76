"""node_probe's view of the Slurm daemons: a process counts only when root or the daemon's own user runs it, since
any lab user can start a process named slurmctld."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.gpulab.rocm.plugins.modules.node_probe import running_daemons

NAMES = ('munged', 'slurmd', 'slurmctld')


def proc_tree(tmp_path, processes):
    """A /proc with one folder per pid and its comm file; the folders are owned by whoever runs the test."""
    for pid, comm in processes.items():
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / 'comm').write_text(comm + '\n')
    (tmp_path / 'self').mkdir()
    return str(tmp_path)


def test_a_daemon_of_an_allowed_owner_is_running(tmp_path):
    proc = proc_tree(tmp_path, {101: 'slurmd', 102: 'bash'})
    assert running_daemons(proc, NAMES, {os.getuid()}) == {'munged': False, 'slurmd': True, 'slurmctld': False}


def test_a_process_of_another_user_named_like_a_daemon_does_not_count(tmp_path):
    proc = proc_tree(tmp_path, {201: 'slurmctld', 202: 'munged'})
    assert running_daemons(proc, NAMES, {os.getuid() + 1}) == dict((name, False) for name in NAMES)


def test_no_proc_means_nothing_runs(tmp_path):
    assert running_daemons(str(tmp_path / 'missing'), NAMES, {0}) == dict((name, False) for name in NAMES)
