"""kunpeng.vllm.base documents every variable once, the same way everywhere.

defaults/main.yml, meta/argument_specs.yml and the README table must agree,
and every public variable the role's files use must be documented.
"""

import os
import re

import pytest
import yaml

ROLE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))), "roles", "base")


def load(*path):
    with open(os.path.join(ROLE, *path), encoding="utf-8") as handle:
        return handle.read()


@pytest.fixture(scope="module")
def specs():
    return yaml.safe_load(load("meta", "argument_specs.yml"))["argument_specs"]["main"]["options"]


@pytest.fixture(scope="module")
def defaults():
    return yaml.safe_load(load("defaults", "main.yml"))


def test_defaults_and_specs_agree(specs, defaults):
    assert sorted(specs) == sorted(defaults)
    for name, spec in specs.items():
        assert name.startswith("base_")
        assert spec["default"] == defaults[name], name
        assert spec.get("description"), name


def test_every_used_variable_is_documented(specs):
    used = set()
    for folder in ("tasks", "templates", "handlers", "vars"):
        for name in os.listdir(os.path.join(ROLE, folder)):
            text = "\n".join(line for line in load(folder, name).splitlines() if "tags:" not in line)
            used |= set(re.findall(r"(?<![\w.])base_[a-z0-9_]*[a-z0-9]", text))
    assert used - set(specs) == set()
    assert set(specs) - used == set(), "documented but unused"


def test_readme_table_lists_every_variable_with_its_default(specs):
    rows = {}
    for line in load("README.md").splitlines():
        match = re.match(r"\| `(base_[a-z0-9_]+)` \| ([^|]+) \| ([^|]*) \|", line)
        if match:
            rows[match.group(1)] = (match.group(2).strip(), match.group(3).strip())
    assert sorted(rows) == sorted(specs)
    for name, spec in specs.items():
        kind = spec["type"] + (f"[{spec['elements']}]" if "elements" in spec else "")
        assert rows[name][0] == kind, name
        default = spec["default"]
        shown = rows[name][1].strip("`")
        if isinstance(default, bool):
            assert shown == str(default).lower(), name
        elif isinstance(default, (list, int)):
            assert yaml.safe_load(shown) == default, name
        else:
            assert shown == (default or '""'), name
