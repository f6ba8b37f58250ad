"""Bounded chat-completion load against one OpenAI-compatible endpoint.

Sends `--requests` chat completions, `--concurrency` at a time, each asking
for exactly `--max-tokens` tokens (ignore_eos), and prints one JSON line:
output tokens per second over the whole run, request latency percentiles and
the time to first token of a streamed request.  Only for endpoints of the
project's own test hosts.
"""

import argparse
import concurrent.futures
import json
import statistics
import time

import openai


def one(client, model, max_tokens, i):
    start = time.perf_counter()
    resp = client.chat.completions.create(
        model=model,
        messages=[{"role": "user", "content": f"Write a short story about lighthouse number {i}."}],
        max_tokens=max_tokens,
        temperature=0,
        extra_body={"ignore_eos": True},
    )
    return time.perf_counter() - start, resp.usage.completion_tokens


def ttft(client, model):
    start = time.perf_counter()
    stream = client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": "What is the capital of France?"}],
        max_tokens=16, temperature=0, stream=True,
    )
    for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            first = time.perf_counter() - start
            for _dummy in stream:
                pass
            return first
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--api-key", default="none")
    ap.add_argument("--label", default="")
    ap.add_argument("--requests", type=int, default=16)
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--max-tokens", type=int, default=64)
    args = ap.parse_args()
    client = openai.OpenAI(base_url=args.url + "/v1", api_key=args.api_key, timeout=300)
    one(client, args.model, 8, -1)  # warm-up
    first = ttft(client, args.model)
    start = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(args.concurrency) as pool:
        results = list(pool.map(lambda i: one(client, args.model, args.max_tokens, i), range(args.requests)))
    wall = time.perf_counter() - start
    lat = sorted(r[0] for r in results)
    tokens = sum(r[1] for r in results)
    print(json.dumps({
        "label": args.label, "requests": args.requests, "concurrency": args.concurrency,
        "output_tokens": tokens, "wall_s": round(wall, 2), "tokens_per_s": round(tokens / wall, 2),
        "latency_p50_s": round(statistics.median(lat), 2), "latency_p90_s": round(lat[int(0.9 * (len(lat) - 1))], 2),
        "ttft_s": round(first, 3) if first else None,
    }))


if __name__ == "__main__":
    main()
