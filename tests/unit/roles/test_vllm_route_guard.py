"""The route guard the vllm role installs beside the engine (roles/vllm/files/kunpeng_vllm_route_guard.py).

It runs inside vLLM as an ASGI middleware; here it wraps an ASGI app that answers 200 and records what
reached it, and each request is a real ASGI scope as uvicorn builds it.  The last tests serve the guard in an
app built as vLLM builds its server (Starlette routes, the widened /metrics mount, CORS); they are skipped where
starlette is not installed.
"""

import asyncio
import importlib.util
import json
from pathlib import Path

import pytest

GUARD_FILE = Path(__file__).resolve().parents[3] / "roles" / "vllm" / "files" / "kunpeng_vllm_route_guard.py"
KEY = "s3cret-key"


def _load():
    spec = importlib.util.spec_from_file_location("kunpeng_vllm_route_guard", GUARD_FILE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


guard_module = _load()


async def _engine(scope, receive, send):
    """Stands for vLLM's app: 200 on every path."""
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


def _call(guard, path, method="GET", headers=(), client="203.0.113.9", kind="http", root_path=""):
    sent = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    scope = {"type": kind, "path": path, "root_path": root_path, "method": method, "client": (client, 40000),
             "headers": [(name.lower().encode(), value.encode()) for name, value in headers]}
    asyncio.run(guard(scope, receive, send))
    return sent


def _status(sent):
    return sent[0].get("status") if sent[0]["type"] == "http.response.start" else sent[0]["type"]


@pytest.fixture
def guard(monkeypatch):
    monkeypatch.setenv("VLLM_API_KEY", KEY)
    monkeypatch.setenv("KUNPENG_VLLM_METRICS_SOURCES", "10.0.0.7, 192.168.5.0/24,fd00::9,localhost")
    return guard_module.RouteGuard(_engine)


BEARER = ("Authorization", f"Bearer {KEY}")


@pytest.mark.parametrize("method, path, headers, client, status", [
    # Routes vLLM's own check leaves open (issue: keyless POST /invocations served a completion).
    ("POST", "/invocations", (), "203.0.113.9", 401),
    ("POST", "/pooling", (), "203.0.113.9", 401),
    ("POST", "/score", (), "203.0.113.9", 401),
    ("POST", "/rerank", (), "203.0.113.9", 401),
    ("POST", "/tokenize", (), "203.0.113.9", 401),
    ("POST", "/classify", (), "203.0.113.9", 401),
    ("GET", "/openapi.json", (), "203.0.113.9", 401),
    ("GET", "/docs", (), "203.0.113.9", 401),
    ("GET", "/version", (), "203.0.113.9", 401),
    ("POST", "/v1/completions", (), "203.0.113.9", 401),
    # A wrong key, another scheme, an empty bearer, the key as a prefix.
    ("POST", "/invocations", (("Authorization", "Bearer wrong"),), "203.0.113.9", 401),
    ("POST", "/invocations", (("Authorization", f"Basic {KEY}"),), "203.0.113.9", 401),
    ("POST", "/invocations", (("Authorization", "Bearer "),), "203.0.113.9", 401),
    ("POST", "/invocations", (("Authorization", f"Bearer {KEY}x"),), "203.0.113.9", 401),
    ("POST", "/invocations", (("Authorization", KEY),), "203.0.113.9", 401),
    # With the key every route passes; the scheme is case-insensitive (RFC 6750).
    ("POST", "/invocations", (BEARER,), "203.0.113.9", 200),
    ("GET", "/openapi.json", (("authorization", f"bearer {KEY}"),), "203.0.113.9", 200),
    # /health for load balancers and the readiness check; only that exact path.
    ("GET", "/health", (), "203.0.113.9", 200),
    ("GET", "/health/x", (), "203.0.113.9", 401),
    ("GET", "/healthz", (), "203.0.113.9", 401),
    # /metrics: loopback and the listed sources (address, network, IPv6, IPv4-mapped, a resolved name) only.
    ("GET", "/metrics", (), "203.0.113.9", 401),
    ("GET", "/metrics", (), "10.0.0.8", 401),
    ("GET", "/metrics", (), "127.0.0.1", 200),
    ("GET", "/metrics", (), "::1", 200),
    ("GET", "/metrics", (), "10.0.0.7", 200),
    ("GET", "/metrics", (), "::ffff:10.0.0.7", 200),
    ("GET", "/metrics", (), "192.168.5.77", 200),
    ("GET", "/metrics", (), "fd00::9", 200),
    ("GET", "/metrics", (), "not-an-address", 401),
    ("GET", "/metrics", (BEARER,), "203.0.113.9", 200),
    # A CORS preflight is answered by vLLM's CORS middleware without reaching a route; a bare OPTIONS is not.
    ("OPTIONS", "/v1/completions", (("Access-Control-Request-Method", "POST"), ("Origin", "https://x")),
     "203.0.113.9", 200),
    ("OPTIONS", "/invocations", (), "203.0.113.9", 401),
    # Issue 37: a "preflight" without Origin is not one; vLLM's CORS middleware passes it on to the app, where
    # the /metrics mount answered every method keyless.
    ("OPTIONS", "/metrics", (("Access-Control-Request-Method", "GET"),), "203.0.113.9", 401),
    ("OPTIONS", "/invocations", (("Access-Control-Request-Method", "POST"),), "203.0.113.9", 401),
])
def test_every_route_needs_the_key(guard, method, path, headers, client, status):
    sent = _call(guard, path, method, headers, client)
    assert _status(sent) == status
    if status == 401:
        assert json.loads(sent[1]["body"]) == {"error": "Unauthorized"}
        assert (b"www-authenticate", b"Bearer") in sent[0]["headers"]


def test_root_path_is_stripped(guard):
    assert _status(_call(guard, "/api/health", root_path="/api")) == 200
    assert _status(_call(guard, "/api/invocations", "POST", root_path="/api")) == 401


def test_websocket_without_the_key_is_closed(guard):
    assert _call(guard, "/v1/realtime", kind="websocket") == [{"type": "websocket.close", "code": 1008}]
    assert _status(_call(guard, "/v1/realtime", headers=(BEARER,), kind="websocket")) == 200


def test_lifespan_passes(guard):
    seen = []

    async def app(scope, receive, send):
        seen.append(scope["type"])

    asyncio.run(guard_module.RouteGuard(app)({"type": "lifespan"}, None, None))
    assert seen == ["lifespan"]


def test_refuses_to_start_without_a_key(monkeypatch):
    monkeypatch.delenv("VLLM_API_KEY", raising=False)
    with pytest.raises(RuntimeError, match="VLLM_API_KEY is empty"):
        guard_module.RouteGuard(_engine)
    monkeypatch.setenv("VLLM_API_KEY", "")
    with pytest.raises(RuntimeError):
        guard_module.RouteGuard(_engine)


def test_unresolvable_source_is_skipped():
    networks = guard_module.metrics_networks("no-such-host.invalid,10.0.0.0/8")
    assert [str(n) for n in networks] == ["127.0.0.0/8", "::1/128", "10.0.0.0/8"]


@pytest.mark.parametrize("setting, client, status", [
    # The host default (unset): loopback reads /metrics keyless, as the node's own tools do.
    (None, "127.0.0.1", 200),
    ("", "::1", 200),
    ("on", "127.0.0.6", 200),
    # off (the pod's): a sidecar delivers every client from loopback (Istio's passthrough: 127.0.0.6).
    ("off", "127.0.0.6", 401),
    ("off", "127.0.0.1", 401),
    ("OFF", "::1", 401),
    ("off", "::ffff:127.0.0.1", 401),
    # the listed sources still read it keyless
    ("off", "10.0.0.7", 200),
])
def test_loopback_can_be_taken_out_of_the_keyless_sources(monkeypatch, setting, client, status):
    monkeypatch.setenv("VLLM_API_KEY", KEY)
    monkeypatch.setenv("KUNPENG_VLLM_METRICS_SOURCES", "10.0.0.7")
    if setting is None:
        monkeypatch.delenv("KUNPENG_VLLM_METRICS_LOOPBACK", raising=False)
    else:
        monkeypatch.setenv("KUNPENG_VLLM_METRICS_LOOPBACK", setting)
    guard = guard_module.RouteGuard(_engine)
    assert _status(_call(guard, "/metrics", client=client)) == status
    assert _status(_call(guard, "/metrics", headers=(BEARER,), client=client)) == 200


def test_no_keyless_source_at_all(monkeypatch):
    assert guard_module.metrics_networks("", loopback=False) == []


@pytest.mark.parametrize("value", ["no", "0", "false", "loopback"])
def test_an_unknown_loopback_setting_stops_the_engine(monkeypatch, value):
    """Fail closed and loud: a typo must not leave loopback keyless where off was meant."""
    monkeypatch.setenv("VLLM_API_KEY", KEY)
    monkeypatch.setenv("KUNPENG_VLLM_METRICS_LOOPBACK", value)
    with pytest.raises(RuntimeError, match="KUNPENG_VLLM_METRICS_LOOPBACK"):
        guard_module.RouteGuard(_engine)


# --- the guard in an app built as vLLM builds its server (review: scopes alone miss what the app does with them) ---

def _vllm_like_app(monkeypatch, loopback=None):
    """vLLM's build_app (vllm/entrypoints/openai/api_server.py) in small: routes, /metrics as a Mount whose regex
    vLLM widens to ``^/metrics(?P<path>.*)$`` (so /metrics/ and /metricsX reach it, every method), CORS with every
    origin, and the --middleware class added last, so outermost."""
    pytest.importorskip("starlette", reason="starlette (vLLM's web framework) is not installed in this venv")
    import re

    from starlette.applications import Starlette
    from starlette.middleware.cors import CORSMiddleware
    from starlette.responses import JSONResponse, PlainTextResponse
    from starlette.routing import Mount, Route

    async def metrics(scope, receive, send):
        await PlainTextResponse("vllm:num_requests_running 1\n")(scope, receive, send)

    async def health(request):
        return JSONResponse({})

    async def invocations(request):
        return JSONResponse({"choices": [{"text": "COMPLETION"}]})

    mount = Mount("/metrics", app=metrics)
    mount.path_regex = re.compile("^/metrics(?P<path>.*)$")
    app = Starlette(routes=[Route("/health", health), Route("/invocations", invocations, methods=["POST"]), mount])
    app.add_middleware(CORSMiddleware, allow_origins=["*"], allow_credentials=False, allow_methods=["*"],
                       allow_headers=["*"])
    monkeypatch.setenv("VLLM_API_KEY", KEY)
    monkeypatch.setenv("KUNPENG_VLLM_METRICS_SOURCES", "")
    if loopback is None:
        monkeypatch.delenv("KUNPENG_VLLM_METRICS_LOOPBACK", raising=False)
    else:
        monkeypatch.setenv("KUNPENG_VLLM_METRICS_LOOPBACK", loopback)
    app.add_middleware(guard_module.RouteGuard)
    return app


def _serve(app, method, path, headers=(), client="203.0.113.9"):
    """One HTTP request through the whole app, as uvicorn hands it over; (status, body)."""
    sent = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    raw_path = path.encode()
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method, "scheme": "http",
             "path": path, "raw_path": raw_path, "query_string": b"", "root_path": "", "client": (client, 40000),
             "server": ("10.244.1.7", 8000),
             "headers": [(b"host", b"vllm:8000")] + [(k.lower().encode(), v.encode()) for k, v in headers]}
    asyncio.run(app(scope, receive, send))
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return sent[0]["status"], body


