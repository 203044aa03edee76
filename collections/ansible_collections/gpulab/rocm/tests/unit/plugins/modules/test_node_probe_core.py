"""node_probe on a ROCm Core SDK node: the installed release read from /opt/rocm/core/.info/version and the GPU tools
found under the Core layout, and the legacy layout read as before.

The fake roots are built here, in the layout of rocm-reference.md 13: a folder per release (/opt/rocm/core-X.Y, each
with .info/version), /opt/rocm/core linking to the newest, /opt/rocm/bin linking to its bin (on a node that is an
update-alternatives link, through /etc/alternatives; one link here). Core 10.1 has no rocm-smi, as in the fixture
mirror; 10.0 still ships it. The tool files are empty executables: nothing is run."""

import os

import pytest
from ansible.module_utils.common.process import get_bin_path

from ansible_collections.gpulab.rocm.plugins.module_utils.parsers._facts_common import rocm_version_files, tool_dirs
from ansible_collections.gpulab.rocm.plugins.modules.node_probe import Probe, rocm_smi_library
from ansible_collections.gpulab.rocm.tests.unit.gpu_facts_helpers import fixture


class Module(object):
    """What Probe uses of AnsibleModule: its params and get_bin_path (opt_dirs first, then PATH)."""

    def __init__(self, **params):
        self.params = dict(tool_timeout=60, amd_smi_metric=False, **params)

    @staticmethod
    def get_bin_path(name, opt_dirs=None, required=False):
        try:
            return get_bin_path(name, opt_dirs=opt_dirs or [])
        except ValueError:
            return None

    def warn(self, message):
        raise AssertionError(message)


def write(path, text=''):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as handle:
        handle.write(text)


def tool(path):
    write(path)
    os.chmod(path, 0o755)


def core_root(tmp_path, links=True):
    """<tmp>/opt/rocm with Core 10.0 and 10.1 side by side; links: /opt/rocm/core and /opt/rocm/bin to 10.1."""
    rocm = str(tmp_path / 'opt' / 'rocm')
    # The build suffix of 10.1's file as the brief's example gives it; 10.0's is the apt version seen in
    # third-party install notes (rocm-reference.md 13).
    for series, build, tools in (('10.0', '10.0.0-4', ('rocminfo', 'amd-smi', 'rocm-smi')),
                                 ('10.1', '10.1.0-2', ('rocminfo', 'amd-smi'))):
        write(os.path.join(rocm, 'core-' + series, '.info', 'version'), build + '\n')
        for name in tools:
            tool(os.path.join(rocm, 'core-' + series, 'bin', name))
    if links:
        os.symlink('core-10.1', os.path.join(rocm, 'core'))
        os.symlink('core-10.1/bin', os.path.join(rocm, 'bin'))
    return rocm


@pytest.fixture
def no_path(monkeypatch, tmp_path):
    """PATH without this machine's folders: a rocm-smi installed here must not answer for the fake node."""
    monkeypatch.setenv('PATH', str(tmp_path / 'empty'))


def probe(rocm_path, sysfs_root):
    return Probe(Module(rocm_path=rocm_path, sysfs_root=sysfs_root))


def test_the_core_release_and_its_build_come_from_opt_rocm_core(tmp_path, no_path):
    rocm = core_root(tmp_path)
    node = probe(rocm, str(tmp_path / 'sys'))
    node.versions()
    versions = node.node['versions']
    assert (versions['rocm'], versions['rocm_file']) == ('10.1.0-2', os.path.join(rocm, 'core', '.info', 'version'))
    assert versions['amdgpu'] is None  # no amdgpu module in the fake sysfs


def test_without_the_core_link_the_newest_release_is_read(tmp_path, no_path):
    rocm = core_root(tmp_path, links=False)
    node = probe(rocm, str(tmp_path / 'sys'))
    node.versions()
    assert node.node['versions']['rocm'] == '10.1.0-2'
    assert node.node['versions']['rocm_file'] == os.path.join(rocm, 'core-10.1', '.info', 'version')


