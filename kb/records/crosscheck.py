"""Stage 3, lint, the cross-record checks: what the valid cells say against each other.

`_cross_checks` runs, after every file is validated (kb.records.lint), the checks that need the
whole index: signatures listed twice or spelled alike, URL slugs shared, unknown or one-way
`related` ids, words and look-alike patterns shared too widely (`look_alike_pairs`, also used
by `kb new`), evidence not cited in the record, status against links, fixes and versions, one
spelling per name, and each cell's reproduction, headline, cause line, workaround costs and
version range (kb.records.prosecheck). It hands on their Problems, unsorted.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass

import ahocorasick_rs
from packaging.version import Version

from kb.cache import fingerprint
from kb.records import confusables, facets, patterns, reproduction, scan, verdict
from kb.records.load import dotted
from kb.records.normalise import normalise
from kb.records.problems import Problem
from kb.records.prosecheck import _cause_line, _harmless_headline, _range_or_reason, _workaround_costs
from kb.records.schema import Cell
from kb.records.slug import slug
from kb.records.state import disagreement


def _spelled(text: str, other: str) -> str:
    """How `text` differs from `other` when the two look the same: '' when they are equal."""
    if text == other:
        return ""
    if text.casefold() == other.casefold():
        return " (in other letter case: kb match compares lower case)"
    holder = text if confusables.look_alike(text) else other
    return f" (written with look-alike characters: {confusables.describe(holder)})"


def _cross_checks(cells: list[Cell], ids: set[str], cache=None) -> list[Problem]:
    problems: list[Problem] = []
    # Signatures are compared by skeleton (kb.records.confusables): a copy written with a Cyrillic
    # letter or a fullwidth one is the same literal to a reader, and is reported as one.
    owners: dict[str, list[tuple[Cell, str]]] = defaultdict(list)
    slugs: dict[str, set[str]] = defaultdict(set)
    for cell in cells:
        seen: dict[str, tuple[int, str]] = {}
        for i, signature in enumerate(cell.entry.signatures):
            loc = ("signatures", i, "text")
            key = confusables.skeleton(signature.text)
            if key in seen:
                k, first = seen[key]
                problems.append(Problem(cell.path, cell.line_of(loc), dotted(loc),
                                        f"same text as signatures[{k}]{_spelled(signature.text, first)}; list it "
                                        "once", "KB032", signature.text))
                continue
            seen[key] = (i, signature.text)
            owners[key].append((cell, signature.text))
            slugs[slug(signature.text)].add(signature.text)
        for i, related in enumerate(cell.entry.related):
            loc = ("related", i, "id")
            if related.id == cell.id:
                problems.append(Problem(cell.path, cell.line_of(loc), dotted(loc),
                                        "a cell cannot be related to itself", "KB037", related.id))
            elif related.id not in ids:
                problems.append(Problem(cell.path, cell.line_of(loc), dotted(loc),
                                        "no cell has this id; use the file stem of an entry in kb/entries/",
                                        "KB036", related.id))
    for cell in cells:
        primary = cell.entry.signatures[0].text
        others = sorted((other.id, text) for other, text in owners[confusables.skeleton(primary)] if other.id != cell.id)
        if others:
            loc = ("signatures", 0, "text")
            how = next((_spelled(primary, text) for _, text in others if text != primary), "")
            problems.append(Problem(cell.path, cell.line_of(loc), dotted(loc),
                                    f"the first signature is also listed by {', '.join(sorted({i for i, _ in others}))}"
                                    f"{how}; put a signature only this cell has first", "KB040", primary))
    for key, texts in sorted(slugs.items()):
        if len(texts) > 1:
            for cell in cells:
                for i, signature in enumerate(cell.entry.signatures):
                    if signature.text in texts:
                        loc = ("signatures", i, "text")
                        problems.append(Problem(cell.path, cell.line_of(loc), dotted(loc),
                                                f"URL slug {key!r} is shared with a different text; reword one",
                                                "KB041", signature.text))
    problems.extend(_spelled_alike(owners))
    problems.extend(_same_words(cells))
    problems.extend(_look_alikes(cells, cache))
    problems.extend(_one_way_related(cells))
    problems.extend(_status_against_links(cells))
    problems.extend(_fix_versions(cells))
    problems.extend(_state_against_fix(cells))
    problems.extend(_evidence_in_record(cells))
    problems.extend(_one_spelling(cells))
    pins = reproduction.locked()
    for cell in cells:
        problems.extend(reproduction.problems(cell, pins))
        problems.extend(scan.problems(cell, pins))
        problems.extend(_harmless_headline(cell))
        problems.extend(_cause_line(cell))
        problems.extend(_workaround_costs(cell))
        problems.extend(_range_or_reason(cell))
        problems.extend(_decisive_without_its_range(cell))
    return problems


def _decisive_without_its_range(cell: Cell) -> list[Problem]:
    """KB084, across fields: a decisive line makes a log "applies" whatever versions it shows, which
    is right only when the versions that decide are those of what prints it. Where the component
    that raises carries no range and one that triggers it does (ptxas refusing the PTX of a project
    fixed in a later release), the line proves the tool's refusal, not the project's version: any
    other project's build, or this one's fixed release, prints it too."""
    deciding = verdict.ranged(cell.entry)  # the components whose versions the verdict reads
    raising = [c for c in cell.entry.components if c.role == "raises"]
    others = sorted(c.package for c in deciding if c.role != "raises")
    if any(c.role == "raises" for c in deciding) or not others:
        return []
    problems = []
    for i, signature in enumerate(cell.entry.signatures):
        if signature.decisive:
            loc = ("signatures", i, "decisive")
            printer = ", ".join(sorted(c.package for c in raising)) or "the component that raises"
            problems.append(Problem(
                cell.path, cell.line_of(loc), dotted(loc),
                f"this line is printed by {printer}, which gives no range, while the versions that decide "
                f"are {', '.join(others)}'s, which the line does not name: a log from another project or a "
                "fixed release would read 'applies'; drop decisive", "KB084", signature.text))
    return problems


def _spelled_alike(owners: dict[str, list[tuple[Cell, str]]]) -> list[Problem]:
    """KB041: two different texts that look the same (one skeleton, different beyond letter case)
    would get pages and URLs that look the same; each text written with look-alike characters is
    reported, naming the one it copies."""
    problems: list[Problem] = []
    for held in owners.values():
        spellings = {text.casefold() for _, text in held}
        if len(spellings) < 2:
            continue
        for cell, text in held:
            if confusables.look_alike(text) is None:
                continue
            other_cell, other = min(((c, t) for c, t in held if t.casefold() != text.casefold()),
                                    key=lambda pair: (confusables.look_alike(pair[1]) is not None, pair[0].id))
            i = next(k for k, s in enumerate(cell.entry.signatures) if s.text == text)
            m = next(k for k, s in enumerate(other_cell.entry.signatures) if s.text == other)
            loc = ("signatures", i, "text")
            problems.append(Problem(cell.path, cell.line_of(loc), dotted(loc),
                                    f"looks the same as {other_cell.id} signatures[{m}] but is written with "
                                    f"look-alike characters ({confusables.describe(text)}): type the literal as the "
                                    "program prints it; two texts that look the same get pages that look the same",
                                    "KB041", text))
    return problems


def _one_spelling(cells: list[Cell]) -> list[Problem]:
    """KB081: a GPU name, and a package, is written one way across the index: two spellings that
    differ only in letter case, spaces or punctuation (`facets.spelling`), or a name written with a
    look-alike of an ASCII letter or digit, would be two groups on the browse pages and in the
    search menus that read the same. The spelling most places use is kept (a package the index
    names, `facets.PACKAGE_NAMES`, is kept as listed); every other is reported where it is written."""
    problems: list[Problem] = []
    for what, places in (
            ("GPU name", [(cell, ("hardware", "gpus", i), name)
                          for cell in cells for i, name in enumerate(cell.entry.hardware.gpus)]),
            ("package", [(cell, ("components", i, "package"), c.package)
                         for cell in cells for i, c in enumerate(cell.entry.components)])):
        by_spelling: dict[str, list] = defaultdict(list)
        # A look-alike letter (`RTX 5О90`, Cyrillic О, attack review) makes a group of its own that
        # reads like another, whatever the spelling rule says: refused wherever it is written.
        for cell, loc, name in places:
            if confusables.look_alike(name) is not None:
                problems.append(Problem(cell.path, cell.line_of(loc), dotted(loc),
                                        f"this {what} is written with a look-alike character "
                                        f"({confusables.describe(name)}): type it in ASCII, so that browse pages "
                                        "and search menus list it with the name it looks like", "KB081", name))
        for place in places:
            by_spelling[facets.spelling(place[2])].append(place)
        for key, found in by_spelling.items():
            counts: dict[str, int] = defaultdict(int)
            for _, _, name in found:
                counts[name] += 1
            known = [name for name in facets.PACKAGE_NAMES if facets.spelling(name) == key] if what == "package" else []
            if len(counts) < 2 and not (known and known[0] not in counts):
                continue
            kept = known[0] if known else min(counts, key=lambda name: (-counts[name], name))
            for cell, loc, name in found:
                if name == kept:
                    continue
                problems.append(Problem(cell.path, cell.line_of(loc), dotted(loc),
                                        f"this {what} is written {kept!r} elsewhere in the index (it differs only in "
                                        "case, spaces or punctuation): write it that way, so that browse pages and "
                                        "search menus list it once", "KB081", name))
    return problems


def _record_text(value) -> str:
    """Every string of a record (keys and values), one per line."""
    if isinstance(value, dict):
        return "\n".join(f"{k}\n{_record_text(v)}" for k, v in value.items())
    if isinstance(value, list):
        return "\n".join(_record_text(v) for v in value)
    return str(value)


def _evidence_in_record(cells: list[Cell]) -> list[Problem]:
    """KB060: evidence is taken from the record, never invented: each term, and each digit run of a
    number's literal text, is written somewhere else in the same record (mechanism, signatures,
    notes, claims, link titles), where its source is cited."""
    problems: list[Problem] = []
    for cell in cells:
        if not cell.entry.evidence:
            continue
        text = _record_text(cell.entry.model_dump(exclude={"evidence"}))
        for i, item in enumerate(cell.entry.evidence):
            for j, term in enumerate(item.terms):
                if term not in text:
                    loc = ("evidence", i, "terms", j)
                    problems.append(Problem(cell.path, cell.line_of(loc), dotted(loc),
                                            "an evidence term must be written elsewhere in this record, where "
                                            "its source is cited", "KB060", term))
            for j, number in enumerate(item.numbers):
                literal = re.sub(r"\{[a-z]+\}", " ", number)
                if any(run not in text for run in re.findall(r"[0-9]+", literal)):
                    loc = ("evidence", i, "numbers", j)
                    problems.append(Problem(cell.path, cell.line_of(loc), dotted(loc),
                                            "the digits of an evidence number must be written elsewhere in this "
                                            "record, where their source is cited", "KB060", number))
    return problems


MAX_SAME_WORDS = 8  # signatures in the whole index that may hold one set of three or more words


def _same_words(cells: list[Cell]) -> list[Problem]:
    """KB062: few signatures hold the same words in other orders. Matching and the look-alike
    check file each pattern under its rarest word and try every text that holds it, so thousands
    of signatures made of one word set (every order of eight words) make both quadratic: a
    `kb check` of minutes and a triage page that hangs the reader's tab."""
    held: dict[frozenset, list[tuple[Cell, int]]] = defaultdict(list)
    for cell in cells:
        for i, signature in enumerate(cell.entry.signatures):
            words = frozenset(_TOKEN.findall(confusables.fold(signature.text).lower()))
            if len(words) >= 3:
                held[words].append((cell, i))
    problems = []
    for words, where in held.items():
        if len(where) > MAX_SAME_WORDS:
            for cell, i in where[MAX_SAME_WORDS:]:
                loc = ("signatures", i, "text")
                problems.append(Problem(
                    cell.path, cell.line_of(loc), dotted(loc),
                    f"{len(where)} signatures in the index hold exactly these words in some order (at most "
                    f"{MAX_SAME_WORDS} may): keep the forms people paste and write the rest as one `match:` pattern",
                    "KB062", cell.entry.signatures[i].text))
    return problems


