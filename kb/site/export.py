"""Stage 6, export: the data beside the HTML, for tools and feed readers.

Hands on a mapping of site path -> file content: the static JSON API (`api/v1/`), one
OSV-style record per cell (`osv/<id>.json`), the Atom feed (`feed.xml`) and `robots.txt`.
Every date comes from the records, never from the clock, so two builds give the same bytes.
"""

from __future__ import annotations

import json
import re
from xml.sax.saxutils import escape, quoteattr

from packaging.specifiers import SpecifierSet

from kb.records import schema
from kb.cache import code_fingerprint, fingerprint
from kb.records.catalog import Site
from kb.records.facets import package_name
from kb.records.state import state
from kb.records.schema import Cell
from kb.site import reproduced

API = "api/v1/"
# Record package names -> PyPI distribution names, for OSV `affected[].package`.
PYPI = {"vllm": "vllm", "sglang": "sglang", "flashinfer": "flashinfer-python", "torch": "torch",
        "triton": "triton", "sgl-kernel": "sgl-kernel", "tensorrt-llm": "tensorrt-llm"}


def _json(data) -> str:
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def absolute(site_url: str | None, url: str) -> str:
    return (site_url.rstrip("/") + "/" + url) if site_url else url


def _summary(cell: Cell, site: Site, site_url: str | None) -> dict:
    e = cell.entry
    return {"id": cell.id, "citable_id": site.citable[cell.id], "title": e.title, "status": state(e).key, "updated": e.updated,
            "published": e.published, "url": absolute(site_url, site.url(cell)),
            "signatures": [{"text": s.text, "kind": s.kind} for s in e.signatures],
            "record": absolute(site_url, f"{API}cells/{cell.id}.json")}


def _events(specifier: str, fixed_in: str | None) -> list[dict] | None:
    """OSV events for a PEP 440 range made only of lower and upper bounds, else None."""
    introduced, fixed, last = "0", fixed_in, None
    for spec in SpecifierSet(specifier):
        if spec.operator == ">=":
            introduced = spec.version
        elif spec.operator == "<":
            fixed = fixed or spec.version
        elif spec.operator == "<=":
            last = spec.version
        else:
            return None
    events = [{"introduced": introduced}]
    if fixed:
        events.append({"fixed": fixed})
    elif last:
        events.append({"last_affected": last})
    return events


def osv(cell: Cell, site: Site, site_url: str | None) -> dict:
    e = cell.entry
    affected = []
    for c in e.components:
        if c.package not in PYPI or not (c.affected or c.fixed_in):
            continue
        item = {"package": {"ecosystem": "PyPI", "name": PYPI[c.package]},
                "database_specific": {"role": c.role, "specifier": c.affected}}
        events = _events(c.affected or "", c.fixed_in)
        if events:
            item["ranges"] = [{"type": "ECOSYSTEM", "events": events}]
        affected.append(item)
    kinds = {"issue": "REPORT", "pr": "FIX", "commit": "FIX", "release": "PACKAGE", "doc": "ARTICLE"}
    references = [{"type": kinds[link.kind], "url": link.url} for link in e.upstream]
    if site_url:
        references.append({"type": "WEB", "url": absolute(site_url, site.url(cell))})
    return {
        "schema_version": "1.6.0",
        "id": site.citable[cell.id],  # the database's own id, as RUSTSEC-... and GO-... records have
        "modified": f"{e.updated}T00:00:00Z",
        "published": f"{e.published}T00:00:00Z",
        "summary": e.title,
        "details": e.summary + "\n\n" + e.mechanism,
        "affected": affected,
        "references": references,
        "database_specific": {"cell": cell.id, "architectures": list(e.hardware.architectures), "gpus": list(e.hardware.gpus),
                              "status": state(e).key, "status_reason": state(e).reason, "status_as_of": e.status.as_of,
                              "signatures": [s.text for s in e.signatures],
                              # The runs anyone can repeat with `bwkb repro`, as the entry page shows them.
                              "reproductions": reproduced.exported(cell)},
    }


def feed(site: Site, site_url: str | None) -> str:
    cells = sorted(site.cells, key=lambda c: (c.entry.updated, c.entry.published, c.id), reverse=True)
    newest = cells[0].entry.updated if cells else "1970-01-01"
    self_url = absolute(site_url, "feed.xml")
    lines = ['<?xml version="1.0" encoding="utf-8"?>',
             '<feed xmlns="http://www.w3.org/2005/Atom">',
             "  <title>Blackwell serving failures: new and updated failures</title>",
             f"  <id>{escape(site_url or 'urn:blackwell-serving-failures:feed')}</id>",
             f"  <updated>{newest}T00:00:00Z</updated>",
             f"  <link rel=\"self\" href={quoteattr(self_url)}/>",
             "  <author><name>Blackwell serving failures contributors</name></author>"]
    for cell in cells:
        e = cell.entry
        shown = state(e)
        url = absolute(site_url, site.url(cell))
        lines += ["  <entry>",
                  f"    <title>{escape(e.title)}</title>",
                  f"    <id>urn:blackwell-serving-failures:cell:{cell.id}</id>",
                  f"    <link href={quoteattr(url)}/>",
                  f"    <published>{e.published}T00:00:00Z</published>",
                  f"    <updated>{e.updated}T00:00:00Z</updated>",
                  f"    <summary>{escape(e.signatures[0].text + ': ' + e.summary)}</summary>",
                  f"    <category term={quoteattr(shown.key)} label={quoteattr(shown.words)}/>",
                  "  </entry>"]
    lines.append("</feed>")
    return "\n".join(lines) + "\n"


