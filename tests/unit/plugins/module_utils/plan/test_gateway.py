"""The gateway plan: pools from inventory groups, canary weights, model routes, and early refusals."""

import os

import pytest
import yaml

from ansible_collections.kunpeng.vllm.plugins.module_utils.plan.gateway import (
    MAX_WEIGHT, VLLM_HOST_DEFAULT, GatewayError, backend_key_decision, canary_weights, dispatch_policy, gateway_plan,
    haproxy_problem, headroom_limits, keyless_backend_problem, listener_settings, validate_settings)

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", ".."))

# The inventory of molecule/gateway: two vLLM hosts, one pool each and a
# shared pool over both, with vllm-b as the canary of the shared pool.
GROUPS = {
    "all": ["gw", "vllm-a", "vllm-b"],
    "gateway": ["gw"],
    "vllm": ["vllm-a", "vllm-b"],
    "pool_a": ["vllm-a"],
    "pool_b": ["vllm-b"],
    "empty": [],
}
POOLS = [
    {"name": "shared", "group": "vllm", "models": ["smollm2"], "canary_hosts": ["vllm-b"], "canary_percent": 10},
    {"name": "a", "group": "pool_a", "models": ["smollm2-a"]},
    {"name": "b", "group": "pool_b", "models": "smollm2-b"},
]


@pytest.mark.parametrize("percent, n_canary, n_stable, expected", [
    # One canary beside one stable host: 1 in 10.
    (10, 1, 1, (1, 9, 10.0)),
    # One canary beside three stable hosts: the canary weighs 3 x 10 against 3 x 90.
    (10, 1, 3, (1, 3, 10.0)),
    (25, 2, 2, (1, 3, 25.0)),
    (50, 1, 1, (1, 1, 50.0)),
    (12.5, 1, 1, (1, 7, 12.5)),
    # 0.5 % needs 1:199; 0.1 % needs 1:999, beyond 256, so it is scaled (and says so).
    (0.5, 1, 1, (1, 199, 0.5)),
    (0.1, 1, 1, (1, MAX_WEIGHT, 0.39)),
    # The ends: no traffic to the canary, or all of it.
    (0, 1, 1, (0, 1, 0.0)),
    (100, 1, 1, (1, 0, 100.0)),
    # No canary hosts, or only canary hosts.
    (10, 0, 2, (None, 1, 0.0)),
    (10, 2, 0, (1, None, 100.0)),
])
def test_canary_weights(percent, n_canary, n_stable, expected):
    assert canary_weights(percent, n_canary, n_stable) == expected


@pytest.mark.parametrize("percent", [1, 5, 10, 33, 50, 90, 99])
@pytest.mark.parametrize("n_canary, n_stable", [(1, 1), (1, 4), (2, 5), (3, 7)])
def test_canary_weights_hit_the_share_and_fit_haproxy(percent, n_canary, n_stable):
    cw, sw, effective = canary_weights(percent, n_canary, n_stable)
    assert 1 <= cw <= MAX_WEIGHT and 1 <= sw <= MAX_WEIGHT
    share = 100.0 * cw * n_canary / (cw * n_canary + sw * n_stable)
    # 99 % for one canary beside four stable hosts needs 396:1; 256:1 is as close as HAProxy gets (98.46 %).
    assert abs(share - percent) < 0.6
    assert effective == round(share, 2)


