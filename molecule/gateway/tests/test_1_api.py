"""Through the gateway: the OpenAI API answers, streams, and refuses what it must.

The OpenAI client runs on the controller and reaches the gateway's container
on the scenario's Docker network; the gateway reaches the vLLM servers there.
"""

import json
import re

import openai
import pytest

from conftest import API_KEY, GATEWAY, sh
from load import _OPENER, completion, get

testinfra_hosts = [GATEWAY]


@pytest.fixture(scope="module")
def client(gw_url):
    return openai.OpenAI(base_url=gw_url + "/v1", api_key=API_KEY, timeout=120, max_retries=0)


def test_client_gets_paris(client):
    answer = client.chat.completions.create(
        model="smollm2", messages=[{"role": "user", "content": "What is the capital of France?"}],
        max_tokens=8, temperature=0)
    assert "Paris" in answer.choices[0].message.content


def test_streaming_passes_chunk_by_chunk(client):
    chunks = list(client.chat.completions.create(
        model="smollm2", messages=[{"role": "user", "content": "What is the capital of France?"}],
        max_tokens=8, temperature=0, stream=True))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    # One event per token, not one buffered body.
    assert len(chunks) >= 4
    assert "Paris" in text


def test_stream_is_server_sent_events(gw_url):
    import urllib.request
    body = json.dumps({"model": "smollm2", "prompt": "Hello", "max_tokens": 4, "stream": True}).encode()
    req = urllib.request.Request(gw_url + "/v1/completions", data=body, method="POST", headers={
        "Content-Type": "application/json", "Authorization": f"Bearer {API_KEY}"})
    with _OPENER.open(req, timeout=60) as resp:
        assert resp.headers["Content-Type"].startswith("text/event-stream")
        assert resp.read().decode().rstrip().endswith("data: [DONE]")


@pytest.mark.parametrize("key", ["", "wrong-key-0123456789"])
def test_request_without_the_key_is_refused_at_the_gateway(gw_url, key):
    status, body = completion(gw_url, key, "smollm2")
    assert status == 401
    assert json.loads(body)["error"]["code"] == "invalid_api_key"


def test_client_without_key_gets_authentication_error(gw_url):
    bad = openai.OpenAI(base_url=gw_url + "/v1", api_key="not-the-key-0123456789", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        bad.models.list()


def test_unknown_model_gets_model_not_found(gw_url):
    status, body = completion(gw_url, API_KEY, "gpt-unknown")
    assert status == 404
    err = json.loads(body)["error"]
    assert err["code"] == "model_not_found" and "gpt-unknown" in err["message"]


@pytest.mark.parametrize("path", ["/metrics", "/health", "/version", "/"])
def test_only_the_api_is_exposed(gw_url, path):
    status, dummy = get(gw_url + path, {"Authorization": f"Bearer {API_KEY}"})
    assert status == 404


def test_models_list_passes(client):
    assert "smollm2" in [m.id for m in client.models.list()]


def test_key_file_and_config(host):
    keys = host.file("/etc/haproxy/gateway-keys.lst")
    assert (keys.user, keys.group, keys.mode) == ("root", "haproxy", 0o640)
    cfg = host.file("/etc/haproxy/haproxy.cfg")
    assert cfg.mode == 0o640
    assert API_KEY not in cfg.content_string
    assert "retry-on conn-failure" in cfg.content_string


def test_runtime_socket_is_local_and_private(host):
    sock = host.file("/run/haproxy/admin.sock")
    assert sock.is_socket and sock.user == "haproxy" and sock.mode == 0o600
    # The only TCP listeners are the API port and the Prometheus exporter
    # (gateway_metrics_port 8405, group_vars/gateway.yml), no stats page;
    # 127.0.0.11 is Docker's own resolver in the container.
    listeners = [ln.split()[3] for ln in host.check_output("ss -Hltn").splitlines()]
    assert sorted(a for a in listeners if not a.startswith("127.0.0.11:")) == ["0.0.0.0:8080", "0.0.0.0:8405"]


def test_haproxy_runs_unprivileged_and_hardened(host):
    main_pid = host.check_output("systemctl show -p MainPID --value haproxy.service")
    assert host.check_output(f"ps -o user= -p {main_pid}").strip() == "haproxy"
    out = sh(GATEWAY, "systemd-analyze", "security", "haproxy.service", check=False).stdout
    score = float(re.search(r"Overall exposure level for haproxy\.service: ([0-9.]+)", out).group(1))
    print(f"systemd-analyze security haproxy.service: {score}")
    assert score <= 1.5
