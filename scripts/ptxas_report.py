"""Registers, shared memory, stack and spills per CUDA kernel, from the
compiler's resource report (nvcc -Xptxas=-v), one line per kernel:

    scripts/ptxas-report.sh [ARCH]      (compiles kernels/cuda for ARCH, 90a by default)
    python3 scripts/ptxas_report.py LOG  (reads a saved report)
"""
import re
import subprocess
import sys


def demangle(names):
    done = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True)
    return done.stdout.splitlines() if done.returncode == 0 else names


def parse(text):
    rows, current = [], None
    for line in text.splitlines():
        m = re.search(r"Compiling entry function '([^']+)' for '(sm_\w+)'", line)
        if m:
            current = {"name": m.group(1), "arch": m.group(2), "registers": 0, "shared": 0, "stack": 0, "spills": 0}
            rows.append(current)
            continue
        if current is None:
            continue
        if m := re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line):
            current.update(stack=int(m.group(1)), spills=int(m.group(2)) + int(m.group(3)))
        if m := re.search(r"Used (\d+) registers", line):
            current["registers"] = int(m.group(1))
        if m := re.search(r"(\d+) bytes smem", line):
            current["shared"] = int(m.group(1))
    return rows


# engine/tensor/dtype.h's DType values that the CUDA kernels are built for.
DTYPES = {0: "F32", 1: "F16", 2: "BF16", 16: "Q4_0", 17: "Q4_1", 18: "Q5_0", 20: "Q8_0", 24: "Q4_K", 26: "Q6_K"}


def short(name):
    """The kernel's name and template arguments, without the namespaces and parameter list."""
    name = re.sub(r"\(anonymous namespace\)::|tessera::(gpu::)?|ops::|^void ", "", name)
    name = re.sub(r"\([^()]*\)$", "", name)
    return re.sub(r"\(DType\)(\d+)", lambda m: DTYPES.get(int(m.group(1)), "dtype " + m.group(1)), name)


def main():
    rows = parse(open(sys.argv[1]).read())
    names = demangle([r["name"] for r in rows])
    print(f"{'kernel':70} {'regs':>5} {'smem':>6} {'stack':>6} {'spills':>6}")
    for row, name in sorted(zip(rows, names), key=lambda x: short(x[1])):
        print(f"{short(name)[:70]:70} {row['registers']:5} {row['shared']:6} {row['stack']:6} {row['spills']:6}")
    spilling = [short(n) for r, n in zip(rows, names) if r["spills"]]
    print(f"{len(rows)} kernels, {len(spilling)} with spills" + (": " + ", ".join(spilling) if spilling else ""))


if __name__ == "__main__":
    main()
