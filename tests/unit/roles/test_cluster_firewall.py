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


# --- the plan reads the firewall as it is now, not as an earlier base run recorded it ------------------------

PREFLIGHT = "roles/vllm/tasks/preflight.yml"


def test_the_preflight_reads_the_firewall_read_only_and_hands_it_to_the_plan():
    probe = next(t for t in tasks(load(PREFLIGHT)) if t.get("name") == "Read this host's firewall for a multi-node instance")
    assert probe["ansible.builtin.command"] == {"argv": "{{ item }}"}
    # the probes of the base role's firewall step (roles/base/vars), firewalld's zones with them
    assert probe["loop"] == [["ufw", "status", "verbose"], ["firewall-cmd", "--list-all"], ["firewall-cmd", "--list-all-zones"]]
    assert probe["check_mode"] is False and probe["changed_when"] is False and probe["failed_when"] is False
    plan = next(t for t in tasks(load(PREFLIGHT)) if "kunpeng.vllm.vllm_cluster" in t)["kunpeng.vllm.vllm_cluster"]
    assert "firewall_default_deny" not in plan
    assert [(p["name"], p["rc"], p["stdout"], p.get("zones_stdout")) for p in plan["firewall_probes"]] == [
        ("ufw", "{{ __vllm_firewall_probe.results[0].rc | default(none) }}",
         "{{ __vllm_firewall_probe.results[0].stdout | default('') }}", None),
        ("firewalld", "{{ __vllm_firewall_probe.results[1].rc | default(none) }}",
         "{{ __vllm_firewall_probe.results[1].stdout | default('') }}",
         "{{ __vllm_firewall_probe.results[2].stdout | default('') }}"),
    ]


def test_the_base_step_lists_firewalds_zones_without_a_cluster_plan_too():
    zones = next(t for t in tasks(load(FIREWALL)) if t.get("name") == "List firewalld's zones and their interfaces")
    assert not any("kunpeng_vllm_cluster" in condition for condition in zones["when"])


def _when(condition, **variables):
    import jinja2
    return jinja2.Environment().from_string("{{ " + condition + " }}").render(none=None, **variables) == "True"


def test_site_runs_the_base_step_alone_with_tags_base():
    """--tags base skips the plan steps: no kunpeng_vllm_converged then (it failed 'is undefined')."""
    steps = {t["name"]: t for t in tasks(load("playbooks/site.yml"))}
    base = steps["Prepare the operating system"]["when"]
    driver = steps["Install or adopt the driver stack of the planned backend"]["when"]
    assert _when(base) is True
    assert _when(base, kunpeng_vllm_converged={"converged": True}) is False
    assert _when(base, kunpeng_vllm_converged={"converged": False}) is True
    assert _when(driver[0]) is True and _when(driver[1]) is False
    assert _when(driver[1], kunpeng_vllm_plan={"driver": {"role": "kunpeng.vllm.nvidia"}}) is True
