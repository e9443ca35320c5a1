"""Stage 5, search: what the header search box reads besides the Pagefind index (kb.site.index).

`literals()` hands the box the literal strings themselves, which it scores with typos, pasted
log prefixes and changed numbers forgiven; `literal_files()` splits them into shards by word
(`search/literals.json` says how, `search/literals/<n>.json` hold them), so a search fetches a
few small files whatever the number of cells.
"""

from __future__ import annotations

import re

from kb.records import normalise
from kb.records.state import state

# What the header search box scores pasted text against when Pagefind alone would miss it
# (kb-search.js): every literal string, on the page a search for it must land on. The shared
# rules of kb.records.normalise run first, then these search-only rules, on the query and on each literal
# alike, in the same regular-expression subset (read the same by Python and the browser).
# They go further than `kb match` may: a whole pasted line is compared with a literal string, not
# searched for one, so everything around the literal that varies between logs must go.
SEARCH_RULES: list[tuple[str, str, str]] = [
    ("torch distributed rank prefix", r"^\[rank[0-9]+\]:\s*", ""),
    ("nvrm xid prefix", r"^nvrm: xid \([^)]*\):\s*[0-9]+,(?:\s*pid=[^,]*,)?(?:\s*name=[^,]*,)?\s*", ""),
    ("ptxas / nvcc temporary file", r"/tmp/tmpxft_[0-9a-f]+_[0-9a-f]+-[0-9]+_", "/tmp/tmpxft_"),
    ("python temporary folder", r"/tmp/tmp[a-z0-9_]{6,}/", "/tmp/tmp/"),
    ("long hex hash", r"(^|[^0-9a-z])[0-9a-f]{16,}(?=$|[^0-9a-z])", "$1#"),
]
# Then every number is masked for the forgiving comparison (byte counts, pids, plan indexes,
# addresses); the browser keeps the unmasked form too, and prefers the literal whose numbers
# the query repeats (`major versions [12]` before `[10]`).
MASK_RULES: list[tuple[str, str, str]] = [
    ("hex number", r"0x[0-9a-f]+", "0x0"),
    ("number", r"[0-9]+", "0"),
]


def comparable(text: str) -> tuple[str, str]:
    """The two forms of a line the search box compares (`prepare` in kb-search.js): quotes and
    white space trimmed, the shared rules and then the search-only ones run until nothing changes,
    and that with its numbers masked."""
    line = re.sub(r"^[\s\"'\u201c\u201d`]+|[\s\"'\u201c\u201d`]+$", "", text)
    line = re.sub(r"\s+", " ", line).lower()
    rules = [(re.compile(p), r.replace("$1", r"\1")) for _, p, r in normalise.RULES + SEARCH_RULES]
    for _ in range(normalise.MAX_PASSES):
        before = line
        for pattern, replacement in rules:
            line = pattern.sub(replacement, line)
        line = line.strip()
        if line == before:
            break
    masked = line
    for _, pattern, replacement in MASK_RULES:
        masked = re.sub(pattern, replacement, masked)
    return line, masked


def _rules(rules: list[tuple[str, str, str]]) -> list[dict]:
    return [{"name": name, "pattern": pattern, "replacement": replacement} for name, pattern, replacement in rules]


def filters(entry) -> list[str]:
    """The Pagefind filters of a cell page, as templates/pages/cell.html writes them."""
    from kb.records import facets
    from kb.records.state import state

    values = [f"component:{facets.component_name(c.package)}" for c in entry.components]
    values += [f"architecture:{a}" for a in entry.hardware.architectures]
    values.append(f"status:{state(entry).words}")
    return list(dict.fromkeys(values))


def menus(site) -> dict[str, list[str]]:
    """The header search box's filter menus, written into every page at build time (so that opening
    one moves nothing and every option is there at once): each filter's values as `filters` gives
    them to Pagefind, components and architectures by name (case folded), statuses in lifecycle order."""
    from kb.records import facets

    found: dict[str, set[str]] = {"component": set(), "architecture": set(), "status": set()}
    for cell in site.cells:
        for value in filters(cell.entry):
            name, _, shown = value.partition(":")
            found[name].add(shown)
    status_order = [facets.STATUS_NAMES[s] for s in facets.LIFECYCLE]
    return {"component": sorted(found["component"], key=lambda v: (v.casefold(), v)),
            "architecture": sorted(found["architecture"], key=lambda v: (v.casefold(), v)),
            "status": sorted(found["status"], key=status_order.index)}


def scope_table() -> dict:
    """What the search box needs to tell a reader that a GPU named in the query is outside the index
    (the sentence of kb.records.verdict.out_of_scope): the GPU table (kb.records.gpus.MODELS) with
    each model's architecture, the index's scope, and the sentence's words."""
    from kb.records import gpus, verdict

    return {"models": [{"pattern": pattern, "arch": verdict.capability_arch(cc)} for pattern, cc in gpus.MODELS],
            "covers": list(gpus.SCOPE),
            "words": {k: verdict.WORDS[k] for k in ("out_of_scope", "scope_gpu")}}


