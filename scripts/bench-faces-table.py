#!/usr/bin/env python3
"""The table of scripts/bench-faces.sh: `mcp-bench load` JSON lines (one per face, depth and
round) → markdown. Each figure is the median over the rounds; ratios and "added" figures are
against the direct row of the same run. Then issue 38's targets, each said as met or not, and
every place a BotCraft face loses to a peer of its kind: a stdio face to the TypeScript SDK's
naive aggregator, an HTTP face to mcp-hub (it must beat both), or an HTTP face to the
TypeScript SDK's own streamable-HTTP server (it must match it: at most 5 % worse).

usage: bench-faces-table.py FACES.jsonl
"""
import json
import statistics
import sys
from collections import defaultdict

DIRECT = "direct (stdio)"
FLOOR = "bare axum echo (HTTP floor)"
HTTP = "BotCraft /mcp"
SINGLE = "BotCraft /mcp/fake"
FORWARD = "botcraft mcp-stdio → /mcp"
LOCAL = "botcraft mcp-stdio --local"
NAIVE = "TypeScript SDK, naive aggregator (stdio)"
HUB = "mcp-hub 4.2.1 (HTTP+SSE)"
TS_HTTP = "TypeScript SDK, streamable HTTP server"
STDIO_FACES = [FORWARD, LOCAL]
HTTP_FACES = [HTTP, SINGLE]
# (faces, peer, tolerance): a face must beat the peer, or come within the tolerance of it.
RULES = [(STDIO_FACES, NAIVE, 0.0), (HTTP_FACES, HUB, 0.0), (HTTP_FACES, TS_HTTP, 0.05)]


def main(path):
    runs = defaultdict(lambda: defaultdict(list))  # label -> depth -> [line per round]
    order = []
    with open(path) as lines:
        for line in lines:
            row = json.loads(line)
            if row["label"] not in order:
                order.append(row["label"])
            runs[row["label"]][row["depth"]].append(row)

    def med(label, depth, key):
        return statistics.median(r[key] for r in runs[label][depth])

    def cpu(label):
        # CPU per call over every depth of a round (more calls, finer than 10 ms ticks).
        per_round = defaultdict(lambda: [0, 0])
        for rows in runs[label].values():
            for r in rows:
                per_round[r["round"]][0] += r["cpu_us"]
                per_round[r["round"]][1] += r["calls"]
        return statistics.median(c / n for c, n in per_round.values())

    fig = {}
    for label in order:
        fig[label] = {
            "p50": med(label, 1, "p50_us") / 1000,
            "p99": med(label, 1, "p99_us") / 1000,
            "k1": med(label, 1, "per_second"),
            "k8": med(label, 8, "per_second"),
            "k32": med(label, 32, "per_second"),
            "cpu": cpu(label),
            "rss": med(label, 1, "peak_rss_kib") / 1024,
        }
    d = fig[DIRECT]
    rounds = len(runs[DIRECT][1])
    calls = runs[DIRECT][1][0]["calls"]
    print(f"{rounds} rounds, {calls:,} timed calls per depth; medians over the rounds.\n")
    print("| path | p50 ms | p99 ms | p50 × direct | K=1 req/s | K=8 req/s | K=32 req/s "
          "| K=32 × direct | CPU µs per call added | peak RSS MiB added |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for label in order:
        f = fig[label]
        added = lambda key: "0" if label == DIRECT else f"{f[key] - d[key]:+.1f}"
        print(f"| {label} | {f['p50']:.3f} | {f['p99']:.3f} | {f['p50'] / d['p50']:.1f}× "
              f"| {f['k1']:,.0f} | {f['k8']:,.0f} | {f['k32']:,.0f} | {f['k32'] / d['k32']:.2f} "
              f"| {added('cpu')} | {added('rss')} |")
    print(f"\nDirect itself: {d['cpu']:.1f} µs of CPU per call, {d['rss']:.1f} MiB peak RSS.\n")

    def target(name, ok, measured):
        print(f"- {name}: **{'met' if ok else 'missed'}** ({measured})")

    print("Targets:\n")
    if LOCAL in fig:
        l = fig[LOCAL]
        target("`mcp-stdio --local` p50 ≤ direct + 0.03 ms", l["p50"] <= d["p50"] + 0.03,
               f"+{l['p50'] - d['p50']:.3f} ms")
        target("`mcp-stdio --local` K=32 ≥ 0.7× direct", l["k32"] >= 0.7 * d["k32"],
               f"{l['k32'] / d['k32']:.2f}×")
        target("`mcp-stdio --local` ≤ 20 µs CPU added per call", l["cpu"] - d["cpu"] <= 20,
               f"{l['cpu'] - d['cpu']:.1f} µs")
        target("`mcp-stdio --local` ≤ 10 MB RSS added", (l["rss"] - d["rss"]) * 1.048576 <= 10,
               f"{(l['rss'] - d['rss']) * 1.048576:.1f} MB")
    if HTTP in fig and FLOOR in fig:
        h = fig[HTTP]
        target("`/mcp` p50 ≤ bare HTTP echo + 0.05 ms", h["p50"] <= fig[FLOOR]["p50"] + 0.05,
               f"+{h['p50'] - fig[FLOOR]['p50']:.3f} ms")
        target("`/mcp` CPU added per call ≤ 60 µs", h["cpu"] - d["cpu"] <= 60,
               f"{h['cpu'] - d['cpu']:.1f} µs")
    if FORWARD in fig and HTTP in fig:
        target("`mcp-stdio` → `/mcp` p50 ≤ `/mcp` + 0.1 ms",
               fig[FORWARD]["p50"] <= fig[HTTP]["p50"] + 0.1,
               f"+{fig[FORWARD]['p50'] - fig[HTTP]['p50']:.3f} ms")
    losses = []
    for faces, peer, tolerance in RULES:
        if peer not in fig:
            continue
        for face in (f for f in faces if f in fig):
            a, b = fig[face], fig[peer]
            low, high = 1 + tolerance, 1 - tolerance
            for key, name, ok in [("p50", "p50", a["p50"] < b["p50"] * low),
                                  ("p99", "p99", a["p99"] < b["p99"] * low),
                                  ("k32", "K=32 throughput", a["k32"] > b["k32"] * high),
                                  ("cpu", "CPU per call", a["cpu"] < b["cpu"] * low),
                                  ("rss", "peak RSS", a["rss"] < b["rss"] * low)]:
                if not ok:
                    verb = "does not beat" if tolerance == 0 else "does not match"
                    losses.append(f"{face} {verb} {peer} on {name} "
                                  f"({a[key]:,.3f} against {b[key]:,.3f})")
    target("every face beats the peers of its kind (and matches the TypeScript SDK's HTTP "
           "server) on p50, p99, throughput, CPU and memory", not losses,
           "all beaten" if not losses else f"{len(losses)} exceptions below")
    for loss in losses:
        print(f"  - {loss}")


if __name__ == "__main__":
    main(sys.argv[1])
