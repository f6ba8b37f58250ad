"""Every backend name reaches the roles and playbooks from the plan alone.

``vllm_backend`` is a request: the plan (plugins/module_utils/plan/deployment.py
resolve_backend) turns it, with the probe's ``summary.backend`` for ``auto``,
into ``kunpeng_vllm_plan.backend``.  A task, template or vars file that read
either of them again would decide the backend a second time, and disagree with
the plan when the backend is forced.  Only the calls of the plan (the preflight's,
playbooks/k8s_export.yml's) may read ``vllm_backend``; the probe's ``summary.backend`` may only be printed by
the playbooks that report the probe and plan nothing.
"""

import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
REQUEST = re.compile(r"(?<![\w.])vllm_backend\b")
PROBED = re.compile(r"\bsummary\.backend\b")
# The reads of the request: the plan calls.
REQUEST_READERS = {"roles/vllm/tasks/plan_engine.yml",
                   # the export's own plan call, with the role's request as its default
                   "playbooks/k8s_export.yml"}
# Playbooks that print the probe and run no plan.
PROBE_REPORTS = {"playbooks/probe.yml", "playbooks/nvidia_adopt.yml"}
SKIP_DIRS = ("meta", "defaults")


def _files():
    for top in ("roles", "playbooks"):
        for folder, dirs, names in os.walk(os.path.join(ROOT, top)):
            dirs[:] = [d for d in dirs if d not in SKIP_DIRS]
            for name in names:
                if name.endswith((".yml", ".yaml", ".j2")):
                    path = os.path.join(folder, name)
                    yield os.path.relpath(path, ROOT), path


def offenders(files):
    """(path, line number, what) for each read of the backend outside the plan."""
    found = []
    for rel, path in files:
        with open(path) as handle:
            for number, line in enumerate(handle, 1):
                code = line.split("#", 1)[0] if not rel.endswith(".j2") else line
                if REQUEST.search(code) and rel not in REQUEST_READERS:
                    found.append((rel, number, "vllm_backend"))
                if PROBED.search(code) and rel not in PROBE_REPORTS:
                    found.append((rel, number, "summary.backend"))
    return found


def test_no_role_or_playbook_decides_the_backend_again():
    assert offenders(_files()) == []


@pytest.mark.parametrize("text, what", [
    ("    backend: \"{{ vllm_backend }}\"\n", "vllm_backend"),
    ("  when: kunpeng_accelerators.summary.backend == 'cuda'\n", "summary.backend"),
])
def test_the_check_finds_a_second_decision(tmp_path, text, what):
    path = tmp_path / "task.yml"
    path.write_text(text)
    assert offenders([("roles/monitoring/tasks/plan.yml", str(path))]) == [("roles/monitoring/tasks/plan.yml", 1, what)]


def test_the_plan_reads_the_request():
    with open(os.path.join(ROOT, "roles", "vllm", "tasks", "plan_engine.yml")) as handle:
        assert REQUEST.search(handle.read())


BRANCH = re.compile(r"{%-?\s*(?:if|elif)\b[^%]*(?:\.backend\b|__vllm_backend\b|'(?:cpu|cuda|ascend)'|\"(?:cpu|cuda|ascend)\")")


def template_branches(files):
    """(path, line number) of each template line that branches on a backend."""
    found = []
    for rel, path in files:
        if rel.endswith(".j2"):
            with open(path) as handle:
                found += [(rel, number) for number, line in enumerate(handle, 1) if BRANCH.search(line)]
    return found


def test_no_template_branches_on_the_backend():
    # What differs per backend comes from the plan's service entry (the registry's records).
    assert template_branches(_files()) == []


@pytest.mark.parametrize("line", ["{% if __vllm_backend == 'cpu' %}", "{%- elif kunpeng_vllm_plan.backend == x %}",
                                  '{% if b == "ascend" %}'])
def test_the_branch_check_finds_a_backend_branch(tmp_path, line):
    path = tmp_path / "unit.j2"
    path.write_text(line + "\n")
    assert template_branches([("roles/vllm/templates/unit.j2", str(path))]) == [("roles/vllm/templates/unit.j2", 1)]
