#!/usr/bin/env python3
"""Load, overload and soak scenarios against a running `tessera serve`, with
the books checked at the end of each.

Scenarios:
  ramp      closed loop at rising concurrency until throughput stops growing;
            prints the capacity (requests/s of the soak mix)
  overload  open loop (Poisson arrivals) at a multiple of the capacity: every
            answer must be a completion or a 429 with Retry-After, which the
            client honours before it retries
  soak      open loop at a fraction of the capacity for --duration seconds with
            the mix: 60% streaming (SSE or gRPC), 20% non-streaming, 10%
            cancelled mid-stream, 5% invalid, 5% near the context limit;
            samples RSS, threads, fds, KV usage and throughput every second and
            writes them to CSV and a PNG plot

At the end of every scenario the books must balance: requests the client saw
accepted = completed + errored + cancelled, and the same from /metrics
(requests_accepted_total = request_success_total + requests_cancelled_total);
KV usage back to 0 within a second of idle; threads and fds back to the idle
figures. Exit status 1 when anything does not hold.

Usage:
  python load_tests/stress.py --model ~/.cache/tessera/models/SmolLM2-135M-Instruct.Q4_1.gguf soak --duration 1800
"""
import argparse
import collections
import concurrent.futures
import csv
import json
import pathlib
import random
import sys
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "python"))

from daemon import Daemon  # noqa: E402
from stress_client import Client, Outcome  # noqa: E402


def process_figures(pid):
    status = pathlib.Path(f"/proc/{pid}/status").read_text()
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    rss_mb = int(fields["VmRSS"].split()[0]) / 1024
    threads = int(fields["Threads"])
    fds = len(list(pathlib.Path(f"/proc/{pid}/fd").iterdir()))
    return rss_mb, threads, fds


class Books:
    """Client-side outcomes and the daemon's own counters, compared at the end."""

    def __init__(self, daemon):
        self.daemon = daemon
        self.counts = collections.Counter()
        self.lock = threading.Lock()
        self.lost_examples = []
        self.start = self.server_counts()

    def add(self, outcome: Outcome):
        with self.lock:
            self.counts[outcome.kind] += 1
            if outcome.kind == "rejected":
                self.counts[f"rejected_{outcome.status}"] += 1
            if outcome.detail == "retry_after_missing":
                self.counts["retry_after_missing"] += 1
            if outcome.kind == "lost" and len(self.lost_examples) < 5:
                self.lost_examples.append(outcome.detail)

    def server_counts(self):
        m = self.daemon.metric
        success = sum(m("tessera:request_success_total", model_name="m", finished_reason=r)
                      for r in ("stop", "length", "abort", "error"))
        return {"accepted": m("tessera:requests_accepted_total", model_name="m"),
                "finished": success + m("tessera:requests_cancelled_total", model_name="m")}

    def check(self, problems):
        end = self.server_counts()
        server_accepted = end["accepted"] - self.start["accepted"]
        server_finished = end["finished"] - self.start["finished"]
        c = self.counts
        client_accepted = c["completed"] + c["errored"] + c["cancelled"]
        print(f"  client: {dict(c)}")
        print(f"  server: accepted {server_accepted:.0f}, finished {server_finished:.0f}")
        if c["lost"]:
            problems.append(f"{c['lost']} request(s) ended without an outcome, e.g. {self.lost_examples}")
        if server_accepted != server_finished:
            problems.append(f"server books: accepted {server_accepted} != finished {server_finished}")
        if server_accepted != client_accepted:
            problems.append(f"client saw {client_accepted} accepted, the server {server_accepted}")


def settle(daemon, idle, problems, timeout=1.0):
    """KV back to 0 within `timeout` of idle; threads and fds back to idle."""
    deadline = time.time() + timeout
    while daemon.metric("tessera:kv_cache_usage_perc", model_name="m") != 0 and time.time() < deadline:
        time.sleep(0.02)
    kv = daemon.metric("tessera:kv_cache_usage_perc", model_name="m")
    if kv != 0:
        problems.append(f"KV usage {kv:.3f} a second after idle")
    for _ in range(100):  # request threads end as their sockets close
        _, threads, fds = process_figures(daemon.proc.pid)
        if threads <= idle[1] and fds <= idle[2]:
            break
        time.sleep(0.1)
    print(f"  idle figures: threads {idle[1]} -> {threads}, fds {idle[2]} -> {fds}")
    if threads > idle[1] or fds > idle[2]:
        problems.append(f"threads {idle[1]} -> {threads} or fds {idle[2]} -> {fds} did not return to idle")


