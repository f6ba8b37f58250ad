"""Every read of a cross-role fact names a declared key (module_utils/fact_contract.py).

A static scan of the roles (tasks, vars, defaults, handlers, templates, meta,
README), the playbooks, the Molecule scenarios, the inventories, the docs and
the role-test playbooks for ``kunpeng_<fact>.key.sub``, ``kunpeng_<fact>['key']``,
``(kunpeng_<fact> | default({})).key`` and ``kunpeng_<fact>.list | map(attribute='key')``.
A key renamed on one side only fails here.
"""

import glob
import os
import re

import pytest
import yaml

from ansible_collections.kunpeng.vllm.plugins.module_utils import fact_contract

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))

SCANNED = [
    "roles/*/tasks/**/*.yml", "roles/*/vars/*.yml", "roles/*/defaults/*.yml", "roles/*/handlers/*.yml",
    "roles/*/templates/**/*", "roles/*/meta/*.yml", "roles/*/README.md",
    "playbooks/**/*.yml", "molecule/**/*.yml", "molecule/**/*.py", "inventories/**/*.yml",
    "docs/**/*.md", "README.md", "tests/unit/roles/playbooks/**/*.yml",
]

# Reads that are wrong today and are being fixed elsewhere; each entry names its defect.
# An entry that no longer matches any read fails test_known_defects_are_still_present: remove it then.
KNOWN_DEFECTS: dict = {}

_NAME = re.compile(r"\b(" + "|".join(sorted(fact_contract.FACTS, key=len, reverse=True)) + r")\b")
_ATTR = re.compile(r"\s*\.\s*([A-Za-z_][A-Za-z0-9_]*)")
_SUBSCRIPT = re.compile(r"\s*\[\s*(?:'([^']*)'|\"([^\"]*)\"|(-?[0-9]+))\s*\]")
_GET = re.compile(r"\s*\.\s*get\(\s*(?:'([^']*)'|\"([^\"]*)\")")
_DEFAULT = re.compile(r"\s*\|\s*(?:default|d)\s*\(")
_ATTR_FILTER = re.compile(
    r"\s*\|\s*(?:(selectattr|rejectattr|groupby)\s*\(\s*|(map|sum|min|max|sort|unique)\s*\(\s*attribute\s*=\s*)"
    r"(?:'([^']*)'|\"([^\"]*)\")")
_PASS_FILTER = re.compile(r"\s*\|\s*(list|first|last)\b(?!\s*\()")
_METHODS = {"get", "items", "keys", "values"}


def _skip_parens(text, pos):
    """Index just past the ')' matching the '(' before ``pos``."""
    depth = 1
    while pos < len(text) and depth:
        depth += {"(": 1, ")": -1}.get(text[pos], 0)
        pos += 1
    return pos


def _chain(text, pos):
    """Parse accessors from ``pos``: returns (path, end)."""
    path = []
    while True:
        match = _GET.match(text, pos)
        if match:
            path.append(match.group(1) if match.group(1) is not None else match.group(2))
            return path, match.end()
        match = _ATTR.match(text, pos)
        if match and match.group(1) not in _METHODS:
            path.append(match.group(1))
            pos = match.end()
            continue
        match = _SUBSCRIPT.match(text, pos)
        if match:
            if match.group(3) is not None:
                path.append(int(match.group(3)))
            else:
                path.append(match.group(1) if match.group(1) is not None else match.group(2))
            pos = match.end()
            continue
        return path, pos


