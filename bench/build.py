"""Benchmark: the site build at 100, 1,000 and 10,000 synthetic cells, stage by stage, against a floor.

Usage: .venv/bin/python bench/build.py [--sizes 100 1000 10000] [--work .cache/bench-build]
           [--check-timeout 180] [--full-timeout 180] [--profile-size 1000] [--no-profile]
           [--searches 5] [--no-after]

For each size N the synthetic knowledge base of bench/synth.py is written to WORK/synth-N and
every stage runs in a child process of its own, so each stage's wall time and peak memory
(ru_maxrss of the child and its descendants, from os.wait4) are separable:

  load+validate  kb.records.lint.check over the entry files, as it is (per-file load and schema, then the
                 cross checks); past --check-timeout its time is estimated (per-file part as
                 measured, cross checks grown as N squared from the smaller size)
  render         kb.site.pages.Renderer.all_pages() (cell, pointer, disambiguation and index bodies)
  exports        kb.site.export (JSON API, OSV, feed, JSON-LD per cell page) and triage patterns
  mkdocs         the mkdocs build with the Material theme through hooks/kb_pages.py, minus the
                 hook's generate time; lint.check is replaced by the pickled result and the
                 Pagefind step by a no-op, so this is mkdocs and the theme alone
  search index   Pagefind over the site the mkdocs stage built
  full kb build  `kb build --entries DIR -d OUT`, as a user runs it (nothing replaced, caches cold)
  floor          the same Markdown bodies (mechanism) parsed with python-markdown and each
                 record written through one jinja2 page template; records read with libyaml

The render, exports and mkdocs stages start from cells prepared once per size with libyaml and
the schema (no cross checks; not a pipeline stage, not timed as one), pickled; their peak
includes those cells. A full build that runs past --full-timeout is reported as an estimate:
its stages (kb build checks once and hands the result to the hook).
Output size: MB on disk of what the stage writes (render and exports: bytes of the bodies and
files handed on), and KB per cell page (mean / max of the HTML of cell pages).

After each full build, as a user runs them: `kb build` again with nothing changed, and after one
edited title (the time until kb build says its pages are in place, and until it ends with the
search index); `kb check` with a cold cache; `kb match` start-up with its rules cached (a short
log, best of three); cold searches in Chromium (bench/search_cold.py). The caches start cold
(.cache/kb/ emptied) and the work folder is inside the checkout, where they apply.

Targets (#12), at the largest size: full build within 1.5x the floor, under 60 s, under 2 GB
peak, at most 40 KB of HTML per cell page; rebuild with nothing changed under 5 s, one edited
title on disk under 2 s; kb check under 15 s; kb match start-up under 0.3 s; a cold search
within 300 ms and 150 KB. When a target is missed, the stages behind it are profiled with cProfile at
--profile-size (profiling the largest size would take many times its wall time) and the top
functions are printed with the gap.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pickle
import pstats
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

TARGET_RATIO = 1.5
TARGET_SECONDS = 60.0
TARGET_PEAK_MB = 2048.0  # 2 GB, as MiB of resident memory
TARGET_PAGE_KB = 40.0
TARGET_WARM = 5.0  # rebuild with nothing changed
TARGET_EDIT = 2.0  # rebuild after one edited title, to the page on disk
TARGET_CHECK = 15.0  # kb check, cold
TARGET_MATCH = 0.3  # kb match start-up with its rules cached
TARGET_SEARCH_MS = 300
TARGET_SEARCH_KB = 150
MARK = "BENCH-JSON "
PROGRESS = "BENCH-PROGRESS "
STAGES = ["load+validate", "render", "exports", "mkdocs", "search index", "full kb build", "floor"]

FLOOR_TEMPLATE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{ title }}</title>
<meta name="description" content="{{ summary }}"></head>
<body><main><article>
<h1>{{ signature }}</h1>
<p><strong>{{ title }}</strong></p>
<p>{{ summary }}</p>
<h2>Why it happens</h2>
{{ mechanism }}
</article></main></body></html>
"""


