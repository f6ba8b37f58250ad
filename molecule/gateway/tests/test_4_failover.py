"""Failover: a server's unit stops under load; the health check takes it out and requests go on.

Runs last: it stops vllm-a's unit (the stable server of the shared pool,
90 % of smollm2's requests) and does not start it again.  Measured: the
requests that failed, and the time from the stop to the gateway's log line
that marks the server DOWN (health checks every 2 s, 2 failures).  New
requests after detection never fail: a refused connection is retried on vllm-b.
"""

import json
import threading
import time

from conftest import API_KEY, BACKEND_A, BACKEND_B, GATEWAY, UNIT, answered, figures_file, haproxy_stats, sh, wait_idle
from load import completion, run

testinfra_hosts = [GATEWAY]

DOWN_LINE = "Server pool_shared/kv-gateway-vllm-a is DOWN"


def _down_at():
    """Epoch seconds of the gateway's DOWN line for vllm-a, or None."""
    out = sh(GATEWAY, "journalctl", "-u", "haproxy.service", "-o", "short-unix", "--no-pager",
             "-g", DOWN_LINE, check=False).stdout
    lines = [ln for ln in out.splitlines() if DOWN_LINE in ln]
    return float(lines[-1].split()[0]) if lines else None


def test_stopped_server_is_taken_out_and_requests_keep_succeeding(gw_url):
    assert _down_at() is None
    result = {}
    load = threading.Thread(target=lambda: result.update(records=run(
        gw_url, API_KEY, "smollm2", count=80, concurrency=2, max_tokens=4)))
    load.start()
    time.sleep(3)
    stopped = time.time()
    sh(BACKEND_A, "systemctl", "stop", "--no-block", UNIT)
    down = None
    deadline = time.time() + 30
    while time.time() < deadline:
        down = _down_at()
        if down:
            break
        time.sleep(0.5)
    load.join(timeout=300)
    records = result["records"]
    failed = [r for r in records if r["status"] != 200]
    after_down = [r for r in records if down and r["start"] > down]
    figures = {"requests": len(records), "failed": len(failed),
               "detection_s": round(down - stopped, 1) if down else None,
               "requests_after_detection": len(after_down)}
    print(json.dumps(figures))
    with open(figures_file() + ".failover", "w") as f:
        json.dump(figures, f)
    assert down is not None, "the gateway never marked vllm-a DOWN"
    assert down - stopped < 15
    assert after_down and all(r["status"] == 200 for r in after_down)
    # Only requests that reached vllm-a before the gateway marked it DOWN may
    # fail (in flight when the unit stopped, or sent to it while it shut
    # down): they reached a backend, so the gateway does not send them again
    # (retry-on conn-failure only).  Every request after detection succeeded.
    assert all(r["start"] < down for r in failed), failed[:3]


def _short_requests(gw_url, count):
    """count short smollm2-hybrid requests, each sent when the CPU pool holds none; the statuses that were not 200.

    The dispatch rule sends a short request to the CPU pool only while it holds fewer than ceil(0.7 x maxconn 1)
    = 1 request: a request sent while HAProxy still counts the previous one's closing session would spill to the
    accelerator pool, which is the rule working, not the standby failing.
    """
    statuses = []
    for _i in range(count):
        wait_idle("pool_cpu")
        statuses.append(completion(gw_url, API_KEY, "smollm2-hybrid", max_tokens=4)[0])
    return [s for s in statuses if s != 200]


def test_cpu_pool_fails_over_to_its_standby_and_back(gw_url):
    """Pool cpu (vllm-a) has pool x86 (vllm-b) as its standby: HAProxy backup servers of pool_cpu."""
    primary, standby = ("pool_cpu", BACKEND_A), ("pool_cpu", BACKEND_B)
    # vllm-a is down since the test above: the standby serves the CPU pool.
    before = haproxy_stats()
    assert _short_requests(gw_url, 4) == []
    after = haproxy_stats()
    assert answered(after, *standby) - answered(before, *standby) == 4
    # Back: once vllm-a passes its health checks again, the pool's traffic returns to it.
    sh(BACKEND_A, "systemctl", "start", UNIT)
    deadline = time.time() + 300
    while haproxy_stats()[primary]["status"] != "UP":
        assert time.time() < deadline, "vllm-a never came back UP in pool_cpu"
        time.sleep(2)
    before = haproxy_stats()
    assert _short_requests(gw_url, 3) == []
    after = haproxy_stats()
    assert answered(after, *primary) - answered(before, *primary) == 3
    assert answered(after, *standby) - answered(before, *standby) == 0
    # Over again with no time for the health checks: the first refused
    # connection marks vllm-a down, its retry goes to the standby.
    sh(BACKEND_A, "systemctl", "stop", UNIT)
    before = haproxy_stats()
    assert _short_requests(gw_url, 6) == []
    after = haproxy_stats()
    assert answered(after, *standby) - answered(before, *standby) == 6
