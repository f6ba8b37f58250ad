"""Markdown tables of the scripts/bench benchmarks from .build/bench/results.jsonl.

Each scripts/bench/*.sh run appends one JSON line per measurement (bench_id,
row, path, run, seconds, extra keys).  For every row this prints the latest
run of that row (or the --bench-id given): per path the number of runs, the
median and the min-max, then the ratio of the medians against the issue's
target.  Only the standard library: it runs on any controller.
"""

import argparse
import collections
import json
import statistics

# row: (baseline path, measured path, metric, target ratio, "<=" or ">=", title)
ROWS = {
    "first_answer": ("manual", "site.yml", "seconds", 1.15, "<=",
                     "site.yml to first answer vs the manual path, one host"),
    "further_host": ("manual", "further-host", "seconds", 0.35, "<=",
                     "Each further host (artifact path) vs the manual path per host"),
    "fleet": ("1-host", "4-hosts", "seconds", 1.5, "<=",
              "Converge wall time, 1 host vs 4 hosts (artifact path)"),
    "idempotent": (None, "site.yml", "seconds", 15.0, "<=",
                   "Idempotent re-run of site.yml on one converged host (target in seconds)"),
    "throughput": ("vllm-serve", "deployed", "tokens_per_s", 1.0, ">=",
                   "Deployed unit throughput vs a default `vllm serve` (tok/s)"),
    "installer": ("pip", "uv", "seconds", None, "<=", "uv vs pip, engine virtualenv"),
    "demo": (None, None, "seconds", None, "<=", "`make demo` parts on a new machine"),
    "gateway_dispatch": (None, None, "seconds", None, "<=",
                         "Mixed workload through the gateway: hybrid dispatch vs round-robin, same engines"),
}


def fmt(v):
    return f"{v:.1f}" if v >= 10 else f"{v:.2f}"


def describe(values):
    """The median of numbers, else the distinct values (true/false for flags)."""
    if all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in values):
        return fmt(statistics.median(values))
    return "/".join(sorted({json.dumps(x) if isinstance(x, bool) else str(x) for x in values}))


def load(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def latest(lines, row, bench_ids):
    mine = [line for line in lines if line["row"] == row]
    if bench_ids:
        return [line for line in mine if line["bench_id"] in bench_ids]
    if not mine:
        return []
    last = max(line["bench_id"] for line in mine)
    return [line for line in mine if line["bench_id"] == last]


def nearest_rank(values, pct):
    """Nearest-rank percentile (pct in 0..100) of a non-empty list."""
    ordered = sorted(values)
    return ordered[max(1, -(-len(ordered) * pct // 100)) - 1]


def dispatch_table(lines):
    """Per arm, the passes of scripts/bench/mixed_load.py pooled: latency percentiles per class, throughput."""
    title = ROWS["gateway_dispatch"][-1]
    out = [f"#### {title} (bench {lines[0]['bench_id']})", "",
           "| Arm | Passes | Requests (failed) | Short p50 / p99 (s) | Long p50 / p99 (s) | Requests/s "
           "| Output tok/s | 2xx by server |", "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    by_arm = collections.OrderedDict()
    for line in lines:
        by_arm.setdefault(line["path"], []).append(line)
    for arm, items in by_arm.items():
        wall = sum(i["seconds"] for i in items)
        ok = sum(i["requests"] - i["failed"] for i in items)
        short = [x for i in items for x in i["short_latencies_s"]]
        long_ = [x for i in items for x in i["long_latencies_s"]]
        servers = collections.Counter()
        for i in items:
            servers.update(i["answers_by_server"])
        cls = [f"{fmt(nearest_rank(v, 50))} / {fmt(nearest_rank(v, 99))} (n={len(v)})" if v else "-"
               for v in (short, long_)]
        out.append(f"| {arm} | {len(items)} | {sum(i['requests'] for i in items)} ({sum(i['failed'] for i in items)}) "
                   f"| {cls[0]} | {cls[1]} | {ok / wall:.3f} "
                   f"| {sum(i['output_tokens'] for i in items) / wall:.1f} "
                   f"| {', '.join(f'{k} {v}' for k, v in sorted(servers.items()))} |")
    out += ["", "Throughput: answered requests and output tokens over the summed wall time of the arm's passes; "
            "percentiles: nearest rank over the pooled passes."]
    return "\n".join(out)


def table(row, lines):
    base, measured, metric, target, op, title = ROWS.get(row, (None, None, "seconds", None, "<=", row))
    by_path = collections.OrderedDict()
    for line in lines:
        by_path.setdefault(line["path"], []).append(line)
    unit = "tok/s" if metric == "tokens_per_s" else "s"
    out = [f"#### {title} (bench {lines[0]['bench_id']})", "",
           f"| Path | Runs | Median ({unit}) | Min-max ({unit}) | Other (medians) |", "| --- | --- | --- | --- | --- |"]
    medians = {}
    for path, items in by_path.items():
        vals = [i[metric] for i in items if metric in i]
        if not vals:
            continue
        medians[path] = statistics.median(vals)
        extra = collections.OrderedDict()
        for i in items:
            for k, v in i.items():
                if k in ("bench_id", "row", "path", "run", "seconds", metric, "label", "log"):
                    continue
                extra.setdefault(k, []).append(v)
        other = ", ".join(f"{k} {describe(v)}" for k, v in extra.items())
        out.append(f"| {path} | {len(vals)} | {fmt(medians[path])} | {fmt(min(vals))}-{fmt(max(vals))} | {other} |")
    if base and measured and base in medians and measured in medians:
        ratio = medians[measured] / medians[base]
        verdict = ""
        if target is not None:
            ok = ratio <= target if op == "<=" else ratio >= target
            verdict = f", target {op} {target}x: **{'met' if ok else 'missed'}**"
        out += ["", f"Ratio {measured} / {base}: **{ratio:.2f}x**{verdict}"]
    elif row == "demo":
        needed = [p for p, items in by_path.items() if items[0].get("needed") and p in medians]
        skipped = [p for p, items in by_path.items() if not items[0].get("needed")]
        total = sum(medians[p] for p in needed)
        out += ["", f"`make demo` builds: {', '.join(needed) or 'nothing'} ({fmt(total)} s measured)"
                f"; not built: {', '.join(skipped) or 'nothing'}"]
    elif base is None and measured in medians and target is not None:
        ok = medians[measured] <= target
        out += ["", f"Median {fmt(medians[measured])} s, target <= {target} s: **{'met' if ok else 'missed'}**"]
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("--bench-id", action="append", default=[], help="only these runs (default: each row's latest)")
    args = ap.parse_args()
    lines = load(args.results)
    rows = list(dict.fromkeys(line["row"] for line in lines))
    for row in sorted(rows, key=lambda r: list(ROWS).index(r) if r in ROWS else len(ROWS)):
        chosen = latest(lines, row, set(args.bench_id))
        if row == "further_host" and chosen and not any(c["path"] == "manual" for c in chosen):
            # fleet.sh with FLEET_MANUAL=0: the manual path of first-answer.sh of the same bench run.
            same = {c["bench_id"] for c in chosen}
            chosen = [dict(line, row=row) for line in lines
                      if line["row"] == "first_answer" and line["path"] == "manual" and line["bench_id"] in same] + chosen
        if chosen:
            print(dispatch_table(chosen) if row == "gateway_dispatch" else table(row, chosen))
            print()


if __name__ == "__main__":
    main()