# ---------------------------------------------------------------- sizes

def _tree_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0


def cell_page_sizes(site: Path) -> list[int]:
    """Byte sizes of the cell pages of a built site (pages whose article is a `kb-cell`)."""
    sizes = []
    for page in (site / "e").glob("*/index.html"):
        data = page.read_bytes()
        if b'<article class="kb-cell"' in data:
            sizes.append(len(data))
    return sizes


def largest_page(site: Path) -> tuple[str, int]:
    best = ("", 0)
    for page in site.rglob("*.html"):
        size = page.stat().st_size
        if size > best[1]:
            best = (str(page.relative_to(site)), size)
    return best


def _site_sizes(site: Path) -> dict:
    cells = cell_page_sizes(site)
    name, size = largest_page(site)
    html = sum(p.stat().st_size for p in site.rglob("*.html"))
    return {"output_mb": _tree_bytes(site) / 1e6, "html_mb": html / 1e6,
            "html_pages": sum(1 for _ in site.rglob("*.html")),
            "cell_kb_mean": sum(cells) / len(cells) / 1024 if cells else None,
            "cell_kb_max": max(cells) / 1024 if cells else None, "largest": name, "largest_kb": size / 1024}


# ---------------------------------------------------------------- stages (run in the child)

def _cells(cache: Path):
    with cache.open("rb") as stream:
        return pickle.load(stream)


def _profiled(enabled: bool):
    profile = cProfile.Profile() if enabled else None

    class _Context:
        def __enter__(self):
            if profile:
                profile.enable()
            self.started = time.perf_counter()
            return self

        def __exit__(self, *exc):
            self.seconds = time.perf_counter() - self.started
            if profile:
                profile.disable()
            return False

        def summary(self, top: int = 14) -> str:
            if not profile:
                return ""
            out = io.StringIO()
            stats = pstats.Stats(profile, stream=out)
            stats.sort_stats("tottime").print_stats(top)
            stats.sort_stats("cumulative").print_stats(r"kb/|hooks/", top)
            return _trim_profile(out.getvalue())

    return _Context()


def _trim_profile(text: str) -> str:
    keep = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith(("Ordered by", "List reduced", "ncalls")):
            if stripped.startswith("Ordered by"):
                keep.append("  -- " + stripped.lower())
            continue
        if "function calls" in stripped:
            continue
        keep.append("  " + stripped.replace(str(ROOT) + "/", "").replace(sys.prefix + "/", ""))
    return "\n".join(keep)


def _progress(name: str, started: float) -> None:
    print(f"{PROGRESS}{name} {time.perf_counter() - started:.3f}", flush=True)


def stage_check(args) -> dict:
    """lint.check as it is; prints when the per-file part ends and how long the cross checks
    and the look-alike rule take, so a run killed at its timeout still tells where it was."""
    from kb.records import crosscheck, lint

    started = time.perf_counter()
    cross, look = lint._cross_checks, getattr(crosscheck, "_look_alikes", None)

    def timed_cross(*a, **k):
        _progress("per-file", started)
        try:
            return cross(*a, **k)
        finally:
            _progress("cross-checks-done", started)

    def timed_look(*a, **k):
        began = time.perf_counter()
        try:
            return look(*a, **k)
        finally:
            print(f"{PROGRESS}look-alikes {time.perf_counter() - began:.3f}", flush=True)

    lint._cross_checks = timed_cross
    if look is not None:
        crosscheck._look_alikes = timed_look
    with _profiled(args.profile) as timer:
        result = lint.check([args.entries])
    if result.problems:
        raise SystemExit(f"{len(result.problems)} problem(s) in {args.entries}; run kb check")
    return {"seconds": timer.seconds, "cells": len(result.cells), "profile": timer.summary()}


