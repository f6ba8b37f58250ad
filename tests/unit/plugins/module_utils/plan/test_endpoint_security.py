"""Which API key a vLLM instance requires, and whether its unit gets PrivateUsers (module_utils/endpoint_security.py)."""

import pytest

from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import endpoint_security as es

KEY_FILE = "/etc/vllm/smollm2.api-key"


@pytest.mark.parametrize("host, loopback", [
    ("127.0.0.1", True), ("127.0.1.1", True), ("::1", True), ("[::1]", True), ("localhost", True), ("LOCALHOST", True),
    ("0.0.0.0", False), ("::", False), ("10.0.0.5", False), ("fe80::1", False), ("node1.example.org", False),
    ("", False),
])
def test_is_loopback(host, loopback):
    assert es.is_loopback(host) is loopback


@pytest.mark.parametrize("given, host, allow_open, stored, source, key", [
    # The user's key always wins, on loopback too, and is never echoed back.
    (True, "0.0.0.0", False, None, es.GIVEN, ""),
    (True, "127.0.0.1", True, "old\n", es.GIVEN, ""),
    # No key on loopback: only this node can connect.
    (False, "127.0.0.1", False, None, es.LOOPBACK, ""),
    (False, "::1", False, "old\n", es.LOOPBACK, ""),
    # The default (0.0.0.0, no key): generated once, then reused.
    (False, "0.0.0.0", False, None, es.GENERATE, ""),
    (False, "0.0.0.0", False, "", es.GENERATE, ""),
    (False, "0.0.0.0", False, "  \n", es.GENERATE, ""),
    (False, "0.0.0.0", False, "s3cret\n", es.STORED, "s3cret"),
    (False, "10.1.2.3", False, "s3cret", es.STORED, "s3cret"),
    # Only the explicit opt-out serves an open endpoint on the network.
    (False, "0.0.0.0", True, None, es.OPEN, ""),
    (False, "0.0.0.0", True, "s3cret", es.OPEN, ""),
])
def test_api_key_decision(given, host, allow_open, stored, source, key):
    decision = es.api_key_decision(given, host, allow_open, KEY_FILE, stored)
    assert (decision["source"], decision["key"]) == (source, key)
    assert "s3cret" not in decision["message"]


@pytest.mark.parametrize("source, stored, words", [
    (es.GENERATE, None, ["generated", KEY_FILE, "root only", "0.0.0.0"]),
    (es.STORED, "k", ["generated on this node earlier", KEY_FILE]),
    (es.OPEN, None, ["vllm_allow_unauthenticated is true", "anyone"]),
])
def test_the_message_says_where_the_key_is(source, stored, words):
    decision = es.api_key_decision(False, "0.0.0.0", source == es.OPEN, KEY_FILE, stored)
    assert decision["source"] == source
    for word in words:
        assert word in decision["message"]


@pytest.mark.parametrize("wanted, vtype, vrole, enabled", [
    (True, "docker", "guest", True),
    (False, "kvm", "host", False),
    ("auto", "docker", "guest", False),
    ("auto", "podman", "guest", False),
    ("auto", "lxc", "guest", False),
    ("auto", "kvm", "guest", True),
    ("auto", "kvm", "host", True),
    ("auto", "", "", True),
    ("auto", "NA", "NA", True),
])
def test_private_users(wanted, vtype, vrole, enabled):
    assert es.private_users(wanted, vtype, vrole)["enabled"] is enabled


@pytest.mark.parametrize("source, existed, before, after", [
    (es.GENERATE, False, {"state": "absent"},
     {"state": "file", "mode": "0600", "content": "a new random key (not shown)"}),
    (es.GENERATE, True, {"state": "file"},
     {"state": "file", "mode": "0600", "content": "a new random key (not shown)"}),
    (es.STORED, True, {}, {}),
    (es.GIVEN, False, {}, {}),
    (es.LOOPBACK, False, {}, {}),
    (es.OPEN, False, {}, {}),
])
def test_key_file_diff(source, existed, before, after):
    assert es.key_file_diff(source, "/etc/vllm/k", existed) == {
        "before": dict({"path": "/etc/vllm/k"}, **before), "after": dict({"path": "/etc/vllm/k"}, **after)}


CONFIG = {"host": "0.0.0.0", "port": 8000, "served-model-name": "smollm2"}