def reads(text):
    """Every fact read in ``text``: (line number, fact name, key path)."""
    found = []
    for match in _NAME.finditer(text):
        name, start = match.group(1), match.start()
        if text[max(0, start - 1):start] in ("$", "-", "/"):
            continue
        path, pos = _chain(text, match.end())
        # (kunpeng_x | default({})).key
        default = _DEFAULT.match(text, pos)
        if default and re.search(r"\(\s*$", text[:start]):
            after = _skip_parens(text, default.end())
            close = re.compile(r"\s*\)").match(text, after)
            if close:
                more, pos = _chain(text, close.end())
                path += more
        elif default:
            pos = _skip_parens(text, default.end())
        # ... | selectattr('key') | map(attribute='key')
        while path is not None:
            filt = _ATTR_FILTER.match(text, pos)
            if filt:
                attribute = filt.group(3) if filt.group(3) is not None else filt.group(4)
                found.append((text.count("\n", 0, start) + 1, name, path + [0] + attribute.split(".")))
                if filt.group(2) == "map":
                    path = None
                pos = _skip_parens(text, filt.end())
                continue
            passthrough = _PASS_FILTER.match(text, pos)
            if passthrough and passthrough.group(1) == "list":
                pos = passthrough.end()
                continue
            break
        if path:
            found.append((text.count("\n", 0, start) + 1, name, path))
    return found


def _attribute_read(name, path):
    """Check a read whose last step is an element key (a trailing ``0`` then a key): reads of a list's elements."""
    return fact_contract.resolve(name, path)


def undeclared(text):
    """(line, dotted read, why) for each read of ``text`` that is not in the declared shape."""
    problems = []
    for line, name, path in reads(text):
        why = _attribute_read(name, path)
        if why:
            dotted = name + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)
            problems.append((line, dotted, why))
    return problems


def _scanned_files():
    files = set()
    for pattern in SCANNED:
        files.update(path for path in glob.glob(os.path.join(ROOT, pattern), recursive=True) if os.path.isfile(path))
    return sorted(files)


def _tree_problems():
    problems = []
    for path in _scanned_files():
        with open(path, encoding="utf-8", errors="replace") as handle:
            text = handle.read()
        for line, dotted, why in undeclared(text):
            problems.append((os.path.relpath(path, ROOT), line, dotted, why))
    return problems


def _known(dotted):
    return any(dotted == key or dotted.startswith(key + ".") for key in KNOWN_DEFECTS)


def test_every_fact_read_in_the_tree_is_declared():
    problems = [p for p in _tree_problems() if not _known(p[2])]
    assert problems == [], "\n".join(f"{path}:{line}: {dotted}: {why}" for path, line, dotted, why in problems)


def test_known_defects_are_still_present():
    """An allow-list entry whose read is gone must be removed (the defect was fixed)."""
    found = {dotted for dummy, dummy2, dotted, dummy3 in _tree_problems()}
    assert [key for key in KNOWN_DEFECTS if not any(d == key or d.startswith(key + ".") for d in found)] == []


def test_the_scan_covers_roles_playbooks_and_molecule():
    files = {os.path.relpath(path, ROOT) for path in _scanned_files()}
    for expected in ("roles/nvidia/tasks/plan.yml", "roles/vllm/templates/vllm.service.j2", "playbooks/site.yml",
                     "molecule/base/converge.yml", "inventories/example/hosts.yml", "roles/base/defaults/main.yml"):
        assert expected in files
    assert sum(len(reads(open(os.path.join(ROOT, path)).read())) for path in files) > 50


@pytest.mark.parametrize("snippet, expected", [
    ("{{ kunpeng_vllm_plan.requirements.nvidia_driver_min }}", []),
    ("{{ kunpeng_vllm_plan.requirements.driver_min }}", ["kunpeng_vllm_plan.requirements.driver_min"]),
    ("{{ (kunpeng_vllm_plan | default({})).driver_min | default('', true) }}", ["kunpeng_vllm_plan.driver_min"]),
    ("when: kunpeng_base['install_dirs'] | length > 0", ["kunpeng_base.install_dirs"]),
    ("{{ kunpeng_nvidia.get('env_path') }}", ["kunpeng_nvidia.env_path"]),
    ("{{ kunpeng_accelerators.nvidia.gpus | map(attribute='gpu_name') | join(', ') }}",
     ["kunpeng_accelerators.nvidia.gpus[0].gpu_name"]),
    ("{{ kunpeng_accelerators.nvidia.gpus | rejectattr('persistence', 'equalto', 'Enabled') | map(attribute='index') }}",
     ["kunpeng_accelerators.nvidia.gpus[0].persistence"]),
    ("{{ kunpeng_accelerators.nvidia.gpus[0].name }} {{ kunpeng_accelerators.nvidia.gpus.name }}",
     ["kunpeng_accelerators.nvidia.gpus.name"]),
    ("{{ kunpeng_vllm_plan.engine_args.any_engine_option }}", []),
    ("{{ ansible_local.kunpeng_vllm_base.kunpeng_base.home_dir }}", ["kunpeng_base.home_dir"]),
    ("kunpeng_base_tuning.applied and kunpeng_ascend.reboot_pending and kunpeng_ascend.device_group", []),
    ("{{ kunpeng_ascend.env_file | default('') }}", []),
])
def test_scanner_flags_reads_of_undeclared_keys(snippet, expected):
    assert [dotted for dummy, dotted, dummy2 in undeclared(snippet)] == expected


