"""What a crafted log costs `kb match`, as a ratio to a benign log of the same size (issue 38 item 3).

Usage: .venv/bin/python bench/hostile_logs.py [--mib N] [--runs N] [--json]

Builds, in memory, logs of the same size: `benign` (ordinary log words, no error line), `benign+facts`
(the same with one matching line, so the facts are read), and the crafted shapes of the attack review
(notes/attack-review-2026-12-05.md, N3): `facts` (a facts rule's words then a long run of spaces, the
quadratic shape of `driver version *:? *`), `wrapped` (pairs of lines, the first holding all but one
word of many rules, the next the missing words: every rule is tried wrapped over every run of lines),
`wrapped-short` (the same, one rule per pair) and `anchors` (lines holding every anchor). Each is
matched in this process as `kb match --json FILE` does (kb.cli.main), best of --runs, and printed
with its ratio to `benign` and to `real` (the corpus's real logs one after another: what logs that
hold error lines cost). tests/test_hostile_logs.py asserts a generous bound on the same ratios.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

WORDS = ("the of model server request loading weights tokens batch cache worker engine started finished "
         "scheduler prefill decode throughput latency replica metrics").split()


def _fill(unit: str, size: int) -> str:
    return (unit * (size // max(1, len(unit)) + 1))[:size].rsplit("\n", 1)[0] + "\n"


def benign(size: int) -> str:
    rng = random.Random(1)
    lines, total = [], 0
    while total < size:
        line = "INFO " + " ".join(rng.choice(WORDS) for _ in range(14)) + "\n"
        lines.append(line)
        total += len(line)
    return "".join(lines)[:size].rsplit("\n", 1)[0] + "\n"


def real(size: int) -> str:
    """The real logs of tests/corpus/ (error lines, tracebacks, nvidia-smi tables, vLLM and SGLang
    prefixes on every line) one after another, repeated to `size`."""
    text = "".join(path.read_text(encoding="utf-8", errors="replace") + "\n"
                   for path in sorted((ROOT / "tests" / "corpus" / "logs").glob("*.log")))
    return _fill(text, size)


def _rules():
    from kb import ENTRIES
    from kb.triage.rules import export, load_rules

    rules, problems = load_rules(ENTRIES)
    assert not problems, problems
    return export(rules)["rules"]


def wrapped_pairs(rules: list[dict], width: int) -> str:
    """Pairs of lines: the first holds every word but one of as many rules as fit in `width`
    characters, the next the missing words; both end in a digit, so either may be a break."""
    first, second, block = [], [], []
    for rule in rules:
        miss = next((w for w in rule["words"] if w not in rule["options"] + rule["edges"] and len(w) > 2), None)
        if miss is None:
            continue
        words = [w for w in rule["words"] if w != miss]
        if first and len(" ".join(first + words)) > width:
            block.append(" ".join(first) + " 1\n" + " ".join(second) + " 1\n")
            first, second = [], []
        first += words
        second.append(miss)
    block.append(" ".join(first) + " 1\n" + " ".join(second) + " 1\n")
    return "".join(block)


def logs(size: int) -> dict[str, str]:
    rules = _rules()
    plain = benign(size)
    anchors = " ".join(sorted({r["anchor"] for r in rules if r["anchor"]}))
    return {
        "benign": plain,
        "real": real(size),
        "benign+facts": "PleOffload: registered 1 PleOffloadLayer(s)\nNVIDIA GeForce RTX 5090\n" + plain[: size - 80],
        "facts": "PleOffload: registered 1 PleOffloadLayer(s)\n" + _fill("driver version" + " " * 4080 + "x\n", size),
        "wrapped": _fill(wrapped_pairs(rules, 3900), size),
        "wrapped-short": _fill(wrapped_pairs(rules, 1), size),
        "anchors": _fill(anchors[:4000] + " 1\n", size),
    }


def run(path: Path) -> float:
    from kb import cli

    started = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        cli.main(["match", "--json", str(path)])
    return time.perf_counter() - started


def measure(size: int, runs: int) -> dict[str, float]:
    """Seconds (best of `runs`) for each log, all of `size` bytes, matched side by side."""
    times: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as folder:
        paths = {}
        for name, text in logs(size).items():
            paths[name] = Path(folder) / f"{name}.log"
            paths[name].write_text(text, encoding="utf-8")
        run(paths["benign"])  # rules loaded and cached before anything is timed
        for _ in range(runs):
            for name, path in paths.items():
                times[name] = min(times.get(name, float("inf")), run(path))
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mib", type=float, default=1.0, help="size of each log in MiB (default 1)")
    parser.add_argument("--runs", type=int, default=3, help="runs of each log; the best is kept (default 3)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    times = measure(int(args.mib * (1 << 20)), args.runs)
    ratios = {name: t / times["benign"] for name, t in times.items()}
    real = {name: t / times["real"] for name, t in times.items()}
    if args.json:
        print(json.dumps({"seconds": times, "ratio": ratios, "ratio_to_real": real}, indent=2))
    else:
        for name, seconds in times.items():
            print(f"{name:14} {seconds:8.3f} s  {ratios[name]:6.1f}x benign  {real[name]:5.2f}x real")
    return 0


if __name__ == "__main__":
    sys.exit(main())
