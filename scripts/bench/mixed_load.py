"""A mixed chat workload through the gateway, hybrid dispatch against round-robin.

One workload (``--short`` chat turns of ``--short-tokens`` tokens and
``--long`` generations of ``--long-tokens`` tokens, shuffled with ``--seed``)
is sent ``--rounds`` times to each arm, ``--concurrency`` at a time.  An arm
is a model name on the same gateway port: ``smollm2-hybrid`` goes through the
hybrid dispatch (cpu and accelerator pools), ``smollm2`` through a plain pool
of the same two servers, which HAProxy balances round-robin.  The arms take
turns, A B B A ..., so drift on the shared machine hits both.  Every request
asks for exactly its token count (``ignore_eos``) and starts with a tag of
fixed length (round, arm, index), so no arm reuses the other's prefix cache.

Per pass it appends one JSON line to ``--results`` (the scripts/bench format:
bench_id, row, path, run, seconds) with the latencies of each class, the
output tokens and HAProxy's 2xx answers per server during the pass (from its
runtime socket); scripts/bench/summarize.py pools the passes of each arm.
Only for the gateway scenario's own containers.
"""

import argparse
import concurrent.futures
import json
import random
import subprocess
import time
import urllib.error
import urllib.request

# Direct connections only: every address is inside the test network.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))
ARMS = {"hybrid": "smollm2-hybrid", "round-robin": "smollm2"}
_SHOW_STAT = ("import socket; s = socket.socket(socket.AF_UNIX); s.connect('/run/haproxy/admin.sock'); "
              "s.sendall(b'show stat\\n'); print(b''.join(iter(lambda: s.recv(65536), b'')).decode())")
SHORT_TURNS = [
    "What is the capital of France?",
    "Name a primary colour.",
    "How many days are in a week?",
    "Say hello in Spanish.",
    "What is two plus two?",
    "Which planet is closest to the Sun?",
]
LONG_ASKS = [
    "Write a long story about a lighthouse keeper.",
    "Write a long story about a train crossing a desert.",
    "Write a long story about a city under the sea.",
]


def container_ip(name):
    ip = subprocess.run(
        ["docker", "inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}", name],
        check=True, capture_output=True, text=True,
    ).stdout.strip()
    if not ip:
        raise RuntimeError(f"no IP address for container {name}")
    return ip


def haproxy_2xx(gateway):
    """2xx answers per 'backend/server' so far, from HAProxy's 'show stat'."""
    lines = subprocess.run(["docker", "exec", gateway, "python3", "-c", _SHOW_STAT],
                           check=True, capture_output=True, text=True).stdout.splitlines()
    header = lines[0].lstrip("# ").split(",")
    rows = [dict(zip(header, line.split(","))) for line in lines[1:] if line.strip()]
    return {f"{r['pxname']}/{r['svname']}": int(r["hrsp_2xx"] or 0)
            for r in rows if r["svname"] not in ("FRONTEND", "BACKEND")}


def workload(n_short, n_long, seed):
    """The request list of every pass: (class, prompt), shuffled with the seed."""
    rng = random.Random(seed)
    items = [("short", rng.choice(SHORT_TURNS)) for _index in range(n_short)]
    items += [("long", rng.choice(LONG_ASKS)) for _index in range(n_long)]
    rng.shuffle(items)
    return items


def chat(url, key, model, prompt, max_tokens, timeout):
    """One chat completion; (status, completion tokens or 0, error text or None)."""
    body = json.dumps({"model": model, "messages": [{"role": "user", "content": prompt}],
                       "max_tokens": max_tokens, "temperature": 0, "ignore_eos": True}).encode()
    req = urllib.request.Request(url + "/v1/chat/completions", data=body, method="POST", headers={
        "Content-Type": "application/json", "Authorization": f"Bearer {key}"})
    try:
        with _OPENER.open(req, timeout=timeout) as resp:
            return resp.status, json.loads(resp.read())["usage"]["completion_tokens"], None
    except urllib.error.HTTPError as exc:
        return exc.code, 0, exc.read().decode()[:300]
    except OSError as exc:
        return 0, 0, str(exc)


def one_pass(args, url, arm, rnd, items):
    """Send the workload once through one arm; the pass's JSON line."""
    tag = "H" if arm == "hybrid" else "R"
    tokens = {"short": args.short_tokens, "long": args.long_tokens}

    def send(i):
        cls, prompt = items[i]
        start = time.time()
        status, out, err = chat(url, args.key, ARMS[arm], f"[{rnd:02d}{tag}{i:03d}] {prompt}", tokens[cls],
                                args.timeout)
        return {"i": i, "class": cls, "start": start, "end": time.time(), "status": status,
                "tokens": out, "error": err}

    before = haproxy_2xx(args.gateway)
    with concurrent.futures.ThreadPoolExecutor(args.concurrency) as pool:
        recs = list(pool.map(send, range(len(items))))
    after = haproxy_2xx(args.gateway)
    wall = max(r["end"] for r in recs) - min(r["start"] for r in recs)
    ok = [r for r in recs if r["status"] == 200]
    line = {
        "bench_id": args.bench_id, "row": "gateway_dispatch", "path": arm, "run": rnd, "seconds": round(wall, 3),
        "model": ARMS[arm], "concurrency": args.concurrency, "requests": len(recs), "failed": len(recs) - len(ok),
        "output_tokens": sum(r["tokens"] for r in ok),
        "short_latencies_s": [round(r["end"] - r["start"], 3) for r in ok if r["class"] == "short"],
        "long_latencies_s": [round(r["end"] - r["start"], 3) for r in ok if r["class"] == "long"],
        "answers_by_server": {k: after[k] - before.get(k, 0) for k in after if after[k] != before.get(k, 0)},
        "load1": float(open("/proc/loadavg").read().split()[0]),
        "errors": sorted({r["error"] for r in recs if r["error"]})[:3],
    }
    with open(args.raw, "a") as f:
        for r in recs:
            f.write(json.dumps(dict(r, bench_id=args.bench_id, arm=arm, run=rnd)) + "\n")
    return line


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gateway", default="kv-gateway-gw", help="the gateway's container")
    ap.add_argument("--port", type=int, default=8080)
    ap.add_argument("--key", required=True)
    ap.add_argument("--short", type=int, default=30)
    ap.add_argument("--long", type=int, default=10)
    ap.add_argument("--short-tokens", type=int, default=16)
    ap.add_argument("--long-tokens", type=int, default=256)
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--seed", type=int, default=39)
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--bench-id", required=True)
    ap.add_argument("--results", required=True, help="JSON lines, one per pass (appended)")
    ap.add_argument("--raw", required=True, help="JSON lines, one per request (appended)")
    args = ap.parse_args()
    url = f"http://{container_ip(args.gateway)}:{args.port}"
    items = workload(args.short, args.long, args.seed)
    # Warm-up, not measured: a few short turns per arm reach both servers.
    for arm in ARMS:
        for i in range(4):
            status, _out, err = chat(url, args.key, ARMS[arm], f"[warm {i}] Hi", 4, args.timeout)
            if status != 200:
                raise SystemExit(f"warm-up through {arm} failed: {status} {err}")
    order = list(ARMS)
    for rnd in range(1, args.rounds + 1):
        for arm in order if rnd % 2 else reversed(order):
            line = one_pass(args, url, arm, rnd, items)
            with open(args.results, "a") as f:
                f.write(json.dumps(line) + "\n")
            print(json.dumps({k: v for k, v in line.items() if not k.endswith("_latencies_s")}), flush=True)


if __name__ == "__main__":
    main()
