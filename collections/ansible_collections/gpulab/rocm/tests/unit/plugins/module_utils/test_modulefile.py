"""The Tcl text of a release's modulefile (modulefile.py): the default release and another one, the default marker,
and the values it refuses. Lmod and Environment Modules read these files for real in molecule/lifecycle
(tests/test_modules.py)."""

import pytest

from ansible_collections.gpulab.rocm.plugins.module_utils.planning import modulefile
from ansible_collections.gpulab.rocm.plugins.module_utils.planning.modulefile import ModulefileError

LOGIN = {"ROCM_PATH": "/opt/rocm", "HSA_OVERRIDE_GFX_VERSION": "10.3.0", "PYTORCH_ROCM_ARCH": "gfx1030"}


def lines(text):
    return text.splitlines()


def test_the_default_release_sets_paths_and_variables_and_no_ld_library_path():
    text = modulefile.release_modulefile(
        "6.2.0", "/opt/rocm-6.2.0",
        [("ROCM_PATH", "/opt/rocm-6.2.0"), ("HSA_OVERRIDE_GFX_VERSION", "10.3.0"), ("PYTORCH_ROCM_ARCH", "gfx1030")],
        LOGIN, default=True)
    got = lines(text)
    assert got[0] == "#%Module1.0" and got[1] == modulefile.MARK
    assert "conflict rocm" in got
    # bin ends first in PATH (prepended last), the compilers of lib/llvm/bin right behind it.
    assert got.index("prepend-path PATH {/opt/rocm-6.2.0/lib/llvm/bin}") < got.index(
        "prepend-path PATH {/opt/rocm-6.2.0/bin}")
    assert "prepend-path MANPATH {/opt/rocm-6.2.0/share/man}" in got
    assert "prepend-path CMAKE_PREFIX_PATH {/opt/rocm-6.2.0}" in got
    assert "setenv ROCM_PATH {/opt/rocm-6.2.0}" in got
    assert "setenv HSA_OVERRIDE_GFX_VERSION {10.3.0}" in got
    assert "setenv PYTORCH_ROCM_ARCH {gfx1030}" in got
    # The linker cache already holds the default release (rocm_env's ld.so.conf).
    assert "LD_LIBRARY_PATH" not in text
    # hipcc derives HIP_PATH itself since ROCm 5.5; a set one confuses it (docs/modules.md).
    assert "HIP_PATH" not in text
    # On unload, Environment Modules puts the login environment's values back.
    restore = got[got.index("if {[module-info mode] in {unload remove}} {") + 1:]
    assert restore[:4] == ["    unsetenv ROCM_PATH {/opt/rocm}", "    unsetenv HSA_OVERRIDE_GFX_VERSION {10.3.0}",
                           "    unsetenv PYTORCH_ROCM_ARCH {gfx1030}", "}"]
    assert modulefile.is_ours(text)


def test_another_release_adds_its_libraries_and_unsets_what_only_the_default_needs():
    text = modulefile.release_modulefile(
        "6.2.4", "/opt/rocm-6.2.4", [("ROCM_PATH", "/opt/rocm-6.2.4"), ("PYTORCH_ROCM_ARCH", "gfx1030")], LOGIN,
        default=False)
    got = lines(text)
    # lib ends first (prepended last).
    assert got.index("prepend-path LD_LIBRARY_PATH {/opt/rocm-6.2.4/lib64}") < got.index(
        "prepend-path LD_LIBRARY_PATH {/opt/rocm-6.2.4/lib}")
    assert "setenv ROCM_PATH {/opt/rocm-6.2.4}" in got
    # An override the login environment sets for the default release and this release does not need: unset on
    # load, set back on unload (Environment Modules' unsetenv with a value).
    assert "unsetenv HSA_OVERRIDE_GFX_VERSION {10.3.0}" in got
    assert not [line for line in got if line.startswith("setenv HSA_OVERRIDE")]
    assert "## ROCm 6.2.4, in /opt/rocm-6.2.4." in got
    assert "HIP_PATH" not in text


