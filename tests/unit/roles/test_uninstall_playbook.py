"""playbooks/uninstall.yml removes a multi-node instance as one unit: a run without every member changes nothing."""

import os

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar
from core_compat import evaluate_conditional
from task_files import trusted

PLAYBOOK = os.path.join(os.path.dirname(__file__), "..", "..", "..", "playbooks", "uninstall.yml")
GROUPS = {"ds_r1": ["a2-node-1", "a2-node-2"], "all": ["a2-node-1", "a2-node-2", "gw"]}


def _guard():
    with open(PLAYBOOK) as handle:
        tasks = yaml.safe_load(handle)[0]["tasks"]
    assert tasks[0]["name"] == "Check that every member of a multi-node instance is in this run", \
        "the member check must run before anything is removed"
    return tasks[0]


@pytest.mark.parametrize("group, play_hosts, runs, passes", [
    ("ds_r1", ["a2-node-1", "a2-node-2"], True, True),     # every member in the run
    ("ds_r1", ["a2-node-1", "a2-node-2", "gw"], True, True),
    ("ds_r1", ["a2-node-2"], True, False),                 # --limit a2-node-2: the head is left out
    ("", ["gw"], False, None),                             # a host that serves alone: no check
])
def test_members_are_removed_together(group, play_hosts, runs, passes):
    guard = _guard()
    variables = {"groups": GROUPS, "ansible_play_hosts_all": play_hosts, "inventory_hostname": play_hosts[0]}
    if group:
        variables["vllm_cluster_group"] = group
    templar = Templar(loader=DataLoader(), variables=variables)
    assert evaluate_conditional(templar, trusted(guard["when"])) is runs
    if not runs:
        return
    templar = Templar(loader=DataLoader(), variables=dict(variables, **{
        name: templar.template(trusted(value)) for name, value in guard["vars"].items()}))
    assert evaluate_conditional(templar, trusted(guard["ansible.builtin.assert"]["that"])) is passes
    if not passes:
        message = templar.template(trusted(guard["ansible.builtin.assert"]["fail_msg"]))
        assert "a2-node-1 are not in this run" in message and "Nothing was removed" in message
