"""Controller-side outputs (fetched logs, wheelhouses, reports) never default
under ``playbook_dir``: run by FQCN (``ansible-playbook kunpeng.vllm.site``)
that is the installed collection, read-only or discarded in an execution
environment.  Defaults point at the directory ansible-playbook runs from or
at ``~/.kunpeng-vllm/``."""

import os
import re

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
# Shipped variable files a user runs with as they are.
VARIABLE_FILES = sorted(
    [os.path.join("roles", r, "defaults", "main.yml") for r in os.listdir(os.path.join(ROOT, "roles"))
     if os.path.exists(os.path.join(ROOT, "roles", r, "defaults", "main.yml"))]
    + [os.path.join("inventories", "example", "group_vars", n)
       for n in os.listdir(os.path.join(ROOT, "inventories", "example", "group_vars"))])


def _values(path):
    with open(os.path.join(ROOT, path)) as f:
        return yaml.safe_load(f) or {}


@pytest.mark.parametrize("path", VARIABLE_FILES)
def test_no_default_writes_under_playbook_dir(path):
    under = {name: value for name, value in _values(path).items()
             if isinstance(value, str) and re.search(r"\bplaybook_dir\b", value)}
    assert not under, f"{path}: {under} resolve inside the installed collection when run by FQCN"


@pytest.mark.parametrize(("path", "name", "where"), [
    ("roles/ascend/defaults/main.yml", "ascend_log_fetch_dir", "'reports/ascend-logs' | ansible.builtin.realpath"),
    ("roles/wheelhouse/defaults/main.yml", "wheelhouse_dest", "('~/.kunpeng-vllm/wheelhouse/'"),
])
def test_controller_outputs_default_to_the_working_directory_or_home(path, name, where):
    assert where in _values(path)[name]