_TOKEN = re.compile(r"[a-z0-9_]+")


def _folded_forms(text: str, match: str | None, architectures=()) -> tuple[patterns.Compiled, str]:
    """The pattern and normalised text of a signature in its folded form (kb.records.confusables:
    look-alike letters as the ASCII they look like), so that a copy written with a Cyrillic `о`
    fits the pattern of the original as the original's text does. ASCII signatures fold to
    themselves; a pattern whose folded form is no longer a valid pattern is taken as written."""
    folded_text = confusables.fold(text)
    try:
        compiled = patterns.compile_signature(folded_text, confusables.fold(match) if match is not None else None,
                                              architectures)
    except patterns.PatternError:
        compiled = patterns.compile_signature(text, match, architectures)
    return compiled, normalise(folded_text)


def _signature_forms(signature, architectures, cache) -> tuple[patterns.Compiled, str]:
    """A signature's folded pattern (its capability numbers as the cell's `architectures` let them
    vary, as `kb match` compiles it) and normalised text (`_folded_forms`); from `cache` (kb.cache,
    the check's) when this code prepared the same signature before."""
    architectures = tuple(architectures)
    if cache is None:
        return _folded_forms(signature.text, signature.match, architectures)
    key = fingerprint("signature forms", cache.code, signature.text, signature.match or "", str(signature.match is None),
                      repr(architectures))
    return cache.fetch(key, lambda: _folded_forms(signature.text, signature.match, architectures))


