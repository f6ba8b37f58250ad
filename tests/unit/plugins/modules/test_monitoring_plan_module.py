"""kunpeng.vllm.monitoring_plan as a module: the kunpeng_monitoring fact keeps to its declared contract."""

import yaml
from module_runner import run_main

from ansible_collections.kunpeng.vllm.plugins.module_utils import fact_contract
from ansible_collections.kunpeng.vllm.plugins.modules import monitoring_plan

NODE = {"scope": "node", "address": "kv-monitoring-vllm", "host_groups": ["vllm"], "backend": "cpu",
        "vllm_groups": ["vllm"], "server_groups": ["monitoring"], "collector": "always"}


def test_node_fact_has_exactly_the_declared_keys():
    failed, result = run_main(monitoring_plan.main, NODE)
    assert not failed, result
    fact = result["ansible_facts"]["kunpeng_monitoring"]
    assert fact_contract.check("kunpeng_monitoring", fact) == []
    assert fact["targets"] == [{"job": "node", "target": "kv-monitoring-vllm:9100"},
                               {"job": "vllm", "target": "kv-monitoring-vllm:8000"}]
    assert result["changed"] is False


def test_return_documents_the_declared_keys():
    doc = yaml.safe_load(monitoring_plan.RETURN)["ansible_facts"]["contains"]["kunpeng_monitoring"]["contains"]
    assert sorted(doc) == sorted(fact_contract.shape("kunpeng_monitoring"))


def test_server_scope_from_node_facts():
    _failed, node = run_main(monitoring_plan.main, NODE)
    failed, result = run_main(monitoring_plan.main, {"scope": "server", "nodes": [node["ansible_facts"]["kunpeng_monitoring"]],
                                                     "scrape_interval": "2s", "retention_time": "1d"})
    assert not failed, result
    assert result["jobs"] == ["vllm", "node"]
    assert "--storage.tsdb.retention.time=1d" in result["args"]


def test_bad_value_fails_naming_the_variable():
    failed, result = run_main(monitoring_plan.main, dict(NODE, ports={"vllm": 0}))
    assert failed and result["msg"].startswith("monitoring_vllm_port must be a TCP port")


def test_check_mode_is_supported():
    failed, result = run_main(monitoring_plan.main, NODE, check_mode=True)
    assert not failed and result["changed"] is False