def test_plan_of_the_scenario_inventory():
    host_vars = {"vllm-a": {"ansible_host": "kv-gateway-vllm-a", "vllm_port": None},
                 "vllm-b": {"gateway_backend_address": "10.0.0.2", "ansible_host": "x", "vllm_port": "8001"}}
    plan = gateway_plan(POOLS, GROUPS, host_vars)
    assert plan["hosts"] == ["vllm-a", "vllm-b"]
    assert [b["name"] for b in plan["backends"]] == ["pool_shared", "pool_a", "pool_b"]
    shared = plan["backends"][0]
    assert shared["servers"] == [
        {"name": "vllm-a", "address": "kv-gateway-vllm-a", "port": 8000, "weight": 9, "canary": False,
         "maxconn": None, "backup": False, "mark_down_on_error": False},
        {"name": "vllm-b", "address": "10.0.0.2", "port": 8001, "weight": 1, "canary": True,
         "maxconn": None, "backup": False, "mark_down_on_error": False},
    ]
    assert shared["canary_percent"] == 10.0
    assert plan["backends"][1]["servers"][0]["weight"] == 1
    assert plan["backends"][1]["canary_percent"] is None
    assert plan["routes"] == [
        {"model": "smollm2", "backend": "pool_shared", "when": ["{ var(txn.kv_model) -m str smollm2 }"]},
        {"model": "smollm2-a", "backend": "pool_a", "when": ["{ var(txn.kv_model) -m str smollm2-a }"]},
        {"model": "smollm2-b", "backend": "pool_b", "when": ["{ var(txn.kv_model) -m str smollm2-b }"]}]
    assert plan["models"] == ["smollm2", "smollm2-a", "smollm2-b"]
    assert plan["hybrid"] is False
    assert plan["default_backend"] is None
    assert plan["no_model_backend"] == "pool_shared"


def test_default_pool_takes_unknown_models_and_requests_without_one():
    plan = gateway_plan(POOLS, GROUPS, {"vllm-b": {"gateway_backend_address": "", "gateway_backend_port": 0}},
                        default_pool="b")
    assert plan["default_backend"] == "pool_b"
    assert plan["no_model_backend"] == "pool_b"
    # Without host variables (or with the role defaults "" and 0) a backend is
    # reached by its inventory name on vLLM's default port.
    assert plan["backends"][2]["servers"][0]["address"] == "vllm-b"
    assert plan["backends"][2]["servers"][0]["port"] == 8000


def _with(index, **changes):
    pools = [dict(p) for p in POOLS]
    pools[index].update(changes)
    return pools


@pytest.mark.parametrize("pools, host_vars, default_pool, words", [
    ([], {}, "", "gateway_pools is empty"),
    ([{"name": "x", "group": "vllm", "models": ["m"], "weight": 3}], {}, "", "unknown keys ['weight']"),
    (_with(1, name="a b"), {}, "", "gateway_pools[1].name is 'a b'"),
    (_with(2, name="a"), {}, "", "pool name a is used twice"),
    (_with(1, group="nope"), {}, "", "gateway_pools[1].group (pool a) is 'nope', which is not a group"),
    (_with(1, group="empty"), {}, "", "gateway_pools[1].group empty (pool a) has no hosts"),
    (_with(1, models=[]), {}, "", "gateway_pools[1].models (pool a) is empty"),
    (_with(1, models=["bad model"]), {}, "", "has 'bad model'"),
    (_with(1, models=["smollm2"]), {}, "", "model smollm2 is served by pools shared and a (kinds None, None)"),
    (_with(0, canary_hosts=["gw"]), {}, "", "canary_hosts (pool shared) names ['gw']"),
    (_with(0, canary_percent=None), {}, "", "has canary_hosts but no canary_percent"),
    (_with(0, canary_percent=120), {}, "", "canary_percent of pool shared is 120"),
    (_with(0, canary_percent="ten"), {}, "", "canary_percent of pool shared is 'ten'"),
    (_with(1, canary_percent=10), {}, "", "has canary_percent 10 but no canary_hosts"),
    (_with(0, canary_hosts=["vllm-a", "vllm-b"]), {}, "", "every host of group vllm is a canary host"),
    (POOLS, {}, "c", "gateway_default_pool is 'c', which is not a routed pool"),
    (POOLS, {"vllm-a": {"vllm_port": 70000}}, "", "vllm_port of backend vllm-a is 70000"),
    (POOLS, {"vllm-a": {"gateway_backend_port": "http"}}, "", "gateway_backend_port of backend vllm-a is 'http'"),
    (POOLS, {"vllm-a": {"ansible_host": "a b;"}}, "", "ansible_host of backend vllm-a is 'a b;'"),
])
def test_bad_pools_fail_naming_the_variable(pools, host_vars, default_pool, words):
    with pytest.raises(GatewayError) as err:
        gateway_plan(pools, GROUPS, host_vars, default_pool)
    assert words in str(err.value)


