"""Decode linears on the GPU against cuBLAS f16 on the same shapes, in one
run: `tessera_accel_bench --only linear` (every GGUF format, 1, 4 and 16
tokens), then PyTorch's f16 linear (cuBLAS) on each (rows, cols, tokens),
both replayed as CUDA graphs over enough weight copies to leave the cache.

    python3 tests/bench/gemv_vs_cublas.py --bench build/tests/tessera_accel_bench [--peak-gbs 3350]

Prints a JSON line per case and a table: microseconds a call, weight GB/s,
and tessera's time over cuBLAS f16's (below 1: faster; the quantized
weights are 2 to 4.5 times smaller than f16).
"""
import argparse
import json
import statistics
import subprocess

ROTATION_BYTES = 256 << 20
CALLS = 64


def tessera_cases(args):
    out = subprocess.run([args.bench, "--device", args.device, "--only", "linear", "--reps", str(args.reps)],
                         capture_output=True, text=True, timeout=900)
    if out.returncode != 0:
        raise SystemExit(out.stderr)
    return [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]


def cublas_us(torch, rows, cols, tokens, reps):
    bytes_ = rows * cols * 2
    copies = max(1, min(256, -(-ROTATION_BYTES // bytes_)))
    weights = [torch.randn(rows, cols, device="cuda", dtype=torch.float16) * 0.02 for _ in range(copies)]
    x = torch.randn(tokens, cols, device="cuda", dtype=torch.float16)
    calls = max(CALLS, copies)

    def run():
        for i in range(calls):
            torch.nn.functional.linear(x, weights[i % copies])

    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        run()  # warm-up outside the capture (cuBLAS workspace, heuristics)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        run()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1000.0 / calls)
    del graph, weights
    return statistics.median(times), bytes_


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bench", default="build/tests/tessera_accel_bench")
    p.add_argument("--device", default="cuda:0")
    p.add_argument("--reps", type=int, default=7)
    p.add_argument("--peak-gbs", type=float, default=3350.0)
    args = p.parse_args()
    import torch  # the device machine's PyTorch, for cuBLAS

    reference = {}
    rows_out = []
    for case in tessera_cases(args):
        key = (case["rows"], case["cols"], case["tokens"])
        if key not in reference:
            reference[key] = cublas_us(torch, *key, args.reps)
        ref_us, ref_bytes = reference[key]
        record = {**case, "cublas_f16_us": round(ref_us, 2), "cublas_f16_gb_s": round(ref_bytes / ref_us / 1e3, 1),
                  "time_over_cublas": round(case["us"] / ref_us, 3), "fraction_of_peak": round(case["gb_s"] / args.peak_gbs, 3)}
        print(json.dumps(record), flush=True)
        rows_out.append(record)
    print(f"{'layer':<14} {'format':<6} {'M':>3} {'us':>8} {'GB/s':>7} {'peak':>6} {'cuBLAS us':>10} {'GB/s':>7} {'ratio':>6}")
    for r in rows_out:
        print(f"{r['layer']:<14} {r['format']:<6} {r['tokens']:>3} {r['us']:>8.2f} {r['gb_s']:>7.1f} {r['fraction_of_peak']:>6.3f} "
              f"{r['cublas_f16_us']:>10.2f} {r['cublas_f16_gb_s']:>7.1f} {r['time_over_cublas']:>6.2f}")


if __name__ == "__main__":
    main()
