"""The monitoring role hands every exporter's port and package to kunpeng.vllm.monitoring_plan without naming a
backend: the module takes the one of the node's backend (the backend registry's ``exporter``).

The test renders the real task argument of roles/monitoring/tasks/plan.yml with the role's defaults and an
operator's override, and plans a node of each backend from it.
"""

import pytest
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar
from task_files import load, task
from task_files import trusted as _trusted

from ansible_collections.kunpeng.vllm.plugins.module_utils.backends import registry as backends
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import monitoring_plan

PLAN = "roles/monitoring/tasks/plan.yml"


def rendered(**overrides):
    decide = task(PLAN, "Decide this node's scrape targets and accelerator exporter")
    variables = dict(_trusted(load("roles/monitoring/defaults/main.yml")), **_trusted(overrides))
    variables.update(_trusted(decide["vars"]))
    templar = Templar(loader=DataLoader(), variables=variables)
    args = decide["kunpeng.vllm.monitoring_plan"]
    return templar.template(_trusted(args["ports"])), templar.template(_trusted(args["packages"]))


def test_every_exporter_port_and_package_reaches_the_module():
    ports, packages = rendered(monitoring_dcgm_exporter_port=9500, monitoring_npu_exporter_package="npu-exporter")
    assert {key: ports[key] for key in ("node_exporter", "dcgm", "npu")} == {"node_exporter": 9100, "dcgm": 9500, "npu": 8082}
    assert packages["monitoring_npu_exporter_package"] == "npu-exporter" and packages["monitoring_dcgm_exporter_package"] == ""


@pytest.mark.parametrize("name", [name for name in backends.NAMES if backends.field(name, "exporter")])
def test_a_node_scrapes_its_backends_exporter_on_the_roles_port(name):
    exporter = backends.field(name, "exporter")
    ports, packages = rendered(**{f"monitoring_{exporter['job']}_exporter_port": 9999, exporter["variable"]: "pkg"})
    plan = monitoring_plan.node_plan(["vllm"], "10.0.0.5", name, ["vllm"], [], dict(monitoring_plan.DEFAULT_PORTS, **ports),
                                     packages)
    assert {"job": exporter["job"], "target": "10.0.0.5:9999"} in plan["targets"]


@pytest.mark.parametrize("inventory, target", [
    ({}, None),  # no gateway_metrics_port in the inventory: HAProxy exports nothing
    ({"gateway_metrics_port": 0}, None),  # the gateway role's "no exporter"
    ({"gateway_metrics_port": 8405}, "10.0.0.7:8405"),
    ({"gateway_metrics_port": "8405"}, "10.0.0.7:8405"),
    ({"gateway_metrics_port": 8405, "monitoring_gateway_metrics_port": ""}, None),  # the operator turns the scrape off
])
def test_a_gateway_is_scraped_on_its_exporter_port(inventory, target):
    """monitoring_gateway_metrics_port follows the gateway's gateway_metrics_port: a gateway that exports is scraped."""
    ports, packages = rendered(**inventory)
    plan = monitoring_plan.node_plan(["gateway"], "10.0.0.7", "", [], ["gateway"], dict(monitoring_plan.DEFAULT_PORTS, **ports),
                                     packages)
    assert [t["target"] for t in plan["targets"] if t["job"] == "gateway"] == ([target] if target else [])