def test_host_that_cannot_name_a_server_is_refused():
    with pytest.raises(GatewayError, match="inventory host 'bad host' of group odd"):
        gateway_plan([{"name": "x", "group": "odd", "models": ["m"]}], {"odd": ["bad host"]})


GOOD = {
    "gateway_port": 8080, "gateway_tls_port": 8443, "gateway_timeout_connect": 5, "gateway_timeout_client": 600,
    "gateway_timeout_server": 600, "gateway_timeout_queue": 60, "gateway_health_interval": 2,
    "gateway_health_rise": 2, "gateway_health_fall": 2, "gateway_retries": 3, "gateway_maxconn": 2000,
    "gateway_max_body_kib": 64, "gateway_api_keys": ["k" * 16], "gateway_tls_certificate": "",
    "gateway_tls_key": "",
}


@pytest.mark.parametrize("changes, words", [
    ({}, None),
    ({"gateway_port": "8080"}, None),
    ({"gateway_port": 0}, "gateway_port is 0: give a whole number from 1 to 65535."),
    ({"gateway_port": True}, "gateway_port is True"),
    ({"gateway_timeout_server": "10m"}, "gateway_timeout_server is '10m'"),
    ({"gateway_health_fall": 0}, "gateway_health_fall is 0"),
    ({"gateway_retries": 11}, "gateway_retries is 11"),
    ({"gateway_max_body_kib": 8}, "gateway_max_body_kib is 8"),
    ({"gateway_maxconn": 1.5}, "gateway_maxconn is 1.5"),
    ({"gateway_metrics_port": 8405}, None),
    ({"gateway_metrics_port": -1}, "gateway_metrics_port is -1"),
    ({"gateway_metrics_port": 8080}, "gateway_metrics_port equals gateway_port"),
    ({"gateway_api_keys": "secret"}, "gateway_api_keys must be a list"),
    ({"gateway_api_keys": ["short"]}, "gateway_api_keys[0] is not a usable key"),
    ({"gateway_api_keys": ["has a space in it!!"]}, "gateway_api_keys[0] is not a usable key"),
    ({"gateway_tls_certificate": "/c.pem"}, "gateway_tls_certificate and gateway_tls_key go together"),
    ({"gateway_tls_certificate": "/c.pem", "gateway_tls_key": "/k.pem", "gateway_tls_port": 8080},
     "gateway_tls_port equals gateway_port"),
])
def test_settings(changes, words):
    problems = validate_settings(dict(GOOD, **changes))
    if words is None:
        assert problems == []
    else:
        assert len(problems) == 1 and problems[0].startswith(words)


def test_key_problems_do_not_show_the_key():
    problems = validate_settings({"gateway_api_keys": ["tiny-secret"]})
    assert problems and "tiny-secret" not in problems[0]


@pytest.mark.parametrize("settings, expected", [
    ({}, {"bufsize": 81920, "tls": False, "api_keys": False, "metrics_port": None}),
    ({"gateway_max_body_kib": 256, "gateway_api_keys": ["k" * 16]},
     {"bufsize": 278528, "tls": False, "api_keys": True, "metrics_port": None}),
    ({"gateway_tls_certificate": "/c.pem", "gateway_tls_key": "/k.pem", "gateway_api_keys": [],
      "gateway_metrics_port": "8405"}, {"bufsize": 81920, "tls": True, "api_keys": False, "metrics_port": 8405}),
])
def test_listener_settings(settings, expected):
    assert listener_settings(settings) == expected


@pytest.mark.parametrize("output, expected", [
    # what `haproxy -v` prints on each platform (first line)
    ("HAProxy version 2.6.12-1+deb12u1 2023/12/16 - https://haproxy.org/\nStatus: long-term supported branch", None),
    ("HAProxy version 2.8.5-1ubuntu3 2023/12/09 - https://haproxy.org/", None),
    ("HAProxy version 2.5.0 2021/11/23 - https://haproxy.org/", None),
    ("HAProxy version 3.0.5-1 2024/09/19 - https://haproxy.org/", None),
    ("HAProxy version 2.4.24-0ubuntu0.22.04.1 2023/10/31 - https://haproxy.org/",
     "HAProxy 2.4.24-0ubuntu0.22.04.1 is installed, and the gateway's configuration"),
    ("HAProxy version 2.4.22-f8e3218 2023/02/14 - https://haproxy.org/", "Ubuntu 22.04 and EL 9 ship 2.4"),
    ("HA-Proxy version 1.8.19-1+deb10u4 2022/02/14", "HAProxy 1.8.19-1+deb10u4 is installed"),
    ("", "cannot read the HAProxy version from 'haproxy -v' ('no output')"),
    ("bash: haproxy: command not found", "cannot read the HAProxy version"),
])
def test_haproxy_version(output, expected):
    problem = haproxy_problem(output)
    if expected is None:
        assert problem is None
    else:
        assert expected in problem and "2.5 or later" in problem