MAX_CANDIDATES = 64  # patterns the look-alike check may try on one signature text (KB062)


@dataclass(frozen=True)
class Crowded:
    """A signature text filed patterns would all be tried on (KB062): `count` of them, under
    `words` (word -> patterns filed under it, the largest first)."""

    cell: Cell
    index: int
    count: int
    words: tuple[tuple[str, int], ...]


def look_alike_pairs(cells: list[Cell], cache=None) -> list[tuple[Cell, int, Cell, int]]:
    """(a, i, b, j) for each two cells, neither listing the other in `related`, where a log line
    fits both: a's signature i and b's signature j (one's literal text matches the other's
    pattern, as `kb match` would match it: `kb.records.patterns` over `kb.records.normalise`d text, a named
    symptom as whole words only). The first such signatures of the pair are named. `cache`:
    the check's, which keeps each signature's pattern and normalised text. Texts that would be
    tried against more than MAX_CANDIDATES patterns are left out (`look_alike_scan`)."""
    return look_alike_scan(cells, cache)[0]


def look_alike_scan(cells: list[Cell], cache=None) -> tuple[list[tuple[Cell, int, Cell, int]], list[Crowded]]:
    """`look_alike_pairs`, and the texts it left out because too many patterns would be tried
    on them (KB062 reports them: the index fails, so nothing it leaves out passes unseen)."""
    # Each pattern is filed under one of its words, which every line it matches contains: the
    # word fewest signature texts hold, so each text is tried against few patterns (a common
    # word such as "memory" would make the pass grow as N squared). An expression is compiled
    # only when a text holds all its words (most never are). What a text is tried against is
    # known before it is tried (the sizes of the buckets of the words it holds), so a text whose
    # words all are common ones (8 of a pool of 12, in every order) is counted and set aside,
    # never tried: the pass costs at most MAX_CANDIDATES tries per text, whatever the index.
    forms = {(cell.id, j): _signature_forms(signature, cell.entry.hardware.architectures, cache)
             for cell in cells for j, signature in enumerate(cell.entry.signatures)}
    compiled = [(cell, j, signature, forms[cell.id, j][0])
                for cell in cells for j, signature in enumerate(cell.entry.signatures)]
    held: dict[str, int] = defaultdict(int)
    for _, _, signature, _ in compiled:
        for token in set(_TOKEN.findall(confusables.fold(signature.text).lower())):
            held[token] += 1
    by_anchor: dict[str, list] = defaultdict(list)
    for cell, j, signature, pattern in compiled:
        # Cells here passed the schema, so every pattern passed the grammar (KB044): unambiguous,
        # atomic, linear in the text it is run on.
        source = patterns.search_source(pattern, signature.kind)
        anchor = min(pattern.words, key=lambda w: (held.get(w, 0), -len(w), w)) if pattern.words else pattern.anchor
        by_anchor[anchor].append((cell, j, source, pattern.words))
    always = by_anchor.pop("", [])
    anchors = sorted(by_anchor)
    automaton = ahocorasick_rs.AhoCorasick(anchors) if anchors else None
    first: dict[tuple[str, str], tuple[int, int]] = {}  # (text's cell, pattern's cell) -> (i, j)
    crowded: list[Crowded] = []
    for cell in cells:
        for i, signature in enumerate(cell.entry.signatures):
            lower = confusables.fold(signature.text).lower()
            normal = forms[cell.id, i][1]
            present = sorted({anchors[k] for k, _, _ in automaton.find_matches_as_indexes(lower, overlapping=True)}
                             if automaton else set())
            count = len(always) + sum(len(by_anchor[a]) for a in present)
            if count > MAX_CANDIDATES:
                words = sorted(((a, len(by_anchor[a])) for a in present), key=lambda aw: (-aw[1], aw[0]))
                crowded.append(Crowded(cell, i, count, tuple(words)))
                continue
            for other, j, source, words in always + [c for a in present for c in by_anchor[a]]:
                key = (cell.id, other.id)
                if other.id == cell.id or (key in first and first[key] <= (i, j)):
                    continue
                if all(word in lower for word in words) and patterns.regex(source).search(normal):
                    first[key] = (i, j)
    by_id = {c.id: c for c in cells}
    pairs = []
    for a_id, b_id in sorted({tuple(sorted(key)) for key in first}):
        a, b = by_id[a_id], by_id[b_id]
        if any(r.id == b.id for r in a.entry.related) or any(r.id == a.id for r in b.entry.related):
            continue
        if (a.id, b.id) in first:
            i, j = first[(a.id, b.id)]  # a's text i is matched by b's signature j
        else:
            j, i = first[(b.id, a.id)]
        pairs.append((a, i, b, j))
    return pairs, crowded


