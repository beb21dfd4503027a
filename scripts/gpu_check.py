"""The GPU check, run from the unpacked GPU kit (scripts/make-gpu-kit.sh) in
a copy of the source tree: every stage with its own time limit, results in
OUTDIR/summary.json and OUTDIR/summary.txt, each stage's log beside them.

    python3 scripts/gpu_check.py OUTDIR --kit DIR [--device cuda:0|cpu] [--quick]

Stages, in order:
  backend   the binaries find their libraries; the device is listed working
  parity    tessera_gpu_tests with the backend required; any skip but the
            multi-GPU test fails
  hf_tiny   tests/data/hf-tiny models: logits CPU vs device at batch 1 and 512
  models    random-weight GGUFs of real shapes (scripts/make_random_gguf.py)
  model_parity  logits at batch 1 and 512 and 32 greedy tokens, CPU vs device
  serve     `tessera serve` on the device: 32 concurrent requests, each equal
            to the same request alone (text and log-probabilities)
  bench     batch-1 decode and 512-token prefill tok/s and weight GB/s, and
            llama.cpp's llama-bench on the same files when --llama-bench
  memcheck  compute-sanitizer memcheck over the parity suites (Backends/*)

With --device cpu (the dry run CI makes) the CPU is compared with itself
(another thread count) and the stages that need an accelerator (parity,
memcheck) are skipped by name. --quick makes the small shapes only.
"""
import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

REPO = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts"))
sys.path.insert(0, str(REPO / "load_tests"))

import gpu_check_models  # noqa: E402
from gpu_check_models import StageFailed  # noqa: E402

PROMPT = ("The history of the printing press begins in the fifteenth century, when movable type and oil-based inks "
          "changed how books were made. Within fifty years presses were at work in more than two hundred cities.")


# The stages that run on the random models the `models` stage writes.
NEEDS_MODELS = ("model_parity", "serve", "bench")


class Stage:
    """One stage: its time limit, its log and its outcome."""

    def __init__(self, name, limit_s, out):
        self.name, self.limit_s = name, limit_s
        self.deadline = time.monotonic() + limit_s
        self.log = open(out / f"{name}.log", "w")
        self.details = {}

    def remaining(self):
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise StageFailed(f"over its limit of {self.limit_s} s")
        return left

    def run(self, cmd, env=None, check=True):
        """Runs cmd within the stage's time; its output goes to the log."""
        self.log.write("$ " + " ".join(map(str, cmd)) + "\n")
        self.log.flush()
        try:
            done = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=self.remaining(),
                                  env=env, errors="replace")
        except subprocess.TimeoutExpired:
            raise StageFailed(f"over its limit of {self.limit_s} s in: {' '.join(map(str, cmd[:3]))}")
        self.log.write(done.stdout[-20000:] + done.stderr[-20000:] + f"\n(exit {done.returncode})\n")
        self.log.flush()
        if check and done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
            raise StageFailed(f"{pathlib.Path(str(cmd[0])).name} exited {done.returncode}: " + " | ".join(tail))
        return done