def jsonld(cell: Cell, site: Site, site_url: str | None) -> str:
    """JSON-LD for a cell page, safe inside a <script> element."""
    e = cell.entry
    remedies = [f"{r.what} ({r.kind})" for r in list(e.fixes) + list(e.workarounds)]
    answer = e.summary + (" What to do: " + "; ".join(remedies) + "." if remedies else "")
    article = {"@type": "TechArticle", "headline": e.signatures[0].text, "name": e.title,
               "description": e.summary, "datePublished": e.published, "dateModified": e.updated,
               "about": [{"@type": "SoftwareApplication", "name": package_name(c.package)} for c in e.components],
               "keywords": [s.text for s in e.signatures]}
    if site_url:
        article["url"] = absolute(site_url, site.url(cell))
    faq = {"@type": "FAQPage", "mainEntity": [{
        "@type": "Question", "name": f"What causes \"{e.signatures[0].text}\"?",
        "acceptedAnswer": {"@type": "Answer", "text": answer}}]}
    text = json.dumps({"@context": "https://schema.org", "@graph": [article, faq]}, ensure_ascii=False, sort_keys=True)
    return re.sub(r"[<>&]", lambda m: f"\\u{ord(m.group(0)):04x}", text)


def cell_exports(site: Site, site_url: str | None, cache=None) -> dict[str, tuple[str, str, str]]:
    """cell id -> (its API record, its OSV record, its page's JSON-LD). `cache` (kb.cache) keeps
    them, made again only when the cell, the site URL or this code changed."""
    code = code_fingerprint() if cache is not None else ""
    out: dict[str, tuple[str, str, str]] = {}
    for cell in site.cells:
        def make(cell=cell) -> tuple[str, str, str]:
            return (_json({"version": 1, "id": cell.id, "citable_id": site.citable[cell.id],
                           "url": absolute(site_url, site.url(cell)),
                           "record": cell.entry.model_dump(mode="json", exclude_none=True),
                           # The record's reproductions as the page shows them: the command to run
                           # them again and which output lines show the literal.
                           "reproduced": reproduced.exported(cell)}),
                    _json(osv(cell, site, site_url)), jsonld(cell, site, site_url))
        out[cell.id] = (make() if cache is None else
                        cache.fetch(fingerprint("cell exports", code, site_url or "", site.shown(cell)), make))
    return out


def files(site: Site, site_url: str | None, facts_schema: dict | None = None,
          per_cell: dict[str, tuple[str, str, str]] | None = None) -> dict[str, str]:
    """Every export file by site path; `per_cell`: `cell_exports` when the caller has it."""
    per_cell = per_cell if per_cell is not None else cell_exports(site, site_url)
    out: dict[str, str] = {}
    out[f"{API}index.json"] = _json({"version": 1, "cells": [_summary(c, site, site_url) for c in site.cells]})
    for cell in site.cells:
        out[f"{API}cells/{cell.id}.json"], out[f"osv/{cell.id}.json"], _ = per_cell[cell.id]
    out[f"{API}schema/entry.json"] = _json(schema.json_schema())
    if facts_schema is not None:
        out[f"{API}schema/facts.json"] = _json(facts_schema)
    out["feed.xml"] = feed(site, site_url)
    robots = "User-agent: *\nAllow: /\n"
    if site_url:
        robots += f"Sitemap: {absolute(site_url, 'sitemap.xml')}\n"
    out["robots.txt"] = robots
    return out


def paths(site: Site) -> list[str]:
    """The site path of every export file of `site` and of the other data files kb generates
    (`kb.site.generate`: the triage rules, the search literals' list), known without making them:
    the search literals' shards are under `search/`, a folder the build owns whole."""
    found = [f"{API}index.json", f"{API}schema/entry.json", f"{API}schema/facts.json", "feed.xml", "robots.txt",
             "triage/patterns.json", "stack/stack.json", "search/literals.json"]
    for cell in site.cells:
        found += [f"{API}cells/{cell.id}.json", f"osv/{cell.id}.json"]
    return sorted(found)