def _crowded(crowded: list[Crowded]) -> list[Problem]:
    """KB062: a signature text the look-alike check (and `kb match`, on a line like it) would try
    more than MAX_CANDIDATES patterns on: signatures made only of words many others hold."""
    problems = []
    for item in crowded:
        loc = ("signatures", item.index, "text")
        shown = ", ".join(f"{word!r} ({n})" for word, n in item.words[:4])
        problems.append(Problem(
            item.cell.path, item.cell.line_of(loc), dotted(loc),
            f"{item.count} signatures in the index are filed under words this text holds ({shown}), and each "
            f"would be tried on it (at most {MAX_CANDIDATES} may): give the signatures made only of common "
            "words a word of their own (an identifier, a number) or write their forms as one `match:` pattern",
            "KB062", item.cell.entry.signatures[item.index].text))
    return problems


def _look_alikes(cells: list[Cell], cache=None) -> list[Problem]:
    """KB047: two cells whose signatures match one same line list each other in `related`; and
    KB062's texts the look-alike check would try too many patterns on (`look_alike_scan`)."""
    pairs, crowded = look_alike_scan(cells, cache)
    problems: list[Problem] = _crowded(crowded)
    for a, i, b, j in pairs:
        for cell, k, other, m in ((a, i, b, j), (b, j, a, i)):
            loc = ("signatures", k, "text")
            problems.append(Problem(
                cell.path, cell.line_of(loc), dotted(loc),
                f"a log line this signature fits is also matched by {other.id} signatures[{m}]; "
                "the two cells must list each other in related (how: look-alike)",
                "KB047", cell.entry.signatures[k].text))
    return problems