def stage_prepare(args) -> dict:
    """The cells for the later stages, without lint's cross checks: libyaml and the schema only.

    Not a pipeline stage (kb build never does this); it lets render, exports and mkdocs be
    measured at sizes where lint.check alone runs past its timeout. Line numbers are left
    empty: they only serve problem messages."""
    import yaml

    from kb.records.lint import Cell
    from kb.records.schema import Entry

    class Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
        pass

    Loader.add_constructor("tag:yaml.org,2002:timestamp", lambda loader, node: loader.construct_scalar(node))
    started = time.perf_counter()
    cells = []
    for path in sorted(args.entries.glob("*.yaml")):
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=Loader)
        cells.append(Cell(path.stem, path, Entry.model_validate(data), {}))
    with args.cache.open("wb") as stream:
        pickle.dump(cells, stream, protocol=pickle.HIGHEST_PROTOCOL)
    return {"seconds": time.perf_counter() - started, "cells": len(cells)}


def stage_render(args) -> dict:
    from kb.site.pages import Renderer, Site

    cells = _cells(args.cache)
    with _profiled(args.profile) as timer:
        site = Site(cells)
        pages = Renderer(site).all_pages()
    cell_bodies = [len(p.body.encode()) for p in pages if p.kind == "cell"]
    largest = max(pages, key=lambda p: len(p.body))
    return {"seconds": timer.seconds, "pages": len(pages), "output_mb": sum(len(p.body.encode()) for p in pages) / 1e6,
            "cell_kb_mean": sum(cell_bodies) / len(cell_bodies) / 1024, "cell_kb_max": max(cell_bodies) / 1024,
            "largest": largest.url, "largest_kb": len(largest.body.encode()) / 1024, "profile": timer.summary()}


def stage_exports(args) -> dict:
    import json as json_lib

    from kb.doctor import facts
    from kb.site import export
    from kb.site.pages import Site
    from kb.triage import rules

    cells = _cells(args.cache)
    site = Site(cells)
    with _profiled(args.profile) as timer:
        files = export.files(site, None, facts.json_schema())
        files["triage/patterns.json"] = json_lib.dumps(rules.export(rules.rules(cells)), indent=1, sort_keys=True,
                                                       ensure_ascii=False) + "\n"
        jsonld = [export.jsonld(c, site, None) for c in site.cells]
    size = sum(len(v.encode()) for v in files.values()) + sum(len(v.encode()) for v in jsonld)
    return {"seconds": timer.seconds, "files": len(files), "output_mb": size / 1e6, "profile": timer.summary()}


def stage_mkdocs(args) -> dict:
    import logging

    from kb.records import lint
    from kb.site import build, index

    cells = _cells(args.cache)
    files = len(lint.entry_files([args.entries]))
    lint.check = lint.cached_check = lambda paths, *cache: lint.Result(cells=cells, problems=[], files=files)  # checked by the first stage
    index.build_index = lambda *_, **__: index.Indexed(0, 0, 0)  # the search stage indexes this site
    generate_seconds = []

    class _Grab(logging.Handler):
        def emit(self, record):
            message = record.getMessage()
            if message.startswith("kb: ") and "data files in" in message:
                generate_seconds.append(float(message.rsplit(" in ", 1)[1].rstrip("s")))

    logging.getLogger("mkdocs").addHandler(_Grab(logging.INFO))
    if args.out.exists():
        shutil.rmtree(args.out)
    with _profiled(args.profile) as timer:
        with open(os.devnull, "w") as quiet:
            stdout, sys.stdout = sys.stdout, quiet
            try:
                code = build.build(args.out, args.entries)
            finally:
                sys.stdout = stdout
    if code != 0:
        raise SystemExit(f"mkdocs build failed ({code})")
    generated = generate_seconds[0] if generate_seconds else 0.0
    return {"seconds": timer.seconds - generated, "with_generate": timer.seconds, "generate": generated,
            **_site_sizes(args.out), "profile": timer.summary()}


def stage_search(args) -> dict:
    from kb.site import incremental, index

    urls = incremental.load(args.out).indexed  # the mkdocs stage's kb build kept them
    shutil.rmtree(args.out / "pagefind", ignore_errors=True)
    started = time.perf_counter()
    summary = index.build_index(args.out, args.out / "pagefind", urls)
    seconds = time.perf_counter() - started
    return {"seconds": seconds, "output_mb": _tree_bytes(args.out / "pagefind") / 1e6,
            "pages": summary.pages, "shards": summary.shards}


