"""The cluster's own ports reach the base role's firewall, from the members only.

The vllm_cluster module runs on recorded network facts of two members; its
``firewall`` goes through the base role's firewall step the way
roles/base/tasks/firewall.yml hands it to base_report, and the rules that
come out are the ones ufw and firewalld are given.
"""

import sys
from pathlib import Path

from task_files import load, tasks

from ansible_collections.kunpeng.vllm.plugins.module_utils.execute import base_report

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "plugins" / "modules"))
import test_vllm_cluster as tvc  # noqa: E402

FIREWALL = "roles/base/tasks/firewall.yml"


def _cluster(host, **params):
    members, plan = tvc.cpu_pair()
    return tvc.ok(members, host, engine_args=plan["engine_args"], **params)


def _decision_task():
    return next(t for t in tasks(load(FIREWALL)) if "kunpeng.vllm.base_report" in t)


def test_the_firewall_step_adds_the_cluster_ports_to_the_rules():
    task = _decision_task()
    assert task["kunpeng.vllm.base_report"]["firewall"]["rules"] == "{{ base_firewall_rules + __base_cluster_firewall }}"
    assert task["vars"]["__base_cluster_firewall"] == "{{ (kunpeng_vllm_cluster | default({})).firewall | default([]) }}"


def test_cluster_ports_are_allowed_from_the_members_only():
    for host in ("node-0", "node-1"):
        fact = _cluster(host, ray_units=True)
        decision = base_report.firewall(True, "ufw", 0, "Status: active", [8000], [], fact["firewall"])
        cluster_rules = [rule for rule in decision["rules"] if rule["port"] != "8000"]
        assert {rule["source"] for rule in cluster_rules} == {"172.18.0.2/32", "172.18.0.3/32"}
        assert sorted({(rule["port"], rule["proto"]) for rule in cluster_rules}) == [
            ("10002-19999", "tcp"), ("13345", "tcp"), ("32768-60999", "tcp"), ("6379", "tcp")]
        assert len(cluster_rules) == 8
        assert 'rule family="ipv4" source address="172.18.0.3/32" port port="13345" protocol="tcp" accept' in \
            [rule["rich_rule"] for rule in cluster_rules]
        # the API port keeps base_firewall_sources (none: nothing opened to anyone)
        assert [rule for rule in decision["rules"] if rule["port"] == "8000"] == []


def test_a_host_serving_alone_opens_no_cluster_port():
    fact = tvc.ok([], "node-0")
    assert fact["firewall"] == []
    decision = base_report.firewall(True, "firewalld", 0, "running", [8000], ["10.0.0.0/8"], fact["firewall"])
    assert [rule["port"] for rule in decision["rules"]] == ["8000"]
