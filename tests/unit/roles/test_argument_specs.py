"""Every role's argument_specs and defaults/main.yml describe the same variables.

A variable in defaults but not in argument_specs is undocumented (ansible-doc,
AWX surveys and the role README miss it); one in argument_specs but not in
defaults has no default unless it is required.  Like the prometheus-community
roles, the two are kept in step by a test rather than by hand.
"""

import os

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
ROLES = os.path.join(ROOT, "roles")


def _roles():
    return sorted(r for r in os.listdir(ROLES) if os.path.isfile(os.path.join(ROLES, r, "meta", "argument_specs.yml")))


def _load(path):
    with open(path) as handle:
        return yaml.safe_load(handle) or {}


@pytest.mark.parametrize("role", _roles())
def test_defaults_and_argument_specs_agree(role):
    specs = _load(os.path.join(ROLES, role, "meta", "argument_specs.yml"))["argument_specs"]["main"]["options"]
    defaults_path = os.path.join(ROLES, role, "defaults", "main.yml")
    defaults = _load(defaults_path) if os.path.exists(defaults_path) else {}
    undocumented = sorted(set(defaults) - set(specs))
    assert not undocumented, f"{role}: in defaults/main.yml but not in argument_specs: {undocumented}"
    missing = sorted(name for name, spec in specs.items() if name not in defaults and not spec.get("required"))
    assert not missing, f"{role}: documented without a default and not required: {missing}"


@pytest.mark.parametrize("role", _roles())
def test_public_variables_carry_the_role_prefix(role):
    specs = _load(os.path.join(ROLES, role, "meta", "argument_specs.yml"))["argument_specs"]["main"]["options"]
    assert all(name.startswith(role + "_") for name in specs), sorted(n for n in specs if not n.startswith(role + "_"))


@pytest.mark.parametrize("role", _roles())
def test_readme_lists_every_variable(role):
    specs = _load(os.path.join(ROLES, role, "meta", "argument_specs.yml"))["argument_specs"]["main"]["options"]
    with open(os.path.join(ROLES, role, "README.md")) as handle:
        readme = handle.read()
    missing = sorted(name for name in specs if f"`{name}`" not in readme)
    assert not missing, f"{role}/README.md does not list: {missing}"