def _one_way_related(cells: list[Cell]) -> list[Problem]:
    """KB048: a `related` link goes both ways."""
    problems: list[Problem] = []
    by_id = {c.id: c for c in cells}
    for cell in cells:
        for i, related in enumerate(cell.entry.related):
            other = by_id.get(related.id)
            if other is None or other.id == cell.id or any(r.id == cell.id for r in other.entry.related):
                continue  # unknown ids and self links are KB036 and KB037
            loc = ("related", i, "id")
            problems.append(Problem(cell.path, cell.line_of(loc), dotted(loc),
                                    f"{other.id} does not list this cell back; add `- id: {cell.id}` to the "
                                    f"related list of {other.path.name}", "KB048", related.id))
    return problems


def _status_against_links(cells: list[Cell]) -> list[Problem]:
    """KB049: a status that its own upstream links and components contradict."""
    problems: list[Problem] = []
    for cell in cells:
        e = cell.entry
        state = e.status.state
        message = None
        if state in ("fixed-release", "fixed-main"):
            landed = any(link.state in ("merged", "published") for link in e.upstream)
            pinned = any(c.fixed_in or c.fixed_commit for c in e.components)
            if not landed and not pinned:
                message = (f"status '{state}' says a fix landed, but no upstream link is merged or published "
                           "and no component has fixed_in or fixed_commit; add the merged link or the fixed "
                           "version, or change the state")
        elif state == "fix-proposed" and not any(link.kind == "pr" and link.state == "open" for link in e.upstream):
            message = ("status 'fix-proposed' needs an open pull request among the upstream links; add it "
                       "(kind: pr, state: open), or change the state (merged: fixed-main)")
        if message:
            loc = ("status", "state")
            problems.append(Problem(cell.path, cell.line_of(loc), dotted(loc), message, "KB049", state))
    return problems


