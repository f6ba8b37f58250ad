"""A playbook calls roles through their entry points and knows none of their private vars or file layout.

playbooks/upgrade.yml and playbooks/uninstall.yml once copied the vllm role's
layout (``__vllm_current_link``, ``<install_dir>/current-<name>``,
``/etc/systemd/system/vllm-<name>.service``, ``<config_dir>/<name>.env``...),
so a change of the role's layout broke them silently.  As in kubespray, a
playbook now calls ``include_role``/``import_role`` with ``tasks_from`` naming
an entry point the role declares in meta/argument_specs.yml, passes public
variables, and reads the facts the entry point sets.  This test refuses, in
every playbook under playbooks/ (the parsed YAML, so comments may still
explain the layout):

- a role's private variable (``__<role>_*``, e.g. ``__vllm_venv``);
- a ``tasks_from`` that is not a declared entry point, ``vars_from`` /
  ``defaults_from`` / ``handlers_from``, ``role_path`` or a path into roles/;
- a path the vllm role lays out on the host (its engine links, unit names,
  instance files, the unit directory) or one built from a role's directory
  variable (reading ``vllm_config_dir``, ``kunpeng_base.install_dir``, ...;
  setting a directory option of an entry point is passing it on).
"""

import os
import re

import pytest
import yaml

from ansible_collections.kunpeng.vllm.plugins.module_utils.execute import instance_lifecycle as layout

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROLES = sorted(os.listdir(os.path.join(ROOT, "roles")))
PLAYBOOKS = sorted(f for f in os.listdir(os.path.join(ROOT, "playbooks")) if f.endswith(".yml"))

_PRIVATE = re.compile(r"\b__(" + "|".join(r.lstrip("_") for r in ROLES) + r")_\w+")
_ROLE_DIR_VAR = re.compile(r"\b(?:(?:" + "|".join(r.lstrip("_") for r in ROLES) + r")_\w*_dir"
                           r"|kunpeng_base\s*(?:\.\s*\w*_dir|\[\s*['\"]\w*_dir))\b")
# What the vllm role puts on the host, from the one module that knows it.
_LAYOUT = [
    os.path.basename(layout.engine_link("/opt/vllm", "")),          # <install_dir>/current-<name>
    layout.UNIT_PREFIX + "{{", layout.UNIT_PREFIX + "*",           # vllm-<name>.service, vllm-*.service
    layout.RAY_UNIT_PREFIX,
    "/etc/systemd/system",
    ".launch.sh",
] + [f"}}}}.{suffix}" for suffix in layout.CONFIG_SUFFIXES] + [f"'.{s}'" for s in layout.CONFIG_SUFFIXES]


def _entry_points(role):
    with open(os.path.join(ROOT, "roles", role, "meta", "argument_specs.yml")) as handle:
        return set(yaml.safe_load(handle)["argument_specs"])


def _strings(node):
    """(text, is_key) of every key and string value of a parsed YAML document."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield str(key), True
            yield from _strings(value)
    elif isinstance(node, list):
        for item in node:
            yield from _strings(item)
    elif isinstance(node, str):
        yield node, False


def _role_calls(node):
    """(module, arguments) of every include_role / import_role in a parsed document."""
    if isinstance(node, dict):
        for key in ("ansible.builtin.include_role", "ansible.builtin.import_role", "include_role", "import_role"):
            if isinstance(node.get(key), dict):
                yield key, node[key]
        for value in node.values():
            yield from _role_calls(value)
    elif isinstance(node, list):
        for item in node:
            yield from _role_calls(item)


def problems(document):
    """What in a parsed playbook crosses a role's boundary, one sentence each."""
    found = []
    for text, is_key in _strings(document):
        for match in _PRIVATE.finditer(text):
            found.append(f"reads the private variable {match.group(0)} of the role {match.group(1)}")
        # Setting a role's directory option (a key) is passing it on; reading one builds a path.
        for match in () if is_key else _ROLE_DIR_VAR.finditer(text):
            found.append(f"builds a path from the role directory variable {match.group(0)}")
        found += [f"names the role's file layout ({fragment!r} in {text.strip()[:80]!r})"
                  for fragment in _LAYOUT if fragment in text]
        if "role_path" in text or re.search(r"(^|/)roles/", text):
            found.append(f"reaches into a role's files ({text.strip()[:80]!r})")
    for key, args in _role_calls(document):
        name = args.get("name", "")
        role = name.split(".")[-1]
        for option in ("vars_from", "defaults_from", "handlers_from"):
            if option in args:
                found.append(f"{key} of {name} loads a role file with {option}")
        if not name.startswith("kunpeng.vllm.") or role not in ROLES:
            continue
        entry = args.get("tasks_from", "main")
        if entry not in _entry_points(role):
            found.append(f"{key} of {name} runs tasks_from {entry!r}, not an entry point of "
                         f"roles/{role}/meta/argument_specs.yml ({', '.join(sorted(_entry_points(role)))})")
    return found


