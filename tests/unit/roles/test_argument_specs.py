"""Every role's argument_specs and defaults/main.yml describe the same variables.

A variable in defaults but not in argument_specs is undocumented (ansible-doc,
AWX surveys and the role README miss it); one in argument_specs but not in
defaults has no default unless it is required.  Like the prometheus-community
roles, the two are kept in step by a test rather than by hand.
"""

import os
import re

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


def _used_variables(role):
    """Public variables the role's files mention (tags excluded)."""
    used = set()
    for folder in ("tasks", "templates", "handlers", "vars", "defaults"):
        path = os.path.join(ROLES, role, folder)
        if not os.path.isdir(path):
            continue
        for name in os.listdir(path):
            with open(os.path.join(path, name), encoding="utf-8") as handle:
                lines = handle.read().splitlines()
            if folder == "defaults":  # a default's own key is not a use of it
                lines = [line.split(":", 1)[1] if re.match(r"^[a-z_0-9]+:", line) else line for line in lines]
            # Tags, comments and module option keys (``ascend_root:``) are not variables.
            text = "\n".join(line for line in lines if "tags:" not in line and not line.lstrip().startswith("#"))
            used |= set(re.findall(rf"(?<![\w./-]){role}_[a-z0-9_]*[a-z0-9](?![\w:])", text))
    return used


@pytest.mark.parametrize("role", _roles())
def test_every_documented_variable_is_used_and_every_used_one_documented(role):
    specs = _load(os.path.join(ROLES, role, "meta", "argument_specs.yml"))["argument_specs"]["main"]["options"]
    used = _used_variables(role)
    assert sorted(set(specs) - used) == [], f"{role}: documented but never used"
    assert sorted(used - set(specs)) == [], f"{role}: used but not documented"