def closed_loop(client, books, concurrency, seconds, pick):
    stop = time.time() + seconds
    done = collections.Counter()

    def worker():
        while time.time() < stop:
            outcome = client.run(pick())
            books.add(outcome)
            done[outcome.kind] += 1

    with concurrent.futures.ThreadPoolExecutor(concurrency) as pool:
        for f in [pool.submit(worker) for _ in range(concurrency)]:
            f.result()
    return done


def open_loop(client, books, rate, seconds, pick, on_sample=None, retry_after=False):
    """Poisson arrivals at `rate` per second for `seconds`."""
    stop = time.time() + seconds
    pending = []
    with concurrent.futures.ThreadPoolExecutor(512) as pool:
        next_arrival = time.time()
        next_sample = time.time()
        while time.time() < stop:
            now = time.time()
            if on_sample and now >= next_sample:
                on_sample()
                next_sample += 1.0
            if now >= next_arrival:
                kind = pick()
                pending.append(pool.submit(lambda k=kind: books.add(client.run(k, honour_retry_after=retry_after))))
                next_arrival += random.expovariate(rate)
            time.sleep(max(0.0, min(next_arrival, next_sample) - time.time()))
        for f in pending:
            f.result()


def soak_mix():
    r = random.random()
    for share, kind in ((0.60, "stream"), (0.80, "plain"), (0.90, "cancel"), (0.95, "invalid"), (1.0, "long")):
        if r < share:
            return kind
    return "stream"


def ramp(client, daemon, args):
    best, capacity = 0.0, 0.0
    for concurrency in (1, 2, 4, 8, 16, 32):
        books = Books(daemon)
        t0 = time.time()
        done = closed_loop(client, books, concurrency, args.step_seconds, soak_mix)
        rate = (done["completed"] + done["cancelled"]) / (time.time() - t0)
        print(f"  concurrency {concurrency:3d}: {rate:6.2f} requests/s  {dict(done)}")
        if rate < best * 1.05:
            break
        best = capacity = max(best, rate)
    print(f"capacity: {capacity:.2f} requests/s")
    return capacity