def stage_floor(args) -> dict:
    import markdown as markdown_lib
    import yaml
    from jinja2 import Environment
    from markupsafe import Markup

    from kb.records.slug import slug

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    if args.out.exists():
        shutil.rmtree(args.out)
    with _profiled(args.profile) as timer:
        template = Environment(autoescape=True).from_string(FLOOR_TEMPLATE)
        md = markdown_lib.Markdown(extensions=["fenced_code", "tables", "sane_lists"])
        for path in sorted(args.entries.glob("*.yaml")):
            record = yaml.load(path.read_text(encoding="utf-8"), Loader=loader)
            md.reset()
            page = template.render(title=record["title"], summary=record["summary"],
                                   signature=record["signatures"][0]["text"],
                                   mechanism=Markup(md.convert(record["mechanism"])))
            folder = args.out / "e" / slug(record["signatures"][0]["text"])
            folder.mkdir(parents=True)
            (folder / "index.html").write_text(page, encoding="utf-8")
    sizes = [p.stat().st_size for p in (args.out / "e").glob("*/index.html")]
    return {"seconds": timer.seconds, "output_mb": _tree_bytes(args.out) / 1e6,
            "cell_kb_mean": sum(sizes) / len(sizes) / 1024, "cell_kb_max": max(sizes) / 1024,
            "profile": timer.summary()}


CHILD_STAGES = {"prepare": stage_prepare, "load+validate": stage_check, "render": stage_render, "exports": stage_exports,
                "mkdocs": stage_mkdocs, "search index": stage_search, "floor": stage_floor}


def child(args) -> int:
    os.chdir(ROOT)
    os.environ.setdefault("NO_MKDOCS_2_WARNING", "1")
    result = CHILD_STAGES[args.stage](args)
    print(MARK + json.dumps(result), flush=True)
    return 0


# ---------------------------------------------------------------- the parent

def run_child(command: list[str], timeout: float, log: Path, env: dict | None = None) -> dict:
    """Run `command` in a session of its own; wall seconds, peak RSS (MiB) and its JSON line."""
    started = time.perf_counter()
    with log.open("w") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT, start_new_session=True,
                                env=env)
    killed = threading.Event()

    def kill():
        killed.set()
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    timer = threading.Timer(timeout, kill)
    timer.start()
    _, status, usage = os.wait4(proc.pid, 0)
    timer.cancel()
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - started
    text = log.read_text(errors="replace")
    data, progress = {}, {}
    for line in text.splitlines():
        if line.startswith(MARK):
            data = json.loads(line[len(MARK):])
        elif line.startswith(PROGRESS):
            name, seconds = line[len(PROGRESS):].split()
            progress[name] = float(seconds)
    return {"wall": wall, "peak_mb": usage.ru_maxrss / 1024, "rc": proc.returncode, "timed_out": killed.is_set(),
            "data": data, "progress": progress, "log": str(log), "tail": "\n".join(text.splitlines()[-8:])}


def run_stage(stage: str, n: int, work: Path, timeout: float, profile: bool = False) -> dict:
    entries, cache = work / f"synth-{n}", work / f"cells-{n}.pickle"
    out = work / (f"floor-{n}" if stage == "floor" else f"site-{n}")
    log = work / f"{stage.replace(' ', '-').replace('+', '-')}-{n}{'-profile' if profile else ''}.log"
    if stage == "full kb build":
        target = work / f"full-{n}"
        shutil.rmtree(target, ignore_errors=True)
        env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
        result = run_child([str(Path(sys.executable).with_name("kb")), "build", "--preview", "--entries", str(entries), "-d",
                            str(target)], timeout, log, env)
        result["seconds"] = result["wall"]
        if result["rc"] == 0:
            result["data"] = _site_sizes(target)
        return result
    command = [sys.executable, str(Path(__file__).resolve()), "--stage", stage, "--entries", str(entries),
               "--out", str(out), "--cache", str(cache)] + (["--profile"] if profile else [])
    result = run_child(command, timeout, log)
    result["seconds"] = result["data"].get("seconds", result["wall"])
    return result