# Hybrid serving: the seed guide's Kunpeng + GPU estate, one model on a CPU
# pool and an accelerator pool, an x86 pool standing by for the CPU pool.
HYBRID_GROUPS = {"kunpeng": ["k1", "k2"], "gpu": ["g1"], "x86": ["x1"], "gpu_standby": ["x2"]}
HYBRID = [
    {"name": "kunpeng", "group": "kunpeng", "models": ["ds"], "kind": "cpu", "maxconn": 4, "standby": "x86"},
    {"name": "gpu", "group": "gpu", "models": ["ds"], "kind": "accelerator", "maxconn": 64},
    {"name": "x86", "group": "x86", "models": ["ds"], "maxconn": 2},
]
IS_DS = "{ var(txn.kv_model) -m str ds }"


@pytest.mark.parametrize("n_servers, maxconn, load, expected", [
    # One CPU server of 2 slots at 0.7: headroom while fewer than 1.4 requests, i.e. 0 or 1 in it.
    (1, 2, 0.7, [(1, 2)]),
    # 0.7 x 10 is exactly 7 (not 7.000000000000001): 7 requests in it means no headroom.
    (1, 10, 0.7, [(1, 7)]),
    # Two servers of 4: the limit follows the servers that are up.
    (2, 4, 0.7, [(1, 3), (2, 6)]),
    (3, 1, 0.5, [(1, 1), (2, 1), (3, 2)]),
    # A tiny load still lets one request in, a full load every slot.
    (1, 8, 0.01, [(1, 1)]),
    (2, 8, 1.0, [(1, 8), (2, 16)]),
])
def test_headroom_limits(n_servers, maxconn, load, expected):
    assert headroom_limits(n_servers, maxconn, load) == expected


def test_hybrid_plan_routes_short_requests_to_the_cpu_pool_while_it_has_headroom():
    plan = gateway_plan(HYBRID, HYBRID_GROUPS, {}, dispatch={"size_tokens": 256})
    assert plan["hybrid"] is True and plan["models"] == ["ds"]
    assert plan["dispatch"] == {"size_tokens": 256, "load": 0.7, "bytes_per_token": 4, "retry_after": 10}
    short = "{ var(txn.kv_tokens) -m int lt 256 }"
    assert plan["routes"] == [
        {"model": "ds", "backend": "pool_kunpeng",
         "when": [IS_DS, short, "{ nbsrv(pool_kunpeng) eq 1 }", "{ be_conn(pool_kunpeng) lt 3 }"]},
        {"model": "ds", "backend": "pool_kunpeng",
         "when": [IS_DS, short, "{ nbsrv(pool_kunpeng) eq 2 }", "{ be_conn(pool_kunpeng) lt 6 }"]},
        # Everything else, and what the CPU pool has no headroom for: the accelerator pool, which queues.
        {"model": "ds", "backend": "pool_gpu", "when": [IS_DS]},
    ]
    # The standby pool has no backend of its own: its servers are the CPU pool's backups.
    assert [b["name"] for b in plan["backends"]] == ["pool_kunpeng", "pool_gpu"]
    kunpeng, gpu = plan["backends"]
    assert [(s["name"], s["maxconn"], s["backup"], s["mark_down_on_error"]) for s in kunpeng["servers"]] == [
        ("k1", 4, False, True), ("k2", 4, False, True), ("x1", 2, True, False)]
    assert (kunpeng["kind"], kunpeng["standby"], gpu["kind"], gpu["standby"]) == ("cpu", "x86", "accelerator", None)
    assert [(s["name"], s["maxconn"], s["backup"]) for s in gpu["servers"]] == [("g1", 64, False)]
    assert plan["hosts"] == ["g1", "k1", "k2", "x1"]
    assert plan["no_model_backend"] == "pool_kunpeng"


