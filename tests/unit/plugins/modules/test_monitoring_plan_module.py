"""kunpeng.vllm.monitoring_plan as a module: the kunpeng_monitoring fact keeps to its declared contract."""

import yaml
from module_runner import run_main

from ansible_collections.kunpeng.vllm.plugins.module_utils import fact_contract
from ansible_collections.kunpeng.vllm.plugins.modules import monitoring_plan

# The node's own addresses as the setup module reports them (all_ipv4_addresses + all_ipv6_addresses).
NODE = {"scope": "node", "address": "10.89.0.3", "host_groups": ["vllm"], "backend": "cpu",
        "vllm_groups": ["vllm"], "server_groups": ["monitoring"], "collector": "always",
        "local_addresses": ["10.89.0.3", "fe80::42:aff:fe59:3"], "sources": ["10.89.0.2"]}


def test_node_fact_has_exactly_the_declared_keys():
    failed, result = run_main(monitoring_plan.main, NODE)
    assert not failed, result
    fact = result["ansible_facts"]["kunpeng_monitoring"]
    assert fact_contract.check("kunpeng_monitoring", fact) == []
    assert fact["targets"] == [{"job": "node", "target": "10.89.0.3:9100"},
                               {"job": "vllm", "target": "10.89.0.3:8000"}]
    # Bound to the monitoring address, not every interface; the scrape ports open to the Prometheus server only.
    assert fact["listen"] == "10.89.0.3" and fact["node_exporter_listen"] == "10.89.0.3:9100"
    assert fact["firewall"] == [{"ports": [8000, 9100], "sources": ["10.89.0.2/32"], "protocol": "tcp"}]
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
    assert "--web.listen-address=127.0.0.1:9090" in result["args"]  # no listen address given: loopback


def test_a_name_resolves_to_the_address_the_node_holds():
    failed, result = run_main(monitoring_plan.main, dict(NODE, address="localhost", local_addresses=[]))
    assert not failed, result
    assert result["ansible_facts"]["kunpeng_monitoring"]["listen"] in ("127.0.0.1", "::1")


def test_an_address_the_node_does_not_hold_fails():
    failed, result = run_main(monitoring_plan.main, dict(NODE, address="192.0.2.50"))
    assert failed and "monitoring_listen_address" in result["msg"]


def test_no_gateway_target_unless_a_port_is_given():
    args = dict(NODE, host_groups=["gateway"], gateway_groups=["gateway"])
    _failed, result = run_main(monitoring_plan.main, args)
    assert [t["job"] for t in result["ansible_facts"]["kunpeng_monitoring"]["targets"]] == ["node"]
    _failed, result = run_main(monitoring_plan.main, dict(args, ports={"gateway": 8405}))
    assert [t["job"] for t in result["ansible_facts"]["kunpeng_monitoring"]["targets"]] == ["node", "gateway"]


def test_bad_value_fails_naming_the_variable():
    failed, result = run_main(monitoring_plan.main, dict(NODE, ports={"vllm": 0}))
    assert failed and result["msg"].startswith("monitoring_vllm_port must be a TCP port")


def test_check_mode_is_supported():
    failed, result = run_main(monitoring_plan.main, NODE, check_mode=True)
    assert not failed and result["changed"] is False