@pytest.mark.parametrize("source, extra, sources, enabled, environment", [
    # Every instance with a key gets the guard: vLLM's own check leaves /invocations, /tokenize, ... open.
    (es.GIVEN, {}, [], True, {"KUNPENG_VLLM_METRICS_SOURCES": ""}),
    (es.STORED, {}, ["kv-monitoring-prom"], True, {"KUNPENG_VLLM_METRICS_SOURCES": "kv-monitoring-prom"}),
    (es.GENERATE, {}, ["10.0.0.5", "10.1.0.0/16", "fd00::7"], True,
     {"KUNPENG_VLLM_METRICS_SOURCES": "10.0.0.5,10.1.0.0/16,fd00::7"}),
    # The guard named already (a re-run on the config it returned) stays one entry.
    (es.GIVEN, {"middleware": es.ROUTE_GUARD}, [], True, {"KUNPENG_VLLM_METRICS_SOURCES": ""}),
    (es.GIVEN, {"middleware": [es.ROUTE_GUARD]}, [], True, {"KUNPENG_VLLM_METRICS_SOURCES": ""}),
    # No key: loopback only, or the explicit opt-out; the user's middleware stays.
    (es.LOOPBACK, {}, ["10.0.0.5"], False, {}),
    (es.OPEN, {"middleware": "my.Middleware"}, [], False, {}),
])
def test_route_guard(source, extra, sources, enabled, environment):
    result = es.route_guard(source, dict(CONFIG, **extra), sources)
    assert result["enabled"] is enabled
    assert result["environment"] == environment
    expected = dict(CONFIG, **extra)
    if enabled:
        expected["middleware"] = "kunpeng_vllm_route_guard.RouteGuard"
    assert result["engine_config"] == expected


@pytest.mark.parametrize("source, extra, sources, words", [
    # vLLM reads a config-file list as one option and bare words: a second middleware cannot be carried.
    (es.GIVEN, {"middleware": "my.Middleware"}, [], "single middleware slot"),
    (es.GENERATE, {"middleware": ["my.Middleware", es.ROUTE_GUARD]}, [], "single middleware slot"),
    # A source goes into the environment file: no quote, space or line break.
    (es.STORED, {}, ["10.0.0.5'\nLD_PRELOAD=/x"], "vllm_metrics_sources"),
    (es.STORED, {}, ["a b"], "vllm_metrics_sources"),
])
def test_route_guard_refuses(source, extra, sources, words):
    with pytest.raises(es.EndpointError, match=words):
        es.route_guard(source, dict(CONFIG, **extra), sources)


@pytest.mark.parametrize("config, refused", [
    ({"grpc": True}, True),
    ({"--grpc": True}, True),
    ({"GRPC": "true"}, True),
    ({"grpc_port": 50051}, True),
    ({"grpc": False}, False),
    ({"port": 8000}, False),
])
def test_a_grpc_listener_the_key_does_not_guard_is_refused(config, refused):
    """Review round 2: vllm serve --grpc serves gRPC instead of the HTTP API, with an insecure port and no API-key
    check (vLLM's serve docs; vllm/entrypoints/cli/serve.py serve_grpc): the route guard never sees it."""
    engine_config = dict({"host": "0.0.0.0", "port": 8000}, **config)
    if refused:
        with pytest.raises(es.EndpointError, match="no API-key check"):
            es.route_guard(es.GIVEN, engine_config, [])
    else:
        assert es.route_guard(es.GIVEN, engine_config, [])["enabled"]
    # without a key (loopback, or the explicit opt-out) there is nothing to guard: its own decision
    assert not es.route_guard(es.LOOPBACK, engine_config, [])["enabled"]


@pytest.mark.parametrize("config, refused", [
    # review round 3: vLLM publishes every cached block's token ids on tcp://*:5557 by default, without a key
    ({"kv-events-config": {"enable_kv_cache_events": True, "publisher": "zmq"}}, True),
    ({"kv_events_config": '{"enable_kv_cache_events": true, "endpoint": "tcp://0.0.0.0:5557"}'}, True),
    ({"kvEventsConfig": {"endpoint": "tcp://127.0.0.1:5557", "replay_endpoint": "tcp://*:5558"}}, True),
    ({"kv-events-config": {"endpoint": "tcp://127.0.0.1:5557"}}, False),
    ({"kv-events-config": {"endpoint": "ipc:///run/vllm/kv-events"}}, False),
    # a camelCase gRPC port (the export checks the config before it is normalised too)
    ({"grpcPort": 50051}, True),
])
def test_listeners_the_key_does_not_guard_are_refused(config, refused):
    engine_config = dict({"host": "0.0.0.0", "port": 8000}, **config)
    if refused:
        with pytest.raises(es.EndpointError, match="no API-key check|no authentication"):
            es.route_guard(es.GIVEN, engine_config, [])
    else:
        assert es.route_guard(es.GIVEN, engine_config, [])["enabled"]


@pytest.mark.parametrize("source", [es.LOOPBACK, es.OPEN])
def test_a_keyless_instance_does_not_publish_prompts_beyond_the_host(source):
    """Review round 5: the kv-events check ran for keyed instances only; a loopback instance published on tcp://*."""
    config = {"host": "127.0.0.1", "port": 8000, "kv_events_config": {"enable_kv_cache_events": True, "publisher": "zmq"}}
    with pytest.raises(es.EndpointError, match="no authentication"):
        es.route_guard(source, config, [])
    local = dict(config, kv_events_config={"enable_kv_cache_events": True, "endpoint": "ipc:///run/vllm/kv"})
    assert not es.route_guard(source, local, [])["enabled"]
    # gRPC on a keyless loopback instance is that instance's own decision (bound to loopback)
    assert not es.route_guard(es.LOOPBACK, {"host": "127.0.0.1", "grpc": True}, [])["enabled"]
