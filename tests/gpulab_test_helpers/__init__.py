"""Code the Molecule scenarios' tests share (molecule/*/tests): `gpulab_runs` drives real ansible-playbook runs.

Importable as `gpulab_test_helpers` with no path edits: pytest.ini's `pythonpath` puts `tests/` on sys.path, and
Molecule's testinfra verifier reads that pytest.ini (it passes the scenario's test files, whose nearest ini is this
repository's).
"""
