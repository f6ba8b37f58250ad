"""The docs that list the collection's parts list all of them: docs/architecture.md's
component table every module, filter, role and playbook (and nothing else),
docs/awx.md a job template per playbook, every role and every dependency."""

import os
import re

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROW = re.compile(r"^\| (Module|Filter|Role|Playbook) \| `([^`]+)` \|", re.M)


def _listed():
    with open(os.path.join(ROOT, "docs", "architecture.md"), encoding="utf-8") as f:
        rows = ROW.findall(f.read())
    listed = {}
    for kind, name in rows:
        listed.setdefault(kind, []).append(name)
    return listed


def _shipped():
    def stems(*parts, ext=".py"):
        folder = os.path.join(ROOT, *parts)
        return [n[: -len(ext)] for n in os.listdir(folder) if n.endswith(ext) and n != "__init__.py"]

    return {
        "Module": [f"kunpeng.vllm.{m}" for m in stems("plugins", "modules")],
        "Filter": [f"kunpeng.vllm.{f}" for f in stems("plugins", "filter")],
        "Role": [f"kunpeng.vllm.{r}" for r in os.listdir(os.path.join(ROOT, "roles"))
                 if os.path.isdir(os.path.join(ROOT, "roles", r, "tasks"))],
        "Playbook": [f"playbooks/{p}.yml" for p in stems("playbooks", ext=".yml")],
    }


@pytest.mark.parametrize("kind", ["Module", "Filter", "Role", "Playbook"])
def test_component_table_lists_exactly_what_ships(kind):
    listed, shipped = _listed().get(kind, []), _shipped()[kind]
    assert len(listed) == len(set(listed)), f"listed twice: {sorted(n for n in listed if listed.count(n) > 1)}"
    assert sorted(set(shipped) - set(listed)) == [], f"docs/architecture.md's table lacks these {kind.lower()}s"
    assert sorted(set(listed) - set(shipped)) == [], f"docs/architecture.md's table lists {kind.lower()}s that do not exist"


def test_the_collection_has_what_the_table_was_written_for():
    shipped = _shipped()
    assert (len(shipped["Module"]), len(shipped["Role"]), len(shipped["Playbook"])) >= (17, 8, 10)


def _awx():
    with open(os.path.join(ROOT, "docs", "awx.md"), encoding="utf-8") as f:
        return f.read()


def test_awx_doc_has_a_job_template_per_playbook():
    templates = re.findall(r"^\| vLLM · [^|]+\| `(playbooks/[a-z0-9_]+\.yml)` \|", _awx(), re.M)
    assert len(templates) == len(set(templates))
    assert sorted(templates) == sorted(_shipped()["Playbook"])


def test_awx_doc_names_every_role_and_dependency():
    text = _awx()
    roles = [r.split(".")[-1] for r in _shipped()["Role"]]
    assert sorted(r for r in roles if f"`roles/{r}`" not in text) == []
    with open(os.path.join(ROOT, "galaxy.yml")) as f:
        dependencies = yaml.safe_load(f)["dependencies"]
    assert sorted(d for d in dependencies if f"`{d}`" not in text) == []