@pytest.mark.parametrize("playbook", PLAYBOOKS)
def test_playbook_uses_only_role_entry_points_and_public_names(playbook):
    with open(os.path.join(ROOT, "playbooks", playbook)) as handle:
        document = yaml.safe_load(handle)
    assert problems(document) == []


# What upgrade.yml, uninstall.yml and benchmark.yml did before the entry points, one line each.
@pytest.mark.parametrize("task, expected", [
    ({"vars": {"__upgrade_link": "{{ vllm_install_dir }}/current-{{ vllm_instance_name }}"}},
     ["builds a path from the role directory variable vllm_install_dir", "names the role's file layout"]),
    ({"ansible.builtin.slurp": {"src": "/etc/systemd/system/vllm-{{ item }}.service"}},
     ["names the role's file layout"]),
    ({"ansible.builtin.find": {"paths": "/etc/systemd/system", "patterns": "vllm-*.service"}},
     ["names the role's file layout"]),
    ({"ansible.builtin.file": {"path": "{{ __uninstall_config_dir }}/{{ item.0 }}.{{ item.1 }}"},
      "vars": {"__uninstall_config_dir": "{{ vllm_config_dir | default(kunpeng_base.config_dir) }}"}},
     ["builds a path from the role directory variable vllm_config_dir",
      "builds a path from the role directory variable kunpeng_base.config_dir"]),
    ({"ansible.builtin.slurp": {"src": "{{ cfg }}/{{ name }}.env"}}, ["names the role's file layout"]),
    ({"ansible.builtin.stat": {"path": "{{ d }}/{{ n }}.launch.sh"}}, ["names the role's file layout"]),
    ({"ansible.builtin.debug": {"msg": "{{ __vllm_venv }}"}}, ["reads the private variable __vllm_venv"]),
    ({"ansible.builtin.debug": {"msg": "{{ __common_role }} {{ __gateway_plan.tls }}"}},
     ["reads the private variable __common_role", "reads the private variable __gateway_plan"]),
    ({"ansible.builtin.include_role": {"name": "kunpeng.vllm.vllm", "tasks_from": "install.yml"}},
     ["runs tasks_from 'install.yml', not an entry point"]),
    ({"ansible.builtin.import_role": {"name": "kunpeng.vllm.gateway", "tasks_from": "main", "vars_from": "x"}},
     ["loads a role file with vars_from"]),
    ({"ansible.builtin.include_tasks": "{{ playbook_dir }}/../roles/vllm/tasks/service.yml"},
     ["reaches into a role's files"]),
    # Public names pass: the role's entry points, its public facts, the playbook's own variables.
    ({"ansible.builtin.include_role": {"name": "kunpeng.vllm.vllm", "tasks_from": "snapshot"},
      "vars": {"vllm_backup_dir": "{{ upgrade_backup_dir | default('/var/backups/kunpeng-vllm') }}"}}, []),
    ({"ansible.builtin.debug": {"msg": "{{ kunpeng_vllm_snapshot.release }} {{ __upgrade_gateways }}"}}, []),
])
def test_the_check_refuses_the_layout_the_playbooks_copied(task, expected):
    found = problems([{"hosts": "all", "tasks": [task]}])
    assert len(found) >= len(expected), found
    for sentence in expected:
        assert any(sentence in problem for problem in found), (sentence, found)
    if not expected:
        assert found == []
