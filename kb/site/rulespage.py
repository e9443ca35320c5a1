"""The rules page (`rules/`): every linter rule with its statement and its two examples.

Generated from `kb.records.rules.RULES`, so the page, `kb check --explain CODE` and the linter never
disagree. `rules_page(renderer)` returns the page for `Renderer.all_pages()` to include.
"""

from __future__ import annotations

from dataclasses import dataclass

from kb.records.catalog import RULES_URL as URL
from kb.records.rules import RULES, RuleDoc
from kb.site.page import Page


# Rules that look at more than one file; the rest look at one file (its bytes, YAML or fields).
ACROSS_RECORDS = ("KB036", "KB038", "KB040", "KB041", "KB047", "KB048")


@dataclass(frozen=True)
class Group:
    slug: str
    title: str
    about: str
    rules: list[RuleDoc]


def groups() -> list[Group]:
    ordered = [RULES[code] for code in sorted(RULES)]
    reading = [r for r in ordered if r.code <= "KB011"]
    across = [r for r in ordered if r.code in ACROSS_RECORDS]
    fields = [r for r in ordered if r not in reading and r not in across]
    return [
        Group("reading", "Reading the file", "Checked before any value is read: the bytes, the YAML and the "
              "file name. Nothing in a file that breaks these is built or run.", reading),
        Group("fields", "Fields of one entry", "Checked on each entry against its schema (`kb schema` prints it "
              "as JSON Schema for editors).", fields),
        Group("records", "Across records", "Checked on all entries together: ids, shared strings, URLs and "
              "links between cells.", across),
    ]


def rules_page(renderer) -> Page:
    found = groups()
    body = renderer._render("rules.html", URL, groups=found, count=sum(len(g.rules) for g in found))
    return Page(URL, "Rules of kb check", "Every rule the entry linter checks, with its code, its statement "
                "and an example that passes and one that fails.", body, "index")
