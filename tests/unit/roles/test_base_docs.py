"""kunpeng.vllm.base's README table shows each variable's type and default
exactly as meta/argument_specs.yml has them (that specs, defaults and use
agree is checked for every role by test_argument_specs.py).
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
