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
    """Public roles (one ``main`` entry point); internal ones (``_common``) are checked below."""
    return sorted(r for r in os.listdir(ROLES)
                  if not r.startswith("_") and os.path.isfile(os.path.join(ROLES, r, "meta", "argument_specs.yml")))


def _internal_roles():
    return sorted(r for r in os.listdir(ROLES) if r.startswith("_"))


def _load(path):
    with open(path) as handle:
        return yaml.safe_load(handle) or {}


def _options(role):
    """Options of every entry point of ``role`` (main, and those called with tasks_from), one spec per name."""
    entries = _load(os.path.join(ROLES, role, "meta", "argument_specs.yml"))["argument_specs"]
    options = {}
    for entry in entries.values():
        for name, spec in (entry.get("options") or {}).items():
            options.setdefault(name, spec)
    return options


@pytest.mark.parametrize("role", _roles())
def test_every_entry_point_has_its_task_file_and_a_description(role):
    entries = _load(os.path.join(ROLES, role, "meta", "argument_specs.yml"))["argument_specs"]
    for entry, spec in entries.items():
        assert os.path.isfile(os.path.join(ROLES, role, "tasks", entry + ".yml")), entry
        assert spec.get("short_description"), entry
        # An option shared by several entry points is described alike in each.
        for name, option in (spec.get("options") or {}).items():
            if entry != "main" and name in entries["main"].get("options", {}):
                assert option["type"] == entries["main"]["options"][name]["type"], (entry, name)


@pytest.mark.parametrize("role", _roles())
def test_defaults_and_argument_specs_agree(role):
    specs = _options(role)
    defaults_path = os.path.join(ROLES, role, "defaults", "main.yml")
    defaults = _load(defaults_path) if os.path.exists(defaults_path) else {}
    undocumented = sorted(set(defaults) - set(specs))
    assert not undocumented, f"{role}: in defaults/main.yml but not in argument_specs: {undocumented}"
    missing = sorted(name for name, spec in specs.items() if name not in defaults and not spec.get("required"))
    assert not missing, f"{role}: documented without a default and not required: {missing}"


@pytest.mark.parametrize("role", _roles())
def test_public_variables_carry_the_role_prefix(role):
    specs = _options(role)
    assert all(name.startswith(role + "_") for name in specs), sorted(n for n in specs if not n.startswith(role + "_"))


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


def _varnames_patterns(role):
    """The patterns of ``query('ansible.builtin.varnames', ...)`` in the role's tasks: every variable they match is
    read (roles/monitoring/tasks/plan.yml hands every exporter's port and package to the module that way)."""
    patterns = []
    path = os.path.join(ROLES, role, "tasks")
    for name in os.listdir(path):
        with open(os.path.join(path, name), encoding="utf-8") as handle:
            patterns += re.findall(r"""varnames['"], ['"]([^'"]+)['"]""", handle.read())
    return patterns


@pytest.mark.parametrize("role", _roles())
def test_every_documented_variable_is_used_and_every_used_one_documented(role):
    specs = _options(role)
    used = _used_variables(role)
    used |= {name for name in specs if any(re.match(pattern, name) for pattern in _varnames_patterns(role))}
    assert sorted(set(specs) - used) == [], f"{role}: documented but never used"
    assert sorted(used - set(specs)) == [], f"{role}: used but not documented"


@pytest.mark.parametrize("role", _internal_roles())
def test_internal_role_has_one_entry_point_per_task_file(role):
    """Like prometheus-community's _common: each task file is an entry point, called with include_role tasks_from."""
    specs = _load(os.path.join(ROLES, role, "meta", "argument_specs.yml"))["argument_specs"]
    task_files = sorted(name[:-len(".yml")] for name in os.listdir(os.path.join(ROLES, role, "tasks")))
    assert sorted(specs) == task_files
    assert "main" not in specs


@pytest.mark.parametrize("role", _internal_roles())
def test_internal_role_options_are_prefixed_documented_and_used(role):
    specs = _load(os.path.join(ROLES, role, "meta", "argument_specs.yml"))["argument_specs"]
    defaults = _load(os.path.join(ROLES, role, "defaults", "main.yml"))
    with open(os.path.join(ROLES, role, "vars", "main.yml")) as handle:
        role_vars = handle.read()
    for entry, spec in specs.items():
        with open(os.path.join(ROLES, role, "tasks", entry + ".yml")) as handle:
            tasks = handle.read()
        for name, option in (spec.get("options") or {}).items():
            assert name.startswith(role + "_"), name
            assert name in tasks or name in role_vars, f"{entry}: {name} is never used"
            if not option.get("required"):
                assert defaults.get(name) == option["default"], name


def test_internal_role_is_called_by_entry_point():
    """Every include of kunpeng.vllm._common names an entry point that exists, without ".yml".

    Ansible validates the options of the entry point named exactly as tasks_from.
    """
    specs = _load(os.path.join(ROLES, "_common", "meta", "argument_specs.yml"))["argument_specs"]
    calls = []
    for folder in ("roles", "playbooks"):
        for dirpath, _dirs, files in os.walk(os.path.join(ROOT, folder)):
            for name in files:
                if name.endswith(".yml"):
                    with open(os.path.join(dirpath, name)) as handle:
                        calls += re.findall(r"name: kunpeng\.vllm\._common\n\s+tasks_from: (\S+)\n", handle.read())
    assert calls and set(calls) <= set(specs)
    assert set(specs) <= set(calls), "an entry point nobody calls"
