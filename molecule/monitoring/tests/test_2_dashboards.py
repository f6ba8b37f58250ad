"""Every dashboard panel's query returns data from this Prometheus after real requests, to vLLM and through the
gateway, and the Gateway dashboard's per-pool series show where the gateway sent each request."""

import json
import math
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from conftest import API_KEY, GATEWAY_PORT, MODEL, PROM, SCRAPE_S, VLLM, http, ip, panels, query, wait_for

PROMPTS = ["What is the capital of France?", "Name a colour.", "Count to three.", "Say hello.",
           "What is 2 + 2?", "Name a fruit.", "What day follows Monday?", "Name an ocean."]


# Through the gateway: SHORT requests estimate under the default threshold of 512 tokens (body bytes / 4 plus
# max_tokens: some 40 + 16), so they go to pool_cpu; LONG ones ask for 600 tokens, so they go to pool_accelerator.
SHORT, LONG = PROMPTS[:4], PROMPTS[4:6]


def _ask(base, prompt, max_tokens=16):
    return http(f"{base}/v1/chat/completions", {"model": MODEL, "max_tokens": max_tokens, "temperature": 0,
                                                "messages": [{"role": "user", "content": prompt}]},
                {"Authorization": f"Bearer {API_KEY}"}, timeout=180)


@pytest.fixture(scope="module", autouse=True)
def traffic():
    """Eight real chat completions to vLLM, four at a time; four short and two long ones through the gateway; then
    two scrapes so Prometheus has them."""
    engine, gateway = f"http://{ip(VLLM)}:8000", f"http://{ip(PROM)}:{GATEWAY_PORT}"
    with ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(lambda prompt: _ask(engine, prompt), PROMPTS))
        answers += list(pool.map(lambda prompt: _ask(gateway, prompt), SHORT))
        answers += list(pool.map(lambda prompt: _ask(gateway, prompt, max_tokens=600), LONG))
    assert all(status == 200 for status, _text in answers), answers
    assert all(json.loads(text)["usage"]["completion_tokens"] > 1 for _status, text in answers), answers
    time.sleep(2 * SCRAPE_S + 1)


def finite(result):
    return [r for r in result if not math.isnan(float(r["value"][1])) and not math.isinf(float(r["value"][1]))]


@pytest.mark.parametrize("dashboard, title, expr", panels(), ids=[f"{d}:{t}:{i}" for i, (d, t, _e) in enumerate(panels())])
def test_panel_query_returns_data(dashboard, title, expr):
    result, _waited = wait_for(lambda: finite(query(expr)), 15, step=1)
    assert result, f"{dashboard} / {title}: no data for {expr}: {query(expr)}"


def test_accelerator_panels_see_both_vendors():
    """The collector's doubles: 8 Ascend chips on the vLLM host, the H200 capture on the Prometheus host."""
    # Only the series of this collection's scrape jobs (they carry `node`):
    # Debian's prometheus package first runs with its own config, which
    # scrapes localhost:9100 too, and those series stay queryable for the
    # 5-minute lookback after the restart with ours.
    devices = [(r["metric"]["node"], r["metric"]["vendor"], float(r["value"][1]))
               for r in query('kunpeng_accelerator_devices{node!=""}')]
    assert sorted(devices) == [(PROM, "nvidia", 1.0), (VLLM, "ascend", 8.0)]
    total = query('kunpeng_accelerator_memory_total_bytes{vendor="nvidia", node!=""}')
    assert [float(r["value"][1]) for r in total] == [143771 * 1024 * 1024]


def test_gateway_series_show_the_dispatch_decisions():
    """The Gateway dashboard's per-pool counters, as Prometheus scraped them from HAProxy's exporter: the short
    requests went to the cpu pool, the long ones to the accelerator pool, each answered 2xx."""
    def counts(metric, extra=""):
        found = query(f'sum by (proxy) ({metric}{{job="gateway", proxy=~"pool_.+"{extra}}})')
        return {r["metric"]["proxy"]: int(float(r["value"][1])) for r in found}
    expected = {"pool_cpu": len(SHORT), "pool_accelerator": len(LONG)}
    requests, _waited = wait_for(lambda: counts("haproxy_backend_http_requests_total") == expected, 15, step=1)
    assert requests, counts("haproxy_backend_http_requests_total")
    assert counts("haproxy_backend_http_responses_total", ', code="2xx"') == expected
