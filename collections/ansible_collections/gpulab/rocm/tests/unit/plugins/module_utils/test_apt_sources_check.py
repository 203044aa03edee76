"""sources_check over apt's real Conflicting-values message (fixtures/apt, SOURCES.md): which files it is about."""

import os

from ansible_collections.gpulab.rocm.plugins.module_utils.apt import sources_check as sc

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "apt")
LAB = "/etc/apt/sources.list.d/lab-rocm.list"
ROCM = "/etc/apt/sources.list.d/rocm.list"


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


SOURCES = {
    LAB: "deb [signed-by=/usr/share/keyrings/lab-rocm.gpg] http://127.0.0.1:9/rocm/apt/6.2.4 jammy main\n",
    ROCM: "deb [arch=amd64 signed-by=/etc/apt/keyrings/rocm.gpg] http://127.0.0.1:9/rocm/apt/6.2.4 jammy main\n",
    "/etc/apt/sources.list.d/debian.sources": "Types: deb\nURIs: http://deb.example.invalid/debian\n"
                                              "Suites: bookworm bookworm-updates\nComponents: main\n",
}


def test_apt_s_conflict_is_traced_to_both_files():
    output = fixture("apt-cache-policy-conflicting-signed-by.txt")
    assert sc.failed(100, output)
    (item,) = sc.conflicts(output, SOURCES)
    assert item["option"] == "Signed-By" and item["uri"] == "http://127.0.0.1:9/rocm/apt/6.2.4/"
    assert item["values"] == ["/usr/share/keyrings/lab-rocm.gpg", "/etc/apt/keyrings/rocm.gpg"]
    assert item["files"] == [LAB, ROCM]
    assert sc.foreign_files(output, SOURCES, [ROCM]) == [LAB]
    assert "%s (already on the host), %s (this run would write it)" % (LAB, ROCM) in sc.explain(output, SOURCES, [ROCM])
    assert not sc.failed(0, fixture("apt-cache-policy-lab-list-alone.txt"))


def test_a_malformed_file_is_named_by_apt_itself():
    output = "E: Malformed entry 1 in list file /etc/apt/sources.list.d/half.list (Component)\n" \
             "E: The list of sources could not be read.\n"
    assert sc.foreign_files(output, SOURCES, [ROCM]) == ["/etc/apt/sources.list.d/half.list"]


def test_the_set_after_the_change_and_deb822_sources():
    after = sc.after_change(SOURCES, {ROCM: "x", "/etc/apt/preferences.d/rocm-pin-600": "y"}, [LAB])
    assert sorted(after) == ["/etc/apt/sources.list.d/debian.sources", ROCM] and after[ROCM] == "x"
    assert sc.lines_of("/etc/apt/sources.list.d/debian.sources", SOURCES["/etc/apt/sources.list.d/debian.sources"]) \
        == [("http://deb.example.invalid/debian", "bookworm", None),
            ("http://deb.example.invalid/debian", "bookworm-updates", None)]
    assert sc.lines_of("/x.sources", "Enabled: no\nTypes: deb\nURIs: http://a\nSuites: s\n") == []
    assert sc.real_paths("list file /tmp/q/parts/a.list", {"/tmp/q/parts/": sc.SOURCES_D}) == \
        "list file /etc/apt/sources.list.d/a.list"
