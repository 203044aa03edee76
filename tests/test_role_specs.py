"""Every role's argument_specs mirror its defaults (the prometheus.prometheus check), and docs/roles.md's variable
tables are generated from the specs."""

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
ROLES = sorted(p.name for p in (ROOT / "roles").iterdir() if (p / "meta" / "argument_specs.yml").exists())


@pytest.mark.parametrize("role", ROLES)
def test_specs_mirror_defaults(role):
    specs = yaml.safe_load((ROOT / "roles" / role / "meta" / "argument_specs.yml").read_text())
    options = specs["argument_specs"]["main"].get("options", {})
    defaults_file = ROOT / "roles" / role / "defaults" / "main.yml"
    defaults = yaml.safe_load(defaults_file.read_text()) if defaults_file.exists() else {}
    defaults = defaults or {}
    assert sorted(options) == sorted(defaults)
    for name, value in defaults.items():
        assert options[name].get("default") == value, f"{role}: {name} default differs between spec and defaults"
        assert name.startswith(role + "_"), f"{role}: {name} lacks the role prefix"


def test_readme_variables_are_current():
    result = subprocess.run([sys.executable, str(ROOT / "tests" / "tools" / "role_docs.py"), "--check"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
