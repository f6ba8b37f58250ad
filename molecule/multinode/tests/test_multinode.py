"""One model served by two hosts: vLLM's native data parallelism across the members of kv_cluster.

Tests run in file order; the kill test is last because it restarts the members.
"""

import json
import re
import time
import urllib.error
import urllib.request

from conftest import API_KEY, HEAD, MODEL, UNIT, WORKER, address


def _request(url, body=None, timeout=60):
    """(status, text) of a GET (or a POST of ``body``); (0, reason) when nothing answers."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, headers={"Authorization": f"Bearer {API_KEY}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()
    except OSError as exc:
        return 0, str(exc)


def _complete(base_url, prompt="The capital of France is", max_tokens=4):
    return _request(base_url + "/v1/completions", {"model": MODEL, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0})


def _served_by_engine(base_url):
    """engine label -> requests finished, from the head's /metrics."""
    status, text = _request(base_url + "/metrics")
    assert status == 200, text[:300]
    served = {}
    for line in text.splitlines():
        if line.startswith("vllm:request_success_total{"):
            engine = re.search(r'engine="(\d+)"', line).group(1)
            served[engine] = served.get(engine, 0) + float(line.rsplit(" ", 1)[1])
    return served


def test_head_runs_the_api_and_the_worker_runs_headless(head, worker):
    for member in (head, worker):
        assert member.service(UNIT).is_running and member.service(UNIT).is_enabled
    head_config = head.file(f"/etc/vllm/{MODEL}.yaml").content_string
    worker_config = worker.file(f"/etc/vllm/{MODEL}.yaml").content_string
    assert "data-parallel-size: 2" in head_config and "data-parallel-size-local: 1" in head_config
    assert f"data-parallel-address: {address(HEAD)}" in head_config and "headless" not in head_config
    assert "headless: true" in worker_config and "data-parallel-start-rank: 1" in worker_config
    assert f"data-parallel-address: {address(HEAD)}" in worker_config


def test_each_member_announces_its_own_address(head, worker):
    for member, name in ((head, HEAD), (worker, WORKER)):
        env = member.check_output(f"cat /etc/vllm/{MODEL}.env")
        assert f"VLLM_HOST_IP={address(name)}" in env
        assert "GLOO_SOCKET_IFNAME=eth0" in env


def test_both_engines_serve_requests_behind_the_head(base_url):
    before = _served_by_engine(base_url)
    for n in range(8):
        status, text = _complete(base_url, f"Count to {n}:")
        assert status == 200, text[:300]
    after = _served_by_engine(base_url)
    assert sorted(after) == ["0", "1"], after
    for engine in ("0", "1"):
        assert after[engine] > before.get(engine, 0), (before, after)


def test_killed_worker_comes_back_and_the_endpoint_answers_again(head, worker, base_url, record_property):
    restarts = int(worker.check_output(f"systemctl show {UNIT} -p NRestarts --value"))
    started = time.monotonic()
    worker.run_expect([0], f"systemctl kill -s KILL {UNIT}")
    deadline = started + 300
    answered = None
    while time.monotonic() < deadline:
        status, text = _complete(base_url)
        if status == 200 and int(worker.check_output(f"systemctl show {UNIT} -p NRestarts --value")) > restarts:
            answered = time.monotonic() - started
            break
        time.sleep(2)
    assert answered is not None, "the endpoint did not answer within 300 s of the worker's kill"
    record_property("recovery_s", round(answered, 1))
    print(f"endpoint answered again {answered:.1f} s after the worker was killed")
    assert worker.service(UNIT).is_running and head.service(UNIT).is_running
    assert sorted(_served_by_engine(base_url)) == ["0", "1"]