def test_a_standby_with_more_servers_keeps_rules_for_all_of_them():
    groups = dict(HYBRID_GROUPS, x86=["x1", "x3", "x4"])
    rules = gateway_plan(HYBRID, groups, {})["routes"]
    assert [r["when"][2] for r in rules[:-1]] == [
        "{ nbsrv(pool_kunpeng) eq 1 }", "{ nbsrv(pool_kunpeng) eq 2 }", "{ nbsrv(pool_kunpeng) eq 3 }"]


def test_hosts_that_serve_the_model_pass():
    host_vars = {"k1": {"vllm_engine_args": {"served_model_name": ["ds", "ds-cpu"]}, "vllm_model_name": "x"},
                 "g1": {"vllm_engine_args": {"served-model-name": "ds"}}, "x1": {"vllm_model_name": "ds"},
                 "k2": {"vllm_engine_args": None, "vllm_model_name": None}}
    assert gateway_plan(HYBRID, HYBRID_GROUPS, host_vars)["hybrid"] is True


def _hybrid(index, **changes):
    pools = [dict(p) for p in HYBRID]
    pools[index].update(changes)
    return pools


@pytest.mark.parametrize("pools, host_vars, dispatch, words", [
    # Two pools, one model, no kinds (or twice the same kind): not a hybrid set.
    (_hybrid(1, kind="cpu"), {}, None, "model ds is served by pools kunpeng and gpu (kinds cpu, cpu)"),
    (_hybrid(0, kind=None), {}, None, "(kinds None, accelerator)"),
    (_hybrid(0, kind="gpu"), {}, None, "gateway_pools[0].kind (pool kunpeng) is 'gpu': give cpu or accelerator."),
    (_hybrid(1, maxconn=None), {}, None, "pool gpu serves ds beside another pool but has no maxconn"),
    (_hybrid(1, maxconn=-3), {}, None, "gateway_pools[1].maxconn (pool gpu) is -3"),
    (_hybrid(1, maxconn="many"), {}, None, "gateway_pools[1].maxconn (pool gpu) is 'many'"),
    # The pools of a model disagree on the name their hosts serve.
    (HYBRID, {"g1": {"vllm_model_name": "deepseek"}}, None,
     "pools kunpeng, gpu, x86 all serve ds, but host g1 of pool gpu serves deepseek"),
    (HYBRID, {"x1": {"vllm_engine_args": {"served_model_name": ["ds-x86"]}, "vllm_model_name": "ds"}}, None,
     "host x1 of pool x86 serves ds-x86"),
    # Thresholds out of range.
    (HYBRID, {}, {"size_tokens": 0}, "gateway_dispatch_size_tokens is 0: give a whole number from 1 to 1e+06."),
    (HYBRID, {}, {"load": 1.5}, "gateway_dispatch_load is 1.5: give a number from 0.01 to 1."),
    (HYBRID, {}, {"load": "high"}, "gateway_dispatch_load is 'high'"),
    (HYBRID, {}, {"load": True}, "gateway_dispatch_load is True"),
    (HYBRID, {}, {"bytes_per_token": 0}, "gateway_dispatch_bytes_per_token is 0"),
    (HYBRID, {}, {"retry_after": 0}, "gateway_retry_after is 0"),
    (HYBRID, {}, {"queue": 3}, "dispatch policy has unknown key 'queue'"),
    # Standbys: unknown, another model, shared hosts, chains and cycles.
    (_hybrid(0, standby="nope"), {}, None, "standby of pool kunpeng is 'nope', which is not a pool"),
    (_hybrid(2, models=["ds", "other"]), {}, None,
     "standby of pool kunpeng is x86, which serves ds, other where kunpeng serves ds"),
    (_hybrid(2, group="kunpeng"), {}, None, "standby of pool kunpeng is x86, which shares hosts ['k1', 'k2']"),
    (_hybrid(2, standby="gpu"), {}, None, "standby of pool kunpeng is x86, which names its own standby gpu"),
    (_hybrid(2, standby="kunpeng"), {}, None,
     "the standby pools form a cycle (kunpeng -> x86 -> kunpeng)"),
    (_hybrid(0, standby="kunpeng"), {}, None, "the standby pools form a cycle (kunpeng -> kunpeng)"),
])
def test_bad_hybrid_pools_fail_naming_the_variable(pools, host_vars, dispatch, words):
    with pytest.raises(GatewayError) as err:
        gateway_plan(pools, HYBRID_GROUPS, host_vars, dispatch=dispatch)
    assert words in str(err.value)


