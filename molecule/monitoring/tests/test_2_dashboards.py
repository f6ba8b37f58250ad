"""Every dashboard panel's query returns data from this Prometheus after real requests."""

import json
import math
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from conftest import API_KEY, MODEL, PROM, SCRAPE_S, VLLM, http, ip, panels, query, wait_for

PROMPTS = ["What is the capital of France?", "Name a colour.", "Count to three.", "Say hello.",
           "What is 2 + 2?", "Name a fruit.", "What day follows Monday?", "Name an ocean."]


@pytest.fixture(scope="module", autouse=True)
def traffic():
    """Eight real chat completions, four at a time, then two scrapes so Prometheus has them."""
    url = f"http://{ip(VLLM)}:8000/v1/chat/completions"

    def ask(prompt):
        return http(url, {"model": MODEL, "max_tokens": 16, "temperature": 0,
                          "messages": [{"role": "user", "content": prompt}]},
                    {"Authorization": f"Bearer {API_KEY}"}, timeout=120)
    with ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(ask, PROMPTS))
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
