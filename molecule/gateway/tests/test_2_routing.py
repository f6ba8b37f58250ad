"""Pool routing and the canary split, proven by each vLLM server's own request counter.

smollm2-a is served by vllm-a only (pool a), smollm2-b by vllm-b only
(pool b); smollm2 by both (pool shared), where vllm-b is the canary with
canary_percent 10.  Each server's vllm:request_success_total (its /metrics,
read directly, not through the gateway) says where the requests went.
"""

import json

import pytest

from conftest import API_KEY, BACKEND_A, BACKEND_B, GATEWAY, figures_file, served
from load import completion, run

testinfra_hosts = [GATEWAY]


@pytest.mark.parametrize("model, target, other", [
    ("smollm2-a", BACKEND_A, BACKEND_B),
    ("smollm2-b", BACKEND_B, BACKEND_A),
])
def test_model_lands_on_its_pool(gw_url, model, target, other):
    before = {b: served(b) for b in (target, other)}
    for attempt in range(10):
        status, body = completion(gw_url, API_KEY, model, max_tokens=1)
        assert status == 200, (attempt, body)
    assert served(target) - before[target] == 10
    assert served(other) - before[other] == 0


def test_canary_gets_ten_percent(gw_url):
    before = {b: served(b) for b in (BACKEND_A, BACKEND_B)}
    records = run(gw_url, API_KEY, "smollm2", count=200, concurrency=4, max_tokens=1)
    assert [r for r in records if r["status"] != 200] == []
    to_a = served(BACKEND_A) - before[BACKEND_A]
    to_b = served(BACKEND_B) - before[BACKEND_B]
    assert to_a + to_b == 200
    share = 100.0 * to_b / 200
    print(f"canary (vllm-b, canary_percent 10): {to_b} of 200 requests = {share:.1f} %")
    with open(figures_file() + ".canary", "w") as f:
        json.dump({"canary_requests": to_b, "stable_requests": to_a, "canary_share_pct": share}, f)
    assert 5.0 <= share <= 15.0