def _timed(command: list[str], marker: str | None = None) -> tuple[float, float | None, str]:
    """(wall seconds, seconds until a stdout line starting with `marker` appeared, output)."""
    started = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT,
                             env=dict(os.environ, NO_MKDOCS_2_WARNING="1"))
    seen, out = None, []
    for line in child.stdout:
        out.append(line)
        if seen is None and marker and line.startswith(marker):
            seen = time.perf_counter() - started
    child.wait()
    if child.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(command)} failed ({child.returncode}):\n{''.join(out[-20:])}")
    return time.perf_counter() - started, seen, "".join(out)


def after_build(n: int, work: Path, search_runs: int) -> dict:
    """What a contributor and a reader meet after the full build of N cells (run in the parent,
    each a command as a user runs it): kb build again with nothing changed and after one edited
    title (time to the pages on disk, and to the end with the search index), kb check with a
    cold cache, kb match's start-up with its rules cached, and cold searches in Chromium."""
    kb = str(Path(sys.executable).with_name("kb"))
    entries, site = work / f"synth-{n}", work / f"full-{n}"
    build = [kb, "build", "--preview", "--entries", str(entries), "-d", str(site)]
    out: dict = {}
    out["warm"], _, text = _timed(build, "pages:")
    out["warm_note"] = text.strip().splitlines()[-1]
    path = max(entries.glob("*.yaml"), key=lambda p: p.read_text(encoding="utf-8").count("  - id: "))
    text = path.read_text(encoding="utf-8")
    title = next(line for line in text.splitlines() if line.startswith("title:"))
    path.write_text(text.replace(title, "title: A title edited by the benchmark", 1), encoding="utf-8")
    out["edit_end"], out["edit_pages"], text = _timed(build, "pages:")
    out["edit_note"] = next((line for line in text.splitlines() if line.startswith("pages:")), "")
    for cached in (ROOT / ".cache" / "kb").glob("check-*.pickle"):
        cached.unlink()
    out["check"], _, _ = _timed([kb, "check", str(entries)])
    log = work / "match.log"
    log.write_text("INFO starting the server\n" * 20, encoding="utf-8")
    match = [kb, "match", str(log), "--entries", str(entries)]
    _timed(match)  # fills the rules cache
    out["match"] = min(_timed(match)[0] for _ in range(3))
    searched, _, text = _timed([sys.executable, str(ROOT / "bench" / "search_cold.py"), "--site", str(site),
                                "--entries", str(entries), "--searches", str(search_runs)])
    found = re.search(r"median (\d+) ms .*?, ([0-9.]+) KB gzip", text)
    out["search_ms"], out["search_kb"] = (float(found.group(1)), float(found.group(2))) if found else (None, None)
    out["search_note"] = text.strip().splitlines()[-1] if text.strip() else ""
    return out


def _fmt(value, spec: str, missing: str = "-") -> str:
    return missing if value is None else format(value, spec)


PIPELINE = ("load+validate", "render", "exports", "mkdocs", "search index")


def check_seconds(rows: dict[str, dict], n: int, results: dict[int, dict]) -> tuple[float, bool]:
    """lint.check's seconds at `n`, or (when it ran past its timeout) an estimate: the per-file
    part as measured (or linear from a smaller size) plus the cross checks grown as N squared
    from the largest smaller size that finished. Returns (seconds, estimated)."""
    row = rows["load+validate"]
    if not row["timed_out"]:
        return row["seconds"], False
    done = [m for m in sorted(results) if m < n and not results[m]["load+validate"]["timed_out"]]
    if not done:
        return row["wall"], True
    m = done[-1]
    before = results[m]["load+validate"]["progress"]
    per_file = row["progress"].get("per-file", before.get("per-file", 0) * n / m)
    cross = (before.get("cross-checks-done", 0) - before.get("per-file", 0)) * (n / m) ** 2
    return max(row["wall"], per_file + cross), True


