"""Benchmark: `kb match` over a generated log against `grep -F -f` (the floor), side by side.

Usage: .venv/bin/python bench/match.py [--mb 100] [--runs 3]
Writes a log of realistic serving noise (vLLM, Ray, SGLang, dmesg lines) with a few signature
lines mixed in, then times both commands on the same file in alternation and prints the ratio
of the medians. Not a test: these machines are noisy, so only the ratio is reported.
"""

from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kb import lint  # noqa: E402

NOISE = [
    "(EngineCore_DP0 pid={pid}) INFO {mm}-{dd} {hh}:{mi}:{ss} [core.py:{n}] step {n} running={r} waiting=0 kv_cache_usage={f}%",
    "INFO {mm}-{dd} {hh}:{mi}:{ss} [loggers.py:{n}] Avg prompt throughput: {f} tokens/s, Avg generation throughput: {f} tokens/s",
    "(RayWorkerWrapper pid={pid}, ip=10.0.{r}.{r}) INFO {mm}-{dd} {hh}:{mi}:{ss} [worker.py:{n}] Memory profiling takes {f} seconds [repeated {r}x across cluster]",
    "[2026-04-06 {hh}:{mi}:{ss} TP{r}] Decode batch. #running-req: {r}, #token: {n}, token usage: 0.{r}, gen throughput (token/s): {f}",
    "[{n}.{n}] NVRM: GPU at PCI:0000:0{r}:00: GPU-{pid} temperature {r}C",
    "INFO:     127.0.0.1:{pid} - \"POST /v1/chat/completions HTTP/1.1\" 200 OK",
    "WARNING {mm}-{dd} {hh}:{mi}:{ss} [scheduler.py:{n}] Sequence group {n} is preempted by PreemptionMode.RECOMPUTE",
]


def noise_line(rng: random.Random) -> str:
    return rng.choice(NOISE).format(
        pid=rng.randrange(100, 99999), mm=f"{rng.randrange(1, 13):02d}", dd=f"{rng.randrange(1, 29):02d}",
        hh=f"{rng.randrange(24):02d}", mi=f"{rng.randrange(60):02d}", ss=f"{rng.randrange(60):02d}",
        n=rng.randrange(1, 5000), r=rng.randrange(1, 9), f=f"{rng.uniform(0, 999):.1f}")


def write_log(path: Path, megabytes: int, signatures: list[str], seed: int = 1) -> int:
    rng = random.Random(seed)
    block = "\n".join(noise_line(rng) for _ in range(20000)) + "\n"
    target = megabytes * 1024 * 1024
    written = planted = 0
    with path.open("w", encoding="utf-8") as out:
        while written < target:
            out.write(block)
            written += len(block)
            if rng.random() < 0.05:
                out.write(f"(EngineCore_DP0 pid=1) ERROR 01-28 06:36:45 [core.py:946] {rng.choice(signatures)}\n")
                planted += 1
    return planted


def timed(command: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, stdout=subprocess.DEVNULL, check=False)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=int, default=100)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    cells = lint.check([ROOT / "kb" / "entries"]).cells
    literals = [s.text for c in cells for s in c.entry.signatures if s.kind != "symptom"]
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "serving.log"
        planted = write_log(log, args.mb, literals)
        patterns = Path(tmp) / "signatures.txt"
        patterns.write_text("\n".join(literals) + "\n", encoding="utf-8")
        kb = [str(ROOT / ".venv" / "bin" / "kb"), "match", "--json", str(log)]
        grep = ["grep", "-F", "-n", "-f", str(patterns), str(log)]
        kb_times, grep_times = [], []
        for _ in range(args.runs):
            grep_times.append(timed(grep))
            kb_times.append(timed(kb))
        size = log.stat().st_size / 1024 / 1024
    kb_median, grep_median = statistics.median(kb_times), statistics.median(grep_times)
    print(f"log: {size:.0f} MB, {planted} planted signature lines, {len(literals)} literal signatures")
    print(f"grep -F -f (floor): median {grep_median:.2f}s over {args.runs} runs")
    print(f"kb match:           median {kb_median:.2f}s over {args.runs} runs")
    print(f"ratio kb match / grep -F -f: {kb_median / grep_median:.2f}x (target: within 3x)")


if __name__ == "__main__":
    main()