def test_renaming_a_key_in_one_place_fails():
    """A role that reads a key the contract does not declare is reported with file-free position and reason."""
    snippet = "- name: Use it\n  ansible.builtin.debug:\n    msg: \"{{ kunpeng_base.install_directory }}\"\n"
    assert undeclared(snippet) == [(3, "kunpeng_base.install_directory",
                                    "kunpeng_base has no key install_directory (declared: ca_bundle, cache_dir, config_dir, "
                                    "group, home, install_dir, model_dir, pip_conf, user)")]


# --- the role reports set exactly the declared keys -----------------------
# Facts built by a module (kunpeng_nvidia, kunpeng_ascend) are checked with
# fact_contract.check() in that module's own tests, on its real output.

def _set_fact_keys(path, fact):
    """Keys of every ``set_fact: {<fact>: {...}}`` mapping in a task file."""
    with open(os.path.join(ROOT, path)) as handle:
        tasks = yaml.safe_load(handle) or []
    found = []
    for task in tasks:
        body = task.get("ansible.builtin.set_fact") or task.get("set_fact") or {}
        if isinstance(body, dict) and fact in body:
            found.append(body[fact])
    return found


@pytest.mark.parametrize("fact", [name for name, (dummy, where) in fact_contract.FACTS.items() if where.endswith(".yml")])
def test_role_report_sets_the_declared_keys(fact):
    where = fact_contract.FACTS[fact][1]
    values = _set_fact_keys(where, fact)
    assert values, f"{where} no longer sets {fact}"
    for value in values:
        if isinstance(value, dict):
            assert fact_contract.check(fact, value, types=False) == []
        else:
            # Set from a module's result: the module's own tests check it with fact_contract.check().
            assert isinstance(value, str) and "{{" in value


@pytest.mark.parametrize("fact, value, problems", [
    ("kunpeng_base", {}, [f"kunpeng_base.{key} is missing" for key in sorted(fact_contract.BASE)]),
    ("kunpeng_ascend", dict.fromkeys(k for k, f in fact_contract.shape("kunpeng_ascend").items() if not f.optional), []),
    ("kunpeng_nvidia", dict(dict.fromkeys(fact_contract.shape("kunpeng_nvidia")), rebooted=True), ["kunpeng_nvidia.rebooted is not declared"]),
])
def test_check_keys_only(fact, value, problems):
    assert fact_contract.check(fact, value, types=False) == problems


@pytest.mark.parametrize("path, why", [
    (["summary", "backend"], None),
    (["nvidia", "gpus", 3, "compute_cap"], None),
    (["ascend", "versions", "driver", "Version"], None),
    (["summary", "backend", "name"], "kunpeng_accelerators.summary.backend is a str and has no key name"),
    (["summary", 0], "kunpeng_accelerators.summary is a dict, not a list: kunpeng_accelerators.summary[0]"),
    (["nvidia", "gpus", "name"], "kunpeng_accelerators.nvidia.gpus is a list; read kunpeng_accelerators.nvidia.gpus.<index>.name "
                                 "or map(attribute='name')"),
])
def test_resolve(path, why):
    assert fact_contract.resolve("kunpeng_accelerators", path) == why