def test_a_release_without_gpu_variables_restores_only_rocm_path():
    text = modulefile.release_modulefile("6.2.4", "/opt/rocm-6.2.4", [("ROCM_PATH", "/opt/rocm-6.2.4")],
                                         {"ROCM_PATH": "/opt/rocm"}, default=False)
    assert text.endswith("if {[module-info mode] in {unload remove}} {\n    unsetenv ROCM_PATH {/opt/rocm}\n}\n")
    assert "unsetenv HSA" not in text


def test_the_default_marker_names_the_release_for_both_tools():
    text = modulefile.version_file("6.2.0")
    assert text == "#%%Module1.0\n%s\nset ModulesVersion {6.2.0}\n" % modulefile.MARK
    assert modulefile.is_ours(text)


@pytest.mark.parametrize("content", [None, "", "#%Module1.0\n## the lab's own\nconflict rocm\n",
                                     modulefile.MARK + "\n", "#%Module\n" + modulefile.MARK + " (edited)\n"])
def test_files_the_role_did_not_write_are_not_ours(content):
    assert not modulefile.is_ours(content)


@pytest.mark.parametrize("prefix", ["/opt/rocm 6.2.4", "/opt/rocm-6.2.4}", "/opt/$HOME", "/opt/[exec rm]",
                                    "/opt/rocm-6.2.4\n"])
def test_values_tcl_would_read_as_code_are_refused(prefix):
    with pytest.raises(ModulefileError, match="cannot go into a modulefile"):
        modulefile.release_modulefile("6.2.4", prefix, [("ROCM_PATH", "/opt/rocm-6.2.4")], {}, default=False)


def test_names_and_versions_are_checked():
    with pytest.raises(ModulefileError, match="not an environment variable name"):
        modulefile.release_modulefile("6.2.4", "/opt/rocm-6.2.4", [("ROCM PATH", "/x")], {}, default=True)
    with pytest.raises(ModulefileError, match="not a ROCm release"):
        modulefile.release_modulefile("6.2", "/opt/rocm-6.2.0", [], {}, default=True)
    with pytest.raises(ModulefileError, match="not a ROCm release"):
        modulefile.version_file("6.2.0\n")


def test_a_core_release_is_named_by_its_series_and_keeps_its_libraries_in_lib():
    # The ROCm Core SDK installs X.Y in /opt/rocm/core-X.Y, patch releases in place (rocm-reference.md 13).
    text = modulefile.release_modulefile("10.0", "/opt/rocm/core-10.0", [("ROCM_PATH", "/opt/rocm/core-10.0")],
                                         {"ROCM_PATH": "/opt/rocm/core-10.1"}, default=False)
    got = lines(text)
    assert "module-whatis {ROCm 10.0}" in got and "## ROCm 10.0, in /opt/rocm/core-10.0." in got
    assert [line for line in got if "LD_LIBRARY_PATH" in line and not line.startswith("#")] == [
        "prepend-path LD_LIBRARY_PATH {/opt/rocm/core-10.0/lib}"]
    default = modulefile.release_modulefile("10.1", "/opt/rocm/core-10.1", [("ROCM_PATH", "/opt/rocm/core-10.1")],
                                            {"ROCM_PATH": "/opt/rocm/core-10.1"}, default=True)
    assert "## ROCm 10.1 (the default release), in /opt/rocm/core-10.1." in lines(default)
    assert modulefile.version_file("10.1") == "#%%Module1.0\n%s\nset ModulesVersion {10.1}\n" % modulefile.MARK


@pytest.mark.parametrize("name", ["10.1.0", "7.14.1", "7.2", "7.10"])
def test_a_release_is_named_as_its_stream_installs_it(name):
    # Core by X.Y, legacy by X.Y.Z; a preview (7.9-7.13) is no release.
    with pytest.raises(ModulefileError, match="not a ROCm release"):
        modulefile.release_modulefile(name, "/opt/rocm/core-10.1", [], {}, default=True)
    with pytest.raises(ModulefileError, match="not a ROCm release"):
        modulefile.version_file(name)