def test_a_legacy_release_is_read_from_opt_rocm_info_version(tmp_path, no_path):
    # /opt/rocm -> /opt/rocm-6.2.4 with the version file of the fixture mirror's 6.2.4 (tests/harness/mirror).
    write(str(tmp_path / 'opt' / 'rocm-6.2.4' / '.info' / 'version'), '6.2.4-139\n')
    os.symlink('rocm-6.2.4', str(tmp_path / 'opt' / 'rocm'))
    rocm = str(tmp_path / 'opt' / 'rocm')
    node = probe(rocm, str(tmp_path / 'sys'))
    node.versions()
    assert (node.node['versions']['rocm'], node.node['versions']['rocm_file']) == (
        '6.2.4-139', os.path.join(rocm, '.info', 'version'))
    assert rocm_version_files(rocm)[0] == node.node['versions']['rocm_file']


@pytest.mark.parametrize('links', [True, False], ids=['links', 'no links'])
def test_the_tools_are_found_in_the_newest_core_release_without_rocm_smi(tmp_path, no_path, links):
    rocm = core_root(tmp_path, links=links)
    node = probe(rocm, str(tmp_path / 'sys'))
    found = dict((name, node.find(name)) for name in ('rocminfo', 'amd-smi', 'rocm-smi'))
    first = os.path.join(rocm, 'bin') if links else os.path.join(rocm, 'core-10.1', 'bin')
    assert found == {'rocminfo': os.path.join(first, 'rocminfo'), 'amd-smi': os.path.join(first, 'amd-smi'),
                     'rocm-smi': None}  # 10.0's rocm-smi is not taken for a 10.1 node
    assert tool_dirs(rocm) == [os.path.join(rocm, 'bin'), os.path.join(rocm, 'core', 'bin'),
                               os.path.join(rocm, 'core-10.1', 'bin')]


def test_the_tools_section_of_a_core_node_has_no_rocm_smi_and_no_warning(tmp_path, no_path):
    rocm = core_root(tmp_path)
    node = probe(rocm, str(tmp_path / 'sys'))

    # The tools answer with real captures of a node whose amdgpu is not loaded (fixtures SOURCES.md).
    answers = {'rocminfo': (1, fixture('rocminfo/debian12-rocminfo5.2.3-no-gpu-ansi-colour-stdout.txt'), ''),
               'amd-smi': (255, '', fixture('amd-smi/fail-version-wsl2-driver-not-initialized.txt'))}
    node._gpu_run = lambda argv: answers[os.path.basename(argv[0])]
    node.tools()
    tools = node.node['tools']
    assert tools['rocm_smi']['present'] is False and tools['rocm_smi']['error_kind'] == 'tool_missing'
    assert 'it is optional' in tools['rocm_smi']['error']
    assert tools['rocminfo']['source'] == os.path.join(rocm, 'bin', 'rocminfo')
    assert tools['amd_smi']['source'] == os.path.join(rocm, 'bin', 'amd-smi')
    assert (tools['rocminfo']['error_kind'], tools['amd_smi']['error_kind']) == ('driver_not_loaded',) * 2


# --- the library Slurm's AutoDetect=rsmi loads ---------------------------------------------------------------------

def test_rocm_smi_s_library_of_debian_s_package_is_found(tmp_path):
    # librocm-smi64-1 5.2.3-2 (Debian 12, a dependency of slurm-wlm-rsmi-plugin) installs these two (dpkg-deb -c).
    write(str(tmp_path / 'usr' / 'lib' / 'librocm_smi64.so.1.0'))
    os.symlink('librocm_smi64.so.1.0', str(tmp_path / 'usr' / 'lib' / 'librocm_smi64.so.1'))
    assert rocm_smi_library(str(tmp_path)) == '/usr/lib/librocm_smi64.so.1'


def test_rocm_smi_s_library_in_a_folder_of_ld_so_conf_d_is_found(tmp_path):
    write(str(tmp_path / 'etc' / 'ld.so.conf.d' / 'rocm.conf'), '# ROCm\n/opt/rocm/lib\n')
    write(str(tmp_path / 'opt' / 'rocm' / 'lib' / 'librocm_smi64.so.1'))
    assert rocm_smi_library(str(tmp_path)) == '/opt/rocm/lib/librocm_smi64.so.1'


def test_a_core_node_without_rocm_smi_lib_has_no_library(tmp_path):
    core_root(tmp_path)
    write(str(tmp_path / 'etc' / 'ld.so.conf.d' / 'rocm.conf'), '/opt/rocm/lib\n')
    write(str(tmp_path / 'usr' / 'lib' / 'libamd_smi.so.27'))  # amd-smi's library is not ROCm SMI's
    assert rocm_smi_library(str(tmp_path)) is None