def plot(rows, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("  (matplotlib not installed: no plot)")
        return
    t = [r["t"] for r in rows]
    fig, axes = plt.subplots(3, 1, figsize=(10, 8), sharex=True)
    axes[0].plot(t, [r["rss_mb"] for r in rows])
    axes[0].set_ylabel("RSS (MB)")
    axes[1].plot(t, [100 * r["kv"] for r in rows])
    axes[1].set_ylabel("KV in use (%)")
    axes[2].plot(t, [r["tokens_per_s"] for r in rows])
    axes[2].set_ylabel("tokens/s")
    axes[2].set_xlabel("seconds")
    fig.suptitle("tessera soak")
    fig.tight_layout()
    fig.savefig(path)
    print(f"  plot: {path}")


def soak(client, daemon, args, rate, idle, problems):
    books = Books(daemon)
    rows = []
    t0 = time.time()
    last_tokens = [daemon.metric("tessera:generation_tokens_total", model_name="m"), t0]

    def sample():
        rss, threads, fds = process_figures(daemon.proc.pid)
        tokens = daemon.metric("tessera:generation_tokens_total", model_name="m")
        now = time.time()
        tps = (tokens - last_tokens[0]) / max(1e-6, now - last_tokens[1])
        last_tokens[:] = [tokens, now]
        rows.append({"t": round(now - t0, 1), "rss_mb": round(rss, 1), "threads": threads, "fds": fds,
                     "kv": daemon.metric("tessera:kv_cache_usage_perc", model_name="m"), "tokens_per_s": round(tps, 1)})

    open_loop(client, books, rate, args.duration, soak_mix, on_sample=sample)
    books.check(problems)
    settle(daemon, idle, problems)
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "soak.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    plot(rows, out / "soak.png")
    warm = [r for r in rows if r["t"] >= min(args.warmup, args.duration / 2)]
    growth = warm[-1]["rss_mb"] - warm[0]["rss_mb"] if warm else 0.0
    print(f"  RSS after warm-up: {warm[0]['rss_mb']:.1f} -> {warm[-1]['rss_mb']:.1f} MB (growth {growth:+.1f} MB)")
    print(f"  threads {min(r['threads'] for r in rows)}..{max(r['threads'] for r in rows)}, "
          f"fds {min(r['fds'] for r in rows)}..{max(r['fds'] for r in rows)}")
    print(f"  throughput mean {sum(r['tokens_per_s'] for r in rows) / len(rows):.1f} tokens/s")
    if growth >= args.max_rss_growth_mb:
        problems.append(f"RSS grew {growth:.1f} MB after warm-up (limit {args.max_rss_growth_mb})")


def overload(client, daemon, args, rate, idle, problems):
    books = Books(daemon)
    open_loop(client, books, rate, args.duration, lambda: "stream", retry_after=True)
    books.check(problems)
    other = {k: v for k, v in books.counts.items() if k.startswith("rejected_") and k != "rejected_429"}
    if other or books.counts["errored"]:
        problems.append(f"overload gave answers other than completions and 429s: {other}, errored {books.counts['errored']}")
    if books.counts["retry_after_missing"]:
        problems.append("a 429 came without Retry-After")
    settle(daemon, idle, problems)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True)
    p.add_argument("--tessera-bin", default=str(ROOT / "build" / "tessera"))
    p.add_argument("--max-model-len", type=int, default=1024)
    p.add_argument("--grpc-share", type=float, default=0.25, help="share of streaming requests sent over gRPC")
    p.add_argument("--seed", type=int, default=1)
    sub = p.add_subparsers(dest="scenario", required=True)
    r = sub.add_parser("ramp")
    r.add_argument("--step-seconds", type=float, default=20)
    o = sub.add_parser("overload")
    o.add_argument("--capacity", type=float, help="requests/s (default: measured by a ramp first)")
    o.add_argument("--factor", type=float, default=4.0)
    o.add_argument("--duration", type=float, default=30)
    o.add_argument("--step-seconds", type=float, default=10)
    s = sub.add_parser("soak")
    s.add_argument("--capacity", type=float, help="requests/s (default: measured by a ramp first)")
    s.add_argument("--fraction", type=float, default=0.7)
    s.add_argument("--duration", type=float, default=1800)
    s.add_argument("--warmup", type=float, default=120)
    s.add_argument("--max-rss-growth-mb", type=float, default=20)
    s.add_argument("--out", default="soak-out")
    s.add_argument("--step-seconds", type=float, default=15)
    args = p.parse_args()
    random.seed(args.seed)

    config = (f"server:\n  max_connections: 1024\nmodels:\n  - name: m\n    path: {args.model}\n"
              f"    max_model_len: {args.max_model_len}\n    kv_cache: {{budget_mb: 256}}\n"
              f"    scheduler: {{max_queued_requests: 64}}\n")
    daemon = Daemon(args.tessera_bin, [], config_yaml=config)
    problems = []
    try:
        client = Client(daemon, max_model_len=args.max_model_len, grpc_share=args.grpc_share)
        # One request on each transport first, so that the idle figures
        # include the client's gRPC channel and the servers' first threads.
        for warm in (client._plain, client._grpc_stream):
            if warm().kind != "completed":
                raise RuntimeError("warm-up request failed")
        time.sleep(0.5)
        idle = process_figures(daemon.proc.pid)
        print(f"idle: RSS {idle[0]:.1f} MB, threads {idle[1]}, fds {idle[2]}")
        if args.scenario == "ramp":
            ramp(client, daemon, args)
        else:
            capacity = args.capacity or ramp(client, daemon, args)
            settle(daemon, idle, problems, timeout=5)
            idle = process_figures(daemon.proc.pid)
            if args.scenario == "soak":
                print(f"soak at {args.fraction:.0%} of {capacity:.2f} requests/s for {args.duration:.0f} s")
                soak(client, daemon, args, capacity * args.fraction, idle, problems)
            else:
                print(f"overload at {args.factor:.1f}x of {capacity:.2f} requests/s for {args.duration:.0f} s")
                overload(client, daemon, args, capacity * args.factor, idle, problems)
        client.close()
    finally:
        rc = daemon.stop()
        if rc != 0:
            problems.append(f"the daemon exited with {rc}")
    for problem in problems:
        print("FAIL:", problem)
    print("OK" if not problems else f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
