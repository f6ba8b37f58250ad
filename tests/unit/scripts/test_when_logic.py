"""scripts/bench/when_logic.py: which when-clauses carry logic, and how a file's clauses are counted."""

import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(ROOT, "scripts", "bench"))
import when_logic  # noqa: E402


@pytest.mark.parametrize("clause, logic", [
    ("__base_pkg_mgr == 'apt'", False),
    ("not __nvidia_plan.reboot", False),
    ("__monitoring_plan.node_exporter", False),
    ("item.kind is defined", False),
    ("x is not none", False),
    (True, False),
    (False, False),
    ("a and b", True),
    ("a or b", True),
    ("not (a or b)", True),
    ("a\n and b", True),
    ("a\nor b", True),
    ("base_ca_certificates | length > 0", True),
    ("x|bool", True),
    ("x is changed", False),
    # Words that contain and/or, and operators inside string literals, are data.
    ("android_mode", False),
    ("orchestrator == 'k8s'", False),
    ("name == 'rock and roll'", False),
    ("sep == '|'", False),
    ('sep == "a or b"', False),
    ("brand in ['x|y']", False),
    ("'|' in text and ok", True),
])
def test_classifier(clause, logic):
    assert when_logic.carries_logic(clause) is logic


def test_list_items_are_clauses_and_blocks_are_searched():
    text = """
- name: Block
  when: a | bool
  block:
    - name: One
      ansible.builtin.debug: {msg: x}
      when:
        - a
        - b or c
  rescue:
    - name: Two
      ansible.builtin.debug: {msg: y}
      when: d
- hosts: all
  pre_tasks:
    - name: Three
      ansible.builtin.debug: {msg: z}
      when: [e and f, g]
  tasks:
    - name: Four
      ansible.builtin.command: !unsafe "echo {{ x }}"
      changed_when: x | bool
"""
    # a|bool, [a, b or c], d, [e and f, g]; changed_when is not a when-clause.
    assert when_logic.count_text(text) == (6, 3)


def test_survey_counts_roles_and_playbooks_only(tmp_path):
    for rel, text in {
        "roles/r/tasks/main.yml": "- name: A\n  ansible.builtin.debug: {}\n  when: x and y\n",
        "roles/r/handlers/main.yml": "- name: H\n  ansible.builtin.debug: {}\n  when: z\n",
        "playbooks/p.yml": "- hosts: all\n  tasks:\n    - name: B\n      ansible.builtin.debug: {}\n      when: a | bool\n",
        "molecule/s/converge.yml": "- hosts: all\n  tasks:\n    - name: C\n      ansible.builtin.debug: {}\n      when: a or b\n",
        "roles/r/vars/main.yml": "__r_x: 1\n",
    }.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert when_logic.survey(str(tmp_path)) == {
        "roles/r/tasks/main.yml": (1, 1),
        "roles/r/handlers/main.yml": (1, 0),
        "playbooks/p.yml": (1, 1),
    }