def literals(site) -> dict:
    """`search/literals.json`: each search page (a cell, or the page that tells apart the cells
    sharing a string) with the literal strings a search must land it for (the first is the
    page's title unless `title` says otherwise), the cell's title, and its Pagefind filters as
    indexes into one shared list. A string several cells print is listed once, under the page
    that tells those cells apart: a search for it lands there. `from_source` lists the page's literals
    assembled from a program's source rather than seen in a report (ranked after those seen)."""
    from kb.records.catalog import string_url

    table: dict[str, int] = {}
    pages = []
    shared = sorted(text for text, owners in site.owners.items() if len(owners) > 1)
    for cell in site.cells:
        texts = [s.text for s in cell.entry.signatures if len(site.owners[s.text]) == 1]
        flags = [table.setdefault(f, len(table)) for f in filters(cell.entry)]
        page = {"url": site.url(cell), "cell": cell.entry.title, "literals": list(dict.fromkeys(texts)),
                "filters": flags, "status": state(cell.entry).words}
        assembled = [s.text for s in cell.entry.signatures if s.from_source and s.text in texts]
        if assembled:
            page["from_source"] = list(dict.fromkeys(assembled))
        if page["literals"][:1] != [cell.entry.signatures[0].text]:
            page["title"] = cell.entry.signatures[0].text  # else the title is the first literal
        pages.append(page)
    for text in shared:
        page = {"url": string_url(text), "cell": f"{len(site.owners[text])} failures print this string",
                "literals": [text], "filters": []}
        if all(s.from_source for c in site.owners[text] for s in c.entry.signatures if s.text == text):
            page["from_source"] = [text]
        pages.append(page)
    return {
        "version": 1,
        "scope": scope_table(),
        "passes": normalise.MAX_PASSES,
        "normalise": normalise.export(),
        "search": _rules(SEARCH_RULES),
        "mask": _rules(MASK_RULES),
        "filters": list(table),
        "pages": pages,
    }


ONE_FILE_BYTES = 64 * 1024  # literal strings up to this size go in one file, fetched whole
SHARD_BYTES = 8 * 1024  # beyond it, shards of about this size (each literal filed under several words)
COMMON = 48  # a word more literal strings than this hold is common: nothing is filed under it
KEYS = 4  # shards a search fetches at most


def pair_key(words: list[str]) -> str:
    """The key of a literal (or query) whose words are all common: its two longest words (the
    first of equals in sorted order), sorted and joined by a space, as kb-search.js makes it."""
    return " ".join(sorted(sorted(set(words), key=lambda w: (-len(w), w))[:2]))


def shard_of(word: str, shards: int) -> int:
    """The shard a word's literal strings are filed in: FNV-1a (32 bit) of the word, modulo the
    number of shards (kb-search.js computes the same)."""
    h = 0x811C9DC5
    for byte in word.encode("utf-8"):
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return h % shards


def words_of(text: str) -> list[str]:
    """The words the search box compares: of the masked form (`comparable`), as kb-search.js splits it:
    runs of letters and digits, a letter beyond ASCII part of its word ("ünïcödé" is one word, not
    the n, c and d a split on ASCII would leave to match every literal holding such a letter)."""
    return [w for w in re.split(r"[\W_]+", comparable(text)[1]) if w]


def literal_files(site) -> dict[str, str]:
    """The search box's literal strings as files: `search/literals.json` (the rules, the filters,
    the number of shards, `KEYS` and the common words) and one `search/literals/<n>.json` per shard.
    A literal is filed under each of its words that is not common (under `pair_key` of its words
    when all are common); the box fetches the shards of the `KEYS` longest uncommon words of the
    query (of its `pair_key` when all are common). Up to `ONE_FILE_BYTES` there is one shard,
    which holds every literal once. Each shard holds its literals as [literal number, page
    number, text], with a fourth item 1 for a literal assembled from source, and the pages they are on."""
    import json

    data = literals(site)
    pages = data.pop("pages")
    entries = [(p, text) for p, page in enumerate(pages) for text in page["literals"]]
    held: dict[str, int] = {}
    words = []
    for _, text in entries:
        found = sorted(set(words_of(text)))
        words.append(found)
        for w in found:
            held[w] = held.get(w, 0) + 1
    common = {w for w, n in held.items() if n > COMMON}
    keys = [[w for w in found if w not in common] or [pair_key(found)] for found in words]
    size = 64 + sum(len(text.encode("utf-8")) + 64 for _, text in entries)  # a literal and its page, about
    shards = 1
    if size > ONE_FILE_BYTES:
        copies = sum((len(text.encode("utf-8")) + 64) * len(k) for (_, text), k in zip(entries, keys))
        while shards * SHARD_BYTES < copies:
            shards *= 2
    filed: list[dict] = [{"pages": {}, "literals": []} for _ in range(shards)]
    for number, (p, text) in enumerate(entries):
        for k in sorted({shard_of(w, shards) for w in keys[number]}):
            page = pages[p]
            filed[k]["pages"][str(p)] = {"url": page["url"], "cell": page["cell"], "filters": page["filters"],
                                         "title": page.get("title", page["literals"][0])}
            if "status" in page:  # a failure's status; a page shared by several failures has none
                filed[k]["pages"][str(p)]["status"] = page["status"]
            assembled = text in page.get("from_source", ())
            filed[k]["literals"].append([number, p, text] + ([1] if assembled else []))

    def dump(value) -> str:
        return json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False) + "\n"

    out = {"search/literals.json": dump(data | {"shards": shards, "keys": KEYS, "common": sorted(common)})}
    for k, shard in enumerate(filed):
        out[f"search/literals/{k}.json"] = dump(shard)
    return out