def test_a_standby_is_not_a_default_pool():
    with pytest.raises(GatewayError, match="gateway_default_pool is 'x86', which is not a routed pool"):
        gateway_plan(HYBRID, HYBRID_GROUPS, {}, default_pool="x86")


@pytest.mark.parametrize("values, expected", [
    (None, {"size_tokens": 512, "load": 0.7, "bytes_per_token": 4, "retry_after": 10}),
    ({"size_tokens": "1024", "load": "0.5"}, {"size_tokens": 1024, "load": 0.5, "bytes_per_token": 4,
                                              "retry_after": 10}),
    ({"load": 1}, {"size_tokens": 512, "load": 1.0, "bytes_per_token": 4, "retry_after": 10}),
])
def test_dispatch_policy_defaults_from_the_seed(values, expected):
    assert dispatch_policy(values) == expected


# --- A gateway that checks no key in front of a backend that has none -------------------------------------------

# Per backend, the shape roles/gateway/tasks/main.yml collects (__gateway_host_vars): the key only as a boolean.
KEYED = {"ansible_host": "10.0.0.1", "vllm_host": None, "vllm_api_key_set": True,
         "vllm_allow_unauthenticated": False, "vllm_engine_args": {}}
LOOPBACK = {"ansible_host": "127.0.0.1", "vllm_host": "127.0.0.1", "vllm_api_key_set": False,
            "vllm_allow_unauthenticated": False, "vllm_engine_args": {}}
OPTED_OUT = {"ansible_host": "10.0.0.2", "vllm_host": "0.0.0.0", "vllm_api_key_set": False,
             "vllm_allow_unauthenticated": True, "vllm_engine_args": {}}
GENERATED = {"ansible_host": "10.0.0.3", "vllm_host": None, "vllm_api_key_set": False,
             "vllm_allow_unauthenticated": False, "vllm_engine_args": {}}
NO_KEYS = {"gateway_api_keys": [], "gateway_bind_address": "0.0.0.0"}


@pytest.mark.parametrize("backend, source, keyed", [
    (KEYED, "given", True),
    # Off loopback without vllm_api_key the vllm role generates a key on the node: the backend has one.
    (GENERATED, "generate", True),
    (dict(GENERATED, vllm_host="10.0.0.3"), "generate", True),
    (LOOPBACK, "loopback", False),
    (dict(LOOPBACK, vllm_host="localhost"), "loopback", False),
    (dict(LOOPBACK, vllm_host="::1"), "loopback", False),
    # vllm_engine_args' host wins over vllm_host, as in the engine config.
    (dict(GENERATED, vllm_host="0.0.0.0", vllm_engine_args={"host": "127.0.0.1"}), "loopback", False),
    (dict(LOOPBACK, vllm_engine_args={"host": "0.0.0.0"}), "generate", True),
    # ... in every spelling the vllm role reads (engine_args.canonical_name): round 2 of the review slipped
    # {"--host": 127.0.0.1} past the refusal, which read only "host"
    (dict(GENERATED, vllm_engine_args={"--host": "127.0.0.1"}), "loopback", False),
    (dict(GENERATED, vllm_engine_args={"HOST": "127.0.0.1"}), "loopback", False),
    (dict(GENERATED, vllm_engine_args={"Host": "::1"}), "loopback", False),
    (OPTED_OUT, "open", False),
    # Inventory booleans come as strings too.
    (dict(OPTED_OUT, vllm_allow_unauthenticated="yes"), "open", False),
    (dict(OPTED_OUT, vllm_allow_unauthenticated="false"), "generate", True),
    # A key wins over loopback and the opt-out, as in the vllm role.
    (dict(OPTED_OUT, vllm_api_key_set=True), "given", True),
    (dict(LOOPBACK, vllm_api_key_set=True), "given", True),
    (None, "generate", True),
])
def test_backend_key_decision_is_the_vllm_roles(backend, source, keyed):
    decision = backend_key_decision(backend)
    assert (decision["source"], decision["keyed"]) == (source, keyed)