PREFLIGHT = (("Origin", "https://x.example"), ("Access-Control-Request-Method", "GET"))


@pytest.mark.parametrize("loopback, method, path, headers, client, status", [
    # keyless, from elsewhere: every route but /health refused, the widened mount's paths included
    (None, "POST", "/invocations", (), "203.0.113.9", 401),
    (None, "GET", "/metrics", (), "203.0.113.9", 401),
    (None, "GET", "/metrics/", (), "203.0.113.9", 401),
    (None, "GET", "/metricsX", (), "203.0.113.9", 401),
    (None, "DELETE", "/metrics", (), "203.0.113.9", 401),
    (None, "GET", "/health", (), "203.0.113.9", 200),
    # a "preflight" without Origin: CORS passes it on and the mount would answer it with the metrics
    (None, "OPTIONS", "/metrics", (("Access-Control-Request-Method", "GET"),), "203.0.113.9", 401),
    # a real preflight: CORS answers it itself, without the metrics
    (None, "OPTIONS", "/metrics", PREFLIGHT, "203.0.113.9", 200),
    # with the key
    (None, "POST", "/invocations", (BEARER,), "203.0.113.9", 200),
    (None, "GET", "/metrics", (BEARER,), "203.0.113.9", 200),
    # the host default: loopback reads /metrics keyless; off (the pod): a sidecar's loopback connection does not
    (None, "GET", "/metrics", (), "127.0.0.1", 200),
    ("off", "GET", "/metrics", (), "127.0.0.6", 401),
    ("off", "OPTIONS", "/metrics", (("Access-Control-Request-Method", "GET"),), "127.0.0.6", 401),
    ("off", "GET", "/metrics", (BEARER,), "127.0.0.6", 200),
])
def test_the_guard_in_a_vllm_like_app(monkeypatch, loopback, method, path, headers, client, status):
    app = _vllm_like_app(monkeypatch, loopback)
    got, body = _serve(app, method, path, headers, client)
    assert got == status
    if status == 401:
        assert json.loads(body) == {"error": "Unauthorized"}
    if (method, status) == ("OPTIONS", 200):
        assert b"vllm:" not in body  # CORS answered, not the mount
