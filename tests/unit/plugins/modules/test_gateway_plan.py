"""kunpeng.vllm.gateway_plan: the role's two calls (backends first, then the full plan) and its refusals."""

import os
import sys

import pytest
from ansible_collections.kunpeng.vllm.plugins.modules import gateway_plan
from module_runner import run_main

GROUPS = {"all": ["gw", "a", "b"], "gateway": ["gw"], "vllm": ["a", "b"], "solo": ["a"]}
POOLS = [{"name": "shared", "group": "vllm", "models": ["m"], "canary_hosts": ["b"], "canary_percent": 10},
         {"name": "solo", "group": "solo", "models": ["m-solo"]}]
SETTINGS = {"gateway_port": 8080, "gateway_health_rise": 2}
KEYS = ["0123456789abcdef"]


def test_first_call_lists_the_backends():
    failed, result = run_main(gateway_plan.main,
                              {"pools": POOLS, "groups": GROUPS, "settings": SETTINGS, "api_keys": KEYS})
    assert not failed
    assert result["hosts"] == ["a", "b"]
    assert result["backends"] == [] and result["api_keys"] is True and result["tls"] is False
    assert result["changed"] is False


def test_full_plan():
    failed, result = run_main(gateway_plan.main, {
        "pools": POOLS, "groups": GROUPS, "settings": SETTINGS, "api_keys": KEYS,
        "host_vars": {"a": {"ansible_host": "10.0.0.1"}, "b": {"ansible_host": "10.0.0.2", "vllm_port": 8001}}},
        check_mode=True)
    assert not failed
    shared = result["backends"][0]
    assert [(s["name"], s["address"], s["port"], s["weight"]) for s in shared["servers"]] == [
        ("a", "10.0.0.1", 8000, 9), ("b", "10.0.0.2", 8001, 1)]
    assert [(r["model"], r["backend"]) for r in result["routes"]] == [("m", "pool_shared"), ("m-solo", "pool_solo")]
    # A setting's value (gateway_health_rise 2) is no secret: the numbers come back whole.
    assert result["bufsize"] == 81920


@pytest.mark.parametrize("args, words", [
    ({"settings": {"gateway_port": 0}}, "gateway: gateway_port is 0"),
    ({"default_pool": "nope"}, "gateway: gateway_default_pool is 'nope'"),
    ({"pools": [{"name": "x", "group": "missing", "models": ["m"]}]}, "gateway: gateway_pools[0].group (pool x)"),
    # Hybrid sets and the dispatch policy fail on the first call already, before the inventory is read.
    ({"pools": [dict(POOLS[0], kind="cpu", maxconn=2), dict(POOLS[1], models=["m"], kind="cpu", maxconn=2)]},
     "gateway: gateway_pools: model m is served by pools shared and solo (kinds cpu, cpu)"),
    ({"dispatch": {"load": 2}}, "gateway: gateway_dispatch_load is 2"),
])
def test_refusals_name_the_variable(args, words):
    failed, result = run_main(gateway_plan.main, dict({"pools": POOLS, "groups": GROUPS}, **args))
    assert failed
    assert result["msg"].startswith(words)


def test_keys_stay_out_of_the_refusal():
    failed, result = run_main(gateway_plan.main, {"pools": POOLS, "groups": GROUPS,
                                                  "api_keys": ["short-secret"]})
    assert failed and "short-secret" not in result["msg"]


@pytest.mark.parametrize("version, fails", [
    ("HAProxy version 2.6.12-1+deb12u1 2023/12/16 - https://haproxy.org/", False),
    ("HAProxy version 2.4.24-0ubuntu0.22.04.1 2023/10/31 - https://haproxy.org/", True),
])
def test_haproxy_older_than_2_5_is_refused(version, fails):
    failed, result = run_main(gateway_plan.main, {"pools": POOLS, "groups": GROUPS, "settings": SETTINGS,
                                                  "api_keys": KEYS, "haproxy_version": version})
    assert failed is fails
    if fails:
        assert result["msg"].startswith("gateway: HAProxy 2.4.24") and "ppa:vbernat/haproxy-2.8" in result["msg"]
    else:
        assert result["hosts"] == ["a", "b"]


# The backends as roles/gateway/tasks/main.yml collects them (whether vllm_api_key is set, never the key): the plan's
# tables (tests/unit/plugins/module_utils/plan/test_gateway.py).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "module_utils", "plan"))
from test_gateway import GENERATED, KEYED, LOOPBACK, OPTED_OUT  # noqa: E402

ON_THE_NETWORK = dict(SETTINGS, gateway_bind_address="0.0.0.0")


@pytest.mark.parametrize("host_vars, api_keys, settings, words", [
    # The gateway checks no key, and a backend on loopback has none: refused before any change.
    ({"a": LOOPBACK, "b": KEYED}, [], ON_THE_NETWORK,
     "gateway: gateway_api_keys is empty, so the gateway on 0.0.0.0 checks no API key"),
    ({"a": LOOPBACK, "b": KEYED}, None, ON_THE_NETWORK, "backend a (vllm_api_key is empty and vllm_host is 127.0.0.1"),
    # An opted-out backend: refused.
    ({"a": KEYED, "b": OPTED_OUT}, [], ON_THE_NETWORK,
     "backend b (vllm_api_key is empty and vllm_allow_unauthenticated is true"),
    # Backends with a key of their own (given or generated): accepted.
    ({"a": KEYED, "b": GENERATED}, [], ON_THE_NETWORK, None),
    # The gateway checks keys: accepted.
    ({"a": LOOPBACK, "b": OPTED_OUT}, KEYS, ON_THE_NETWORK, None),
    # The gateway on loopback only: accepted.
    ({"a": LOOPBACK, "b": OPTED_OUT}, [], dict(SETTINGS, gateway_bind_address="127.0.0.1"), None),
])
def test_a_keyless_gateway_needs_keyed_backends(host_vars, api_keys, settings, words):
    args = {"pools": POOLS, "groups": GROUPS, "settings": settings, "host_vars": host_vars}
    if api_keys is not None:
        args["api_keys"] = api_keys
    failed, result = run_main(gateway_plan.main, args)
    assert failed is (words is not None)
    if words:
        assert result["msg"].startswith("gateway: gateway_api_keys is empty") and words in result["msg"]
        assert "Set gateway_api_keys" in result["msg"] and "Nothing was changed" in result["msg"]
    else:
        assert [s["name"] for s in result["backends"][0]["servers"]] == ["a", "b"]
        assert "vllm_api_key_set" not in str(result["backends"])


def test_the_first_call_does_not_need_the_backends_keys():
    failed, result = run_main(gateway_plan.main, {"pools": POOLS, "groups": GROUPS, "settings": ON_THE_NETWORK,
                                                  "api_keys": []})
    assert not failed and result["hosts"] == ["a", "b"]