@pytest.mark.parametrize("backends, settings, words", [
    # A keyless gateway on the network in front of a loopback backend (the all-in-one host): refused.
    ({"vllm-a": LOOPBACK}, NO_KEYS,
     "backend vllm-a (vllm_api_key is empty and vllm_host is 127.0.0.1, loopback, where the vllm role sets no key)"),
    ({"vllm-a": KEYED, "vllm-b": dict(LOOPBACK, vllm_host=None, vllm_engine_args={"host": "127.0.0.1"})}, NO_KEYS,
     "backend vllm-b (vllm_api_key is empty and vllm_engine_args.host is 127.0.0.1"),
    # An opted-out backend: refused.
    ({"vllm-a": KEYED, "vllm-b": OPTED_OUT}, NO_KEYS,
     "backend vllm-b (vllm_api_key is empty and vllm_allow_unauthenticated is true on 0.0.0.0)"),
    ({"vllm-a": LOOPBACK, "vllm-b": OPTED_OUT}, {"gateway_bind_address": "::"}, "backends vllm-a ("),
    # Without gateway_bind_address the role's default 0.0.0.0 is assumed.
    ({"vllm-a": LOOPBACK}, {}, "gateway_api_keys is empty, so the gateway on 0.0.0.0 checks no API key"),
    # Keyed backends (given or generated): accepted.
    ({"vllm-a": KEYED, "vllm-b": GENERATED}, NO_KEYS, None),
    # The gateway checks keys: accepted, whatever the backends do.
    ({"vllm-a": LOOPBACK, "vllm-b": OPTED_OUT}, dict(NO_KEYS, gateway_api_keys=["k" * 16]), None),
    # A gateway on loopback only reaches no further than a keyless loopback engine: accepted.
    ({"vllm-a": LOOPBACK, "vllm-b": OPTED_OUT}, dict(NO_KEYS, gateway_bind_address="127.0.0.1"), None),
    ({"vllm-a": LOOPBACK}, dict(NO_KEYS, gateway_bind_address="localhost"), None),
])
def test_keyless_gateway_needs_keyed_backends(backends, settings, words):
    problem = keyless_backend_problem(sorted(backends), backends, settings)
    if words is None:
        assert problem is None
    else:
        assert words in problem
        for fix in ("Set gateway_api_keys", "vllm_api_key", "vllm_host", "vllm_allow_unauthenticated",
                    "gateway_bind_address: 127.0.0.1"):
            assert fix in problem


def test_the_default_bind_is_the_vllm_roles():
    with open(os.path.join(ROOT, "roles", "vllm", "defaults", "main.yml")) as handle:
        assert yaml.safe_load(handle)["vllm_host"] == VLLM_HOST_DEFAULT


def _scenario_backends(scenario, backends, group_files):
    """A Molecule scenario's backends as the gateway role collects them (the demo inventory's all.yml linked)."""
    folder = os.path.join(ROOT, "molecule", scenario)
    values = {}
    for name in ["all"] + group_files:
        with open(os.path.join(folder, "group_vars", name + ".yml")) as handle:
            values.update(yaml.safe_load(handle) or {})
    collected = {}
    for host in backends:
        host_values = dict(values)
        path = os.path.join(folder, "host_vars", host + ".yml")
        if os.path.exists(path):
            with open(path) as handle:
                host_values.update(yaml.safe_load(handle) or {})
        collected[host] = {"vllm_host": host_values.get("vllm_host"),
                           "vllm_allow_unauthenticated": host_values.get("vllm_allow_unauthenticated", False),
                           "vllm_api_key_set": bool(host_values.get("vllm_api_key")),
                           "vllm_engine_args": host_values.get("vllm_engine_args") or {}}
    return collected, values