class Check:
    def __init__(self, args):
        self.args = args
        self.out = args.out
        self.kit = args.kit.resolve()
        self.tessera = self.kit / "bin" / "tessera"
        self.device = args.device
        self.accelerator = args.device != "cpu"
        # The CPU side of each comparison; on a dry run, the CPU against itself.
        self.cpu_threads = str(min(8, os.cpu_count() or 1))
        self.other = (["--device", self.device] if self.accelerator
                      else ["--device", "cpu", "-t", str(max(1, int(self.cpu_threads) // 2))])
        self.results = []
        self.models = []

    def stage(self, name, limit_s, body, needs_accelerator=False):
        began = time.monotonic()
        if needs_accelerator and not self.accelerator:
            self.results.append({"stage": name, "status": "skipped", "seconds": 0,
                                 "why": "needs an accelerator (dry run on the CPU)"})
            return
        stage = Stage(name, limit_s, self.out)
        status, why = "passed", ""
        try:
            if name in NEEDS_MODELS and not self.models:
                raise StageFailed("no models (the models stage failed)")
            body(stage)
        except StageFailed as e:
            status, why = "failed", str(e)
        except Exception as e:  # a bug in the check itself still ends as a named failure
            status, why = "failed", f"{type(e).__name__}: {e}"
        seconds = round(time.monotonic() - began, 1)
        self.results.append({"stage": name, "status": status, "seconds": seconds, "limit_s": limit_s,
                             "why": why, **stage.details})
        print(f"{name}: {status} in {seconds} s{(': ' + why) if why else ''}", flush=True)

    # --- stages -------------------------------------------------------------

    def backend(self, st):
        missing = []
        for program in [self.tessera, self.kit / "bin" / "tessera_gpu_tests"] + sorted((self.kit / "backends").glob("*.so")):
            text = st.run(["ldd", program], check=False).stdout
            missing += [f"{program.name}: {line.split()[0]}" for line in text.splitlines() if "not found" in line]
        if missing and (self.accelerator or not all("backend-" in m for m in missing)):
            raise StageFailed("libraries not found: " + ", ".join(missing))
        listed = json.loads(st.run([self.tessera, "backends", "--json"]).stdout)
        kind = self.device.split(":")[0]
        entry = next((b for b in listed["backends"] if b["backend"] == kind), None)
        if entry is None or not entry["devices"]:
            why = (entry or {}).get("unusable_devices") or (entry or {}).get("reason") or "backend not listed"
            raise StageFailed(f"no working {self.device}: {why}")
        st.details["devices"] = [d["description"] for d in entry["devices"]]

    def parity(self, st):
        xml_path = self.out / "parity.xml"
        env = dict(os.environ, TESSERA_EXPECT_BACKENDS=self.device.split(":")[0],
                   TESSERA_TEST_DATA_DIR=str(REPO / "tests" / "data"))
        done = st.run([self.kit / "bin" / "tessera_gpu_tests", f"--gtest_output=xml:{xml_path}"], env=env, check=False)
        tests, failed, skipped = 0, [], []
        for case in ET.parse(xml_path).getroot().iter("testcase"):
            tests += 1
            name = f"{case.get('classname')}.{case.get('name')}"
            if case.find("failure") is not None or case.find("error") is not None:
                failed.append(name)
            elif case.find("skipped") is not None or case.get("result") == "skipped":
                skipped.append(name)
        unexpected_skips = [s for s in skipped if "TwoRanks" not in s]
        st.details.update(tests=tests, failed=failed, skipped=skipped)
        if failed or unexpected_skips or done.returncode != 0:
            raise StageFailed(f"{len(failed)} failed, {len(unexpected_skips)} skipped that must run"
                              f" (of {tests}): {(failed + unexpected_skips)[:8]}")

    def compare_logits(self, st, model, label, extra=()):
        """Worst per-position max|device - cpu| / max|cpu| at batch 1 and 512."""
        errors = {}
        for batch in (1, 512):
            files = {}
            for side, device in (("cpu", ["--device", "cpu", "-t", self.cpu_threads]), ("device", self.other)):
                files[side] = self.args.work / f"logits-{side}.f32"
                st.run([self.tessera, "logits", "-m", model, "-p", PROMPT, "-o", files[side], "--batch", batch,
                        *device, *extra])
            errors[f"batch{batch}"] = gpu_check_models.relative_logit_error(files["cpu"], files["device"])
        st.details.setdefault("logits", {})[label] = errors
        return errors

    def hf_tiny(self, st):
        worst = 0.0
        models = sorted(p for p in (REPO / "tests" / "data" / "hf-tiny").iterdir() if (p / "config.json").exists())
        for model in models[:3] if self.args.quick else models:
            errors = self.compare_logits(st, model, model.name)
            worst = max(worst, *errors.values())
        st.details["worst"] = worst
        if not worst <= self.args.float_tolerance:
            raise StageFailed(f"logits differ by {worst:.3g} (tolerance {self.args.float_tolerance})")

    def make_models(self, st):
        self.models = gpu_check_models.make(st, self.args.models_dir, quick=self.args.quick)
        st.details["models"] = [m.name for m in self.models]

    def model_parity(self, st):
        worst, greedy = 0.0, {}
        for model in self.models:
            errors = self.compare_logits(st, model, model.name)
            worst = max(worst, *errors.values())
            greedy[model.name] = gpu_check_models.greedy_agreement(st, self.tessera, model, PROMPT, self.cpu_threads,
                                                                   self.other)
        st.details.update(worst=worst, greedy=greedy)
        problems = [f"{name}: {g['verdict']}" for name, g in greedy.items() if g["verdict"] not in ("equal", "near tie")]
        if not worst <= self.args.quant_tolerance:
            problems.append(f"logits differ by {worst:.3g} (tolerance {self.args.quant_tolerance})")
        if problems:
            raise StageFailed("; ".join(problems))

    def serve(self, st):
        st.details.update(gpu_check_models.serve_batch_invariance(st, self.tessera, self.models[0], self.other,
                                                                  self.args.work, quick=self.args.quick))

    def bench(self, st):
        st.details.update(gpu_check_models.bench(st, self.tessera, self.models, self.other, self.args.llama_bench,
                                                 self.accelerator, quick=self.args.quick))

    def memcheck(self, st):
        sanitizer = shutil.which("compute-sanitizer") or "/usr/local/cuda/bin/compute-sanitizer"
        if not os.path.exists(sanitizer):
            raise StageFailed("compute-sanitizer not found")
        env = dict(os.environ, TESSERA_TEST_DATA_DIR=str(REPO / "tests" / "data"))
        done = st.run([sanitizer, "--tool", "memcheck", "--error-exitcode", "3", self.kit / "bin" / "tessera_gpu_tests",
                       "--gtest_filter=Backends/*"], env=env, check=False)
        summary = [line for line in done.stdout.splitlines() if "ERROR SUMMARY" in line]
        st.details["summary"] = summary[-1] if summary else ""
        if done.returncode != 0:
            raise StageFailed(f"exit {done.returncode}: {st.details['summary'] or 'see memcheck.log'}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=pathlib.Path)
    parser.add_argument("--kit", type=pathlib.Path, required=True)
    parser.add_argument("--device", default="cuda:0")
    parser.add_argument("--quick", action="store_true",
                        help="the small shapes, three tiny models, fewer requests and tokens (a dry run on 2 cores)")
    parser.add_argument("--work", type=pathlib.Path, default=pathlib.Path("/tmp/tessera-gpu-check"),
                        help="scratch: the random models and logits (kept out of OUTDIR)")
    parser.add_argument("--models-dir", type=pathlib.Path, default=None)
    parser.add_argument("--llama-bench", default=None)
    parser.add_argument("--stages", default="backend,parity,hf_tiny,models,model_parity,serve,bench,memcheck")
    parser.add_argument("--float-tolerance", type=float, default=1e-3)
    parser.add_argument("--quant-tolerance", type=float, default=5e-3)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    args.work.mkdir(parents=True, exist_ok=True)
    args.models_dir = args.models_dir or args.work / "models"
    check = Check(args)
    began = time.monotonic()
    plan = {"backend": (30, check.backend, False), "parity": (120, check.parity, True),
            "hf_tiny": (60, check.hf_tiny, False), "models": (90, check.make_models, False),
            "model_parity": (120, check.model_parity, False), "serve": (60, check.serve, False),
            "bench": (300, check.bench, False), "memcheck": (90, check.memcheck, True)}
    for name in args.stages.split(","):
        limit, body, needs_accelerator = plan[name]
        check.stage(name, limit, body, needs_accelerator)
        ok = write_summary(args, check.results, round(time.monotonic() - began, 1))  # after each stage: a cut-off run keeps what ran
        if name == "backend" and check.results[-1]["status"] == "failed":
            break  # nothing else can run
    print((args.out / "summary.txt").read_text())
    return 0 if ok else 1


def write_summary(args, results, total):
    ok = all(r["status"] != "failed" for r in results)
    report = {"device": args.device, "total_s": total, "passed": ok, "stages": results}
    (args.out / "summary.json").write_text(json.dumps(report, indent=1))
    lines = [f"{r['stage']:13} {r['status']:8} {r['seconds']:7.1f} s  {r.get('why', '')}" for r in results]
    lines.append(f"{'total':13} {'passed' if ok else 'FAILED':8} {total:7.1f} s")
    (args.out / "summary.txt").write_text("\n".join(lines) + "\n")
    return ok


if __name__ == "__main__":
    sys.exit(main())
