"""Benchmark: `kb match` over a generated log against `grep -F -f` (the floor), side by side.

Usage: .venv/bin/python bench/match.py [--mb 100] [--runs 5] [--before CHECKOUT]

Writes a log of serving noise (vLLM, Ray, SGLang, dmesg lines, some holding words that signatures
hold too, such as `temperature`, `available`, `attention`), near-misses (signature texts with
their last word changed) and a few signature lines, then times in alternation, on the same file:
`grep -F -n -f` over the literal pieces of every signature (the text between placeholders, or the
whole text, of four characters or more) and `kb match --json`, from its cached rules (one run
each first, untimed, warms the cache and the page cache). Both write their output to a file:
GNU grep stops at its first match when its output is /dev/null, which made an earlier version of
this benchmark time a third of the log. Prints the wall-clock and CPU medians and their ratios,
and the start-up alone (`kb match` on an empty log). `--before` times another checkout's
`kb match` too (`git worktree add /tmp/before HEAD`, say), in the same alternation. Not a test:
these machines are noisy, so the medians and the ratio are what to read.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kb.records import lint, patterns  # noqa: E402

STAMP = "{mm}-{dd} {hh}:{mi}:{ss}"
NOISE = [
    "(EngineCore_DP0 pid={pid}) INFO " + STAMP + " [core.py:{n}] step {n} running={r} waiting=0 kv_cache_usage={f}%",
    "INFO " + STAMP + " [loggers.py:{n}] Avg prompt throughput: {f} tokens/s, Avg generation throughput: {f} tokens/s",
    "(RayWorkerWrapper pid={pid}, ip=10.0.{r}.{r}) INFO " + STAMP + " [worker.py:{n}] Memory profiling takes {f} "
    "seconds [repeated {r}x across cluster]",
    "[2026-04-06 {hh}:{mi}:{ss} TP{r}] Decode batch. #running-req: {r}, #token: {n}, token usage: 0.{r}, "
    "gen throughput (token/s): {f}",
    "[{n}.{n}] NVRM: GPU at PCI:0000:0{r}:00: GPU-{pid} temperature {r}C",
    "INFO:     127.0.0.1:{pid} - \"POST /v1/chat/completions HTTP/1.1\" 200 OK",
    "WARNING " + STAMP + " [scheduler.py:{n}] Sequence group {n} is preempted by PreemptionMode.RECOMPUTE",
    # Lines that hold words some signatures hold: a prefilter that looks for those words finds them.
    "INFO " + STAMP + " [logger.py:{n}] Received request chatcmpl-{pid}: params: SamplingParams(n=1, "
    "temperature=0.{r}, top_p=0.95, max_tokens={n}), prompt_token_ids: None",
    "INFO " + STAMP + " [gpu_worker.py:{n}] Available KV cache memory: {f} GiB",
    "INFO " + STAMP + " [cuda.py:{n}] Using FLASHINFER attention backend out of potential backends: "
    "['FLASHINFER', 'FLASH_ATTN']",
]


def noise_line(rng: random.Random) -> str:
    return rng.choice(NOISE).format(
        pid=rng.randrange(100, 99999), mm=f"{rng.randrange(1, 13):02d}", dd=f"{rng.randrange(1, 29):02d}",
        hh=f"{rng.randrange(24):02d}", mi=f"{rng.randrange(60):02d}", ss=f"{rng.randrange(60):02d}",
        n=rng.randrange(1, 5000), r=rng.randrange(1, 9), f=f"{rng.uniform(0, 999):.1f}")


def near_miss(text: str, rng: random.Random) -> str:
    words = text.split(" ")
    words[-1] = "".join(rng.sample(words[-1], len(words[-1]))) + "x"
    return " ".join(words)


def write_log(path: Path, megabytes: int, signatures: list[str], seed: int = 1) -> tuple[int, int, int]:
    """(lines, planted signature lines, near-misses) of a log of about `megabytes` MiB."""
    rng = random.Random(seed)
    block = "\n".join(noise_line(rng) for _ in range(20000)) + "\n"
    target = megabytes * 1024 * 1024
    written = lines = planted = missed = 0
    prefix = "(EngineCore_DP0 pid=1) ERROR 01-28 06:36:45 [core.py:946] "
    with path.open("w", encoding="utf-8") as out:
        while written < target:
            out.write(block)
            written += len(block)
            lines += 20000
            for _ in range(20):
                out.write(prefix + near_miss(rng.choice(signatures), rng) + "\n")
                lines += 1
                missed += 1
            if rng.random() < 0.05:
                out.write(prefix + rng.choice(signatures) + "\n")
                lines += 1
                planted += 1
    return lines, planted, missed


def pieces(signatures) -> list[str]:
    """The literal pieces of the signatures: what a plain text search would look for."""
    out = []
    for signature in signatures:
        parts = patterns.parse(signature.match) if signature.match else [("text", signature.text)]
        out += [value.strip() for kind, value in parts if kind == "text" and len(value.strip()) >= 4]
    return sorted(set(out))


def timed(command: list[str], out: Path, **kwargs) -> tuple[float, float]:
    """Wall-clock and CPU seconds (user + system) of one run. Its output goes to a file: GNU grep
    stops at the first match when its output is /dev/null."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    with out.open("wb") as stream:
        subprocess.run(command, stdout=stream, stderr=subprocess.DEVNULL, check=False, **kwargs)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=int, default=100)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--before", type=Path, help="another checkout whose `kb match` to time too")
    args = parser.parse_args()
    signatures = [s for c in lint.check([ROOT / "kb" / "entries"]).cells for s in c.entry.signatures]
    texts = [s.text for s in signatures]
    with tempfile.TemporaryDirectory() as tmp:
        log, empty, listed = Path(tmp) / "serving.log", Path(tmp) / "empty.log", Path(tmp) / "pieces.txt"
        lines, planted, missed = write_log(log, args.mb, texts)
        empty.write_bytes(b"")
        listed.write_text("\n".join(pieces(signatures)) + "\n", encoding="utf-8")
        kb = [str(ROOT / ".venv" / "bin" / "kb"), "match", "--json"]
        commands = {
            "grep -F -n -f pieces": (["grep", "-F", "-n", "-f", str(listed), str(log)], {}),
            "kb match --json": (kb + [str(log)], {}),
            "kb match, empty log (start-up)": (kb + [str(empty)], {}),
        }
        if args.before:
            before = args.before.resolve()
            old = [sys.executable, "-m", "kb.cli", "match", "--json", "--entries", str(before / "kb" / "entries")]
            env = {**os.environ, "PYTHONPATH": str(before)}
            commands[f"before: {before.name}"] = (old + [str(log)], {"cwd": before, "env": env})
            commands[f"before: {before.name}, empty log"] = (old + [str(empty)], {"cwd": before, "env": env})
        out = Path(tmp) / "out.txt"
        for command, kwargs in commands.values():
            timed(command, out, **kwargs)
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
        for _ in range(args.runs):
            for name, (command, kwargs) in commands.items():
                times[name].append(timed(command, out, **kwargs))
        size = log.stat().st_size
    print(f"log: {size / 2**20:.0f} MiB ({size} bytes), {lines} lines, {planted} signature lines, "
          f"{missed} near-misses; {len(pieces(signatures))} literal pieces of {len(signatures)} signatures; "
          f"{args.runs} runs each")
    wall = {name: statistics.median(w for w, _ in values) for name, values in times.items()}
    cpu = {name: statistics.median(c for _, c in values) for name, values in times.items()}
    for name in times:
        print(f"{name + ':':36} wall median {wall[name]:.3f}s (min {min(w for w, _ in times[name]):.3f}s), "
              f"CPU median {cpu[name]:.3f}s")
    floor = "grep -F -n -f pieces"
    compared = ["kb match --json"] + ([f"before: {args.before.resolve().name}"] if args.before else [])
    for name in compared:
        print(f"ratio {name} / grep -F -f: wall {wall[name] / wall[floor]:.2f}x, CPU {cpu[name] / cpu[floor]:.2f}x"
              + (" (target: within 3x)" if name == compared[0] else ""))


if __name__ == "__main__":
    main()
