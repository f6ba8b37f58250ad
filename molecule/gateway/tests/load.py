"""Bounded request load through the gateway, and the figures of a run.

Each request is a tiny greedy completion (``max_tokens`` 4 by default), so
two CPU servers keep up.  Workers send one request after another; the run
ends after ``--count`` requests, or when ``--stop-file`` appears, or after
``--max-seconds``, whichever comes first.  The result is a JSON list of
``{start, end, status, error}`` (epoch seconds), written to ``--out``.

  python load.py --container kv-gateway-gw --key KEY --model smollm2 --count 60 --out steady.json
"""

import argparse
import json
import os
import subprocess
import threading
import time
import urllib.error
import urllib.request

# Direct connections only: every address is inside the test network.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def container_url(name, port):
    """http://<address of container ``name`` on its Docker network>:<port>."""
    ip = subprocess.run(
        ["docker", "inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}", name],
        check=True, capture_output=True, text=True,
    ).stdout.strip()
    if not ip:
        raise RuntimeError(f"no IP address for container {name}")
    return f"http://{ip}:{port}"


def completion(url, key, model, max_tokens=4, timeout=120, prompt="The capital of France is"):
    """POST one completion through the gateway; (status, body text), status 0 when nothing answered."""
    body = json.dumps({"model": model, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0}).encode()
    headers = {"Content-Type": "application/json"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    req = urllib.request.Request(url.rstrip("/") + "/v1/completions", data=body, headers=headers, method="POST")
    try:
        with _OPENER.open(req, timeout=timeout) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()
    except OSError as exc:
        return 0, str(exc)


def get(url, headers=None, timeout=30):
    """GET url; (status, body text), status 0 when nothing answered."""
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with _OPENER.open(req, timeout=timeout) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()
    except OSError as exc:
        return 0, str(exc)


def run(url, key, model, count, concurrency=4, max_tokens=4, stop_file=None, max_seconds=600.0, pause=0.0):
    """Send up to ``count`` requests from ``concurrency`` workers; return the records in start order."""
    records, lock = [], threading.Lock()
    issued = [0]
    deadline = time.time() + max_seconds

    def worker():
        while True:
            with lock:
                if issued[0] >= count or time.time() > deadline or (stop_file and os.path.exists(stop_file)):
                    return
                issued[0] += 1
            start = time.time()
            status, text = completion(url, key, model, max_tokens)
            rec = {"start": start, "end": time.time(), "status": status,
                   "error": None if status == 200 else text[:300]}
            with lock:
                records.append(rec)
            if pause:
                time.sleep(pause)

    threads = [threading.Thread(target=worker) for i in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sorted(records, key=lambda r: r["start"])


def percentile(values, pct):
    """Nearest-rank percentile of ``values`` (pct in 0..100)."""
    ordered = sorted(values)
    if not ordered:
        return None
    rank = max(1, -(-len(ordered) * pct // 100))
    return ordered[int(rank) - 1]


def figures(records):
    """count, failed, p50 and p99 latency (ms) of a run."""
    lat = [1000.0 * (r["end"] - r["start"]) for r in records if r["status"] == 200]
    return {
        "count": len(records),
        "failed": sum(1 for r in records if r["status"] != 200),
        "p50_ms": round(percentile(lat, 50), 1) if lat else None,
        "p99_ms": round(percentile(lat, 99), 1) if lat else None,
        "seconds": round(records[-1]["end"] - records[0]["start"], 1) if records else 0.0,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--container", required=True, help="the gateway's container")
    ap.add_argument("--port", type=int, default=8080)
    ap.add_argument("--key", default="")
    ap.add_argument("--model", required=True)
    ap.add_argument("--count", type=int, default=300)
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--max-tokens", type=int, default=4)
    ap.add_argument("--stop-file")
    ap.add_argument("--max-seconds", type=float, default=600.0)
    ap.add_argument("--pause", type=float, default=0.0)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    records = run(container_url(a.container, a.port), a.key, a.model, a.count, a.concurrency, a.max_tokens, a.stop_file, a.max_seconds, a.pause)
    with open(a.out, "w") as f:
        json.dump(records, f)
    print(json.dumps(figures(records)))


if __name__ == "__main__":
    main()