@pytest.mark.parametrize("scenario, backends, group_files", [
    ("gateway", ["kv-gateway-vllm-a", "kv-gateway-vllm-b"], ["vllm", "gateway"]),
    ("monitoring", ["kv-monitoring-vllm"], ["gateway"]),
])
def test_the_scenarios_pass_the_key_rule(scenario, backends, group_files):
    collected, values = _scenario_backends(scenario, backends, group_files)
    assert all(backend_key_decision(hv)["keyed"] for hv in collected.values())
    assert values["gateway_api_keys"]
    assert keyless_backend_problem(backends, collected, {"gateway_api_keys": values["gateway_api_keys"]}) is None
    # Their backends have keys of their own, so even a keyless gateway would pass.
    assert keyless_backend_problem(backends, collected, NO_KEYS) is None


@pytest.mark.parametrize("key, passed", [
    ("host", True), ("--host", True), ("HOST", True), ("Host", True), ("served_model_name", True),
    ("served-model-name", True), ("servedModelName", True), ("--served-model-name", True),
    # nothing else of a backend's engine arguments reaches the gateway's plan (a key above all)
    ("api_key", False), ("api-key", False), ("hostname", False), ("port", False), ("max_model_len", False),
])
def test_the_role_passes_every_spelling_of_the_options_the_plan_reads(key, passed):
    """roles/gateway/tasks/main.yml keeps the engine arguments whose name matches __gateway_engine_arg_names
    (Jinja's match test: re.match), and the plan canonicalises them."""
    import os
    import re

    import yaml
    from conftest import ROOT
    with open(os.path.join(ROOT, "roles", "gateway", "vars", "main.yml")) as handle:
        pattern = yaml.safe_load(handle)["__gateway_engine_arg_names"]
    assert bool(re.match(pattern, key)) is passed
    if passed:
        from ansible_collections.kunpeng.vllm.plugins.module_utils.plan.gateway import engine_arg
        assert engine_arg({key: "x"}, "host") == "x" or engine_arg({key: "x"}, "served-model-name") == "x"


@pytest.mark.parametrize("backend_vars, keyed_expected, engine_args_expected", [
    ({"vllm_api_key": "demo-key-change-me"}, True, {}),
    # review round 3: a blank key (vllm_api_key: with nothing, or ~) is None, which default('') kept and string
    # turned into "None", a 4-character key
    ({"vllm_api_key": None}, False, {}),
    ({"vllm_api_key": ""}, False, {}),
    ({}, False, {}),
    # ... and a padded spelling of host the vllm role reads (engine_args.canonical_name strips it)
    ({"vllm_engine_args": {"host ": "127.0.0.1", "api_key": "x" * 20}}, False, {"host ": "127.0.0.1"}),
    ({"vllm_engine_args": {" --Host": "127.0.0.1"}}, False, {" --Host": "127.0.0.1"}),
])
def test_the_roles_backend_reading(backend_vars, keyed_expected, engine_args_expected):
    """roles/gateway/tasks/main.yml's reading of a backend's inventory, templated as Ansible templates it."""
    import os

    import yaml
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar
    from conftest import ROOT
    from core_compat import trust_as_template

    with open(os.path.join(ROOT, "roles", "gateway", "tasks", "main.yml")) as handle:
        steps = yaml.safe_load(handle)
    (step,) = [t for t in steps if t.get("name") == "Read the backends' addresses, ports and key settings from the inventory"]
    with open(os.path.join(ROOT, "roles", "gateway", "vars", "main.yml")) as handle:
        role_vars = yaml.safe_load(handle)
    templar = Templar(loader=DataLoader(), variables={
        "hostvars": {"b": backend_vars}, "item": "b",
        "__gateway_engine_arg_names": role_vars["__gateway_engine_arg_names"]})
    read = templar.template(trust_as_template(step["ansible.builtin.set_fact"]["__gateway_host_vars"]))["b"]
    assert read["vllm_api_key_set"] is keyed_expected
    assert read["vllm_engine_args"] == engine_args_expected
    decision = backend_key_decision(dict(read, vllm_host=None))
    assert decision["keyed"] is (keyed_expected or not engine_args_expected)