def full_seconds(rows: dict[str, dict], n: int, results: dict[int, dict]) -> tuple[float, bool]:
    """The full build's seconds, or when it timed out an estimate: the sum of its stages."""
    full = rows["full kb build"]
    if not full["timed_out"]:
        return full["seconds"], False
    check, _ = check_seconds(rows, n, results)
    estimate = check + sum(rows[s]["seconds"] for s in PIPELINE[1:])
    return max(full["wall"], estimate), True


def print_table(n: int, rows: dict[str, dict], results: dict[int, dict]) -> None:
    print(f"\nN = {n:,} cells")
    print(f"  {'stage':<15}{'wall s':>9}{'peak MB':>9}{'out MB':>9}{'KB/cell pg':>12}  note")
    for stage in STAGES:
        row = rows.get(stage)
        if row is None:
            continue
        data, progress = row["data"], row.get("progress", {})
        note = ""
        if row["timed_out"]:
            wall, note = f">{row['wall']:.0f}", "timed out"
        elif row["rc"] != 0:
            wall, note = "fail", f"exit {row['rc']}, see {row['log']}"
        else:
            wall = f"{row['seconds']:.2f}"
        if stage == "load+validate" and (progress or row["timed_out"]):
            parts = [f"per-file {progress['per-file']:.1f}s" if "per-file" in progress else "per-file not done"]
            if "cross-checks-done" in progress:
                parts.append(f"cross checks {progress['cross-checks-done'] - progress['per-file']:.1f}s")
            if "look-alikes" in progress:
                parts.append(f"of which KB047 look-alikes {progress['look-alikes']:.1f}s")
            elif "per-file" in progress and row["timed_out"]:
                parts.append("killed inside the cross checks")
            if row["timed_out"]:
                estimate, _ = check_seconds(rows, n, results)
                parts.append(f"estimated {estimate:.0f}s in all")
            note = (note + "; " if note else "") + ", ".join(parts)
        if stage == "mkdocs" and data:
            note = f"{data['html_pages']:,} HTML pages; + generate {data['generate']:.1f}s in the hook"
        if stage == "render" and data:
            note = f"{data['pages']:,} page bodies, largest {data['largest']} {data['largest_kb']:,.0f} KB"
        if stage == "full kb build" and data and not row["timed_out"]:
            note = f"largest page {data['largest']} {data['largest_kb']:,.0f} KB"
        if stage == "full kb build" and row["timed_out"]:
            estimate, _ = full_seconds(rows, n, results)
            note += f"; estimated {estimate:.0f}s (its stages)"
        if stage == "search index" and data:
            note = f"Pagefind indexed {data['pages']:,} pages in {data['shards']} shard(s), one after the other"
        kb = ("{:.1f}/{:.1f}".format(data["cell_kb_mean"], data["cell_kb_max"])
              if data.get("cell_kb_mean") is not None else "-")
        print(f"  {stage:<15}{wall:>9}{row['peak_mb']:>9.0f}{_fmt(data.get('output_mb'), '.1f'):>9}{kb:>12}  {note}")
    stage_sum = sum(rows[s]["seconds"] for s in PIPELINE if s in rows)
    print(f"  sum of the five pipeline stages: {stage_sum:.1f}s{' (a lower bound)' if rows['load+validate']['timed_out'] else ''};"
          " kb build checks once and hands the result to the hook")
    floor = rows.get("floor")
    if "full kb build" in rows and floor and floor["rc"] == 0:
        seconds, estimated = full_seconds(rows, n, results)
        print(f"  ratio full/floor: {seconds / floor['seconds']:.1f}x ({seconds:.1f}s{' estimated' if estimated else ''}"
              f" / {floor['seconds']:.1f}s)")