def _state_against_fix(cells: list[Cell]) -> list[Problem]:
    """KB086: the badge and the released fix tell one story (kb.records.state.disagreement), or the
    status gives the reason they differ."""
    problems: list[Problem] = []
    for cell in cells:
        why = disagreement(cell.entry)
        if why and not cell.entry.status.reason:
            loc = ("status", "state")
            problems.append(Problem(cell.path, cell.line_of(loc), dotted(loc),
                                    f"{why}; make the state say what the fixes say, or give status.reason: one "
                                    "line on why they differ (the release was not checked against a tag, no "
                                    "merged pull request is named), shown below the badge", "KB086",
                                    cell.entry.status.state))
    return problems


def _fix_versions(cells: list[Cell]) -> list[Problem]:
    """KB056: a fix pull request is merged in the cell's own links, and every cell that names it gives it
    the same first release. KB057: a fixed-release whose components name releases names a final one."""
    problems: list[Problem] = []
    first_named: dict[str, tuple[Cell, str]] = {}  # fix PR -> (first cell giving a version, that version)
    for cell in cells:
        e = cell.entry
        merged = {link.url for link in e.upstream if link.kind == "pr" and link.state == "merged"}
        for i, c in enumerate(e.components):
            if not c.fixed_by:
                continue
            loc = ("components", i, "fixed_by")
            if c.fixed_by not in merged:
                problems.append(Problem(cell.path, cell.line_of(loc), dotted(loc),
                                        "the fix pull request is not among this cell's upstream links as a merged "
                                        "pull request; add it there (kind: pr, state: merged) with the date you read "
                                        "it", "KB056", c.fixed_by))
            if not c.fixed_in:
                continue
            seen = first_named.setdefault(c.fixed_by, (cell, c.fixed_in))
            if seen[1] != c.fixed_in:
                loc = ("components", i, "fixed_in")
                problems.append(Problem(cell.path, cell.line_of(loc), dotted(loc),
                                        f"{seen[0].id} says the same fix ({c.fixed_by}) first shipped in {seen[1]}; "
                                        "one release contains a merge first: find it (git tag --contains, or the "
                                        "release notes) and make both cells say it", "KB056", c.fixed_in))
        # A fixed-release naming no release at all is KB086's (the status may say why); one
        # naming only an rc or dev build names the wrong release.
        named = [c for c in e.components if c.fixed_in]
        if e.status.state == "fixed-release" and named:
            released = [c for c in named if not _prerelease(c.fixed_in)]
            if not released:
                loc = ("status", "state")
                problems.append(Problem(cell.path, cell.line_of(loc), dotted(loc),
                                        "status 'fixed-release' needs the release: give the component that raises "
                                        "it fixed_in, the first final release (not an rc or dev build) that contains "
                                        "the fix, or use 'fixed-main' while it is only on main", "KB057",
                                        e.status.state))
    return problems


def _prerelease(version: str) -> bool:
    parsed = Version(version)
    return parsed.is_prerelease or parsed.is_devrelease or parsed.local is not None