def print_after(n: int, after: dict) -> None:
    print(f"  after the build: rebuild with nothing changed {after['warm']:.2f}s ({after['warm_note']})")
    print(f"    one edited title: pages on disk after {after['edit_pages'] or after['edit_end']:.2f}s, "
          f"search index after {after['edit_end']:.2f}s ({after['edit_note']})")
    print(f"    kb check, cold cache {after['check']:.2f}s; kb match start-up, rules cached {after['match']:.2f}s")
    print(f"    cold search: {after['search_note']}")


def verdict_after(after: dict) -> list[tuple[str, bool, str]]:
    edit = after["edit_pages"] or after["edit_end"]
    checks = [
        (f"rebuild with nothing changed under {TARGET_WARM:g}s", after["warm"] < TARGET_WARM, f"{after['warm']:.2f}s"),
        (f"one edited title on disk under {TARGET_EDIT:g}s", edit < TARGET_EDIT,
         f"{edit:.2f}s (the search index after {after['edit_end']:.2f}s)"),
        (f"kb check under {TARGET_CHECK:g}s", after["check"] < TARGET_CHECK, f"{after['check']:.2f}s"),
        (f"kb match start-up under {TARGET_MATCH:g}s", after["match"] < TARGET_MATCH, f"{after['match']:.2f}s"),
    ]
    if after["search_ms"] is not None:
        checks.append((f"cold search within {TARGET_SEARCH_MS} ms and {TARGET_SEARCH_KB} KB",
                       after["search_ms"] < TARGET_SEARCH_MS and after["search_kb"] <= TARGET_SEARCH_KB,
                       after["search_note"]))
    return checks


def verdict(n: int, rows: dict[str, dict], results: dict[int, dict]) -> list[tuple[str, bool, str]]:
    full, floor = rows["full kb build"], rows["floor"]
    seconds, estimated = full_seconds(rows, n, results)
    peak = max(rows[s]["peak_mb"] for s in PIPELINE + ("full kb build",))
    sizes = full["data"] if full["data"] else rows["mkdocs"]["data"]
    page_kb = sizes.get("cell_kb_max")
    bound = f" (estimated: the full build ran past its {full['wall']:.0f}s timeout)" if estimated else ""
    peak_note = " (the full build was killed; peak of the stages and of the killed build)" if full["timed_out"] else ""
    return [
        (f"full build within {TARGET_RATIO}x the floor", seconds <= TARGET_RATIO * floor["seconds"],
         f"{seconds / floor['seconds']:.1f}x ({seconds:.1f}s vs floor {floor['seconds']:.1f}s){bound}"),
        (f"full build under {TARGET_SECONDS:.0f}s", seconds < TARGET_SECONDS, f"{seconds:.1f}s{bound}"),
        ("peak memory under 2 GB", peak < TARGET_PEAK_MB, f"{peak:.0f} MB{peak_note}"),
        (f"at most {TARGET_PAGE_KB:.0f} KB of HTML per cell page", page_kb is not None and page_kb <= TARGET_PAGE_KB,
         f"max {page_kb:.1f} KB, mean {sizes['cell_kb_mean']:.1f} KB; largest page of all {sizes['largest']} "
         f"{sizes['largest_kb']:,.0f} KB" if page_kb is not None else "no cell page"),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 10000])
    parser.add_argument("--work", type=Path, default=ROOT / ".cache" / "bench-build",
                        help="inside the checkout (the default), kb build and kb match use their caches there "
                             "as they do for kb/entries/")
    parser.add_argument("--searches", type=int, default=5, help="cold searches at each size")
    parser.add_argument("--no-after", action="store_true",
                        help="skip the rebuilds, kb check, kb match and the searches after each full build")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--stage-timeout", type=float, default=600)
    parser.add_argument("--check-timeout", type=float, default=180,
                        help="limit for lint.check (quadratic today); past it the time is estimated")
    parser.add_argument("--full-timeout", type=float, default=180,
                        help="limit for the full kb build; past it the time is estimated from its stages")
    parser.add_argument("--profile-size", type=int, default=1000)
    parser.add_argument("--no-profile", action="store_true")
    # child mode
    parser.add_argument("--stage", choices=list(CHILD_STAGES), help=argparse.SUPPRESS)
    parser.add_argument("--entries", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--cache", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--profile", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.stage:
        return child(args)

    import synth

    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    print(f"bench/build.py, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} CPU(s), "
          f"Python {sys.version.split()[0]}, seed {args.seed}; work folder {work}", flush=True)
    timeouts = {"load+validate": args.check_timeout, "full kb build": args.full_timeout}
    results: dict[int, dict[str, dict]] = {}
    afters: dict[int, dict] = {}
    for cached in (ROOT / ".cache" / "kb").glob("*.pickle"):
        cached.unlink()  # every size starts cold
    for n in sorted(args.sizes):
        synth.generate(n, work / f"synth-{n}", args.seed)
        prepared = run_stage("prepare", n, work, args.stage_timeout)
        if prepared["rc"] != 0:
            print(prepared["tail"])
            return 1
        print(f"  [{n}] prepared {prepared['data']['cells']} cells for the later stages "
              f"({prepared['seconds']:.1f}s, libyaml + schema, not timed as a stage)", flush=True)
        rows: dict[str, dict] = {}
        results[n] = rows
        for stage in STAGES:
            rows[stage] = row = run_stage(stage, n, work, timeouts.get(stage, args.stage_timeout))
            print(f"  [{n}] {stage}: {row['seconds']:.1f}s, peak {row['peak_mb']:.0f} MB"
                  + (" (timed out)" if row["timed_out"] else "") + (f" (exit {row['rc']})" if row["rc"] else ""),
                  flush=True)
            if row["rc"] != 0 and not row["timed_out"]:
                print(row["tail"])
        print_table(n, rows, results)
        if rows["full kb build"]["rc"] == 0 and not args.no_after:
            afters[n] = after_build(n, work, args.searches)
            print_after(n, afters[n])
        sys.stdout.flush()

    largest = max(results)
    rows = results[largest]
    if any(rows[s]["rc"] != 0 and not rows[s]["timed_out"] for s in STAGES) or rows["floor"]["timed_out"]:
        print("\nsome stage failed; no verdict")
        return 1
    checks = verdict(largest, rows, results) + (verdict_after(afters[largest]) if largest in afters else [])
    print(f"\nTargets at N = {largest:,}:")
    for name, met, detail in checks:
        print(f"  [{'met' if met else 'MISSED'}] {name}: {detail}")
    print("\nGrowth (wall s per stage; in brackets the ratio to the previous size):")
    sizes = sorted(results)
    for stage in STAGES:
        cells = []
        for i, n in enumerate(sizes):
            row = results[n][stage]
            text = (">" if row["timed_out"] else "") + f"{row['seconds']:.1f}"
            if i and not row["timed_out"] and results[sizes[i - 1]][stage]["seconds"]:
                text += f" ({row['seconds'] / results[sizes[i - 1]][stage]['seconds']:.1f}x)"
            cells.append(f"{n}: {text}")
        print(f"  {stage:<15}" + ", ".join(cells))
    sys.stdout.flush()

    if all(met for _, met, _ in checks) or args.no_profile:
        return 0
    n = args.profile_size
    if n not in results:
        synth.generate(n, work / f"synth-{n}", args.seed)
    run_stage("prepare", n, work, args.stage_timeout)
    base = results.get(n, {})
    print(f"\nProfiles at N = {n:,} (cProfile; its overhead inflates the times, the shares are what count):")
    for stage in ("load+validate", "render", "exports", "mkdocs", "floor"):
        profiled = run_stage(stage, n, work, args.stage_timeout, profile=True)
        plain = base.get(stage, {}).get("seconds")
        print(f"\n[{stage}] {profiled['seconds']:.1f}s under the profiler"
              + (f", {plain:.1f}s without" if plain is not None else ""))
        print(profiled["data"].get("profile") or profiled["tail"])
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
