"""A built page read without a browser: a small element tree from the standard library's
html.parser, its elements found by tag, class and id, and its text split into lines as Chromium's
`innerText` splits them. What needs no layout (the words on a page, which element holds them, where
a link goes) is checked this way on every page; what needs layout or JavaScript stays in Chromium
(tests/browser.py), on a sample."""

from __future__ import annotations

import html
import html.parser
import re
from pathlib import Path

# Elements with no end tag (the HTML spec's void elements).
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track", "wbr"}
# Elements whose text a reader never sees: code, styles, and what shows only without JavaScript.
UNSEEN = {"script", "style", "template", "noscript", "head"}
# Elements that start and end a line of `innerText` (Chromium's default `display: block` and kin).
BLOCK = {"address", "article", "aside", "blockquote", "body", "caption", "dd", "details", "dialog", "div", "dl",
         "dt", "fieldset", "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6", "header",
         "hr", "html", "li", "main", "nav", "ol", "p", "pre", "section", "summary", "table", "tbody", "tfoot",
         "thead", "tr", "ul", "option", "select", "legend"}


class Element:
    """One element: its tag, attributes, and children (elements and text, in order)."""

    def __init__(self, tag: str, attrs: dict[str, str], parent: Element | None):
        self.tag, self.attrs, self.parent = tag, attrs, parent
        self.children: list[Element | str] = []

    @property
    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())

    def elements(self):
        """Every element below this one, in document order."""
        for child in self.children:
            if isinstance(child, Element):
                yield child
                yield from child.elements()

    def select(self, selector: str) -> list[Element]:
        """The elements below matching a CSS selector of compound parts (`tag`, `.class`, `#id`,
        `tag.class`) joined by the descendant (space) and next-sibling (`+`) combinators: what the
        browser tests' selectors use, so both kinds of test name an element the same way."""
        steps = re.findall(r"(\+)?\s*([\w.#-]+)", selector)
        found = [self]
        for sibling, compound in steps:
            test = _compound(compound)
            if sibling:
                found = [n for e in found if (n := e.next_element()) is not None and test(n)]
            else:
                found = [d for e in found for d in e.elements() if test(d)]
            found = list({id(e): e for e in found}.values())  # an element once, in document order
        return found

    def select_one(self, selector: str) -> Element | None:
        return next(iter(self.select(selector)), None)

    def next_element(self) -> Element | None:
        """The next sibling element (CSS's `+`), text between them skipped."""
        siblings = [c for c in self.parent.children if isinstance(c, Element)]
        at = next(i for i, s in enumerate(siblings) if s is self)
        return siblings[at + 1] if at + 1 < len(siblings) else None

    def previous_element(self) -> Element | None:
        siblings = [c for c in self.parent.children if isinstance(c, Element)]
        at = next(i for i, s in enumerate(siblings) if s is self)
        return siblings[at - 1] if at else None

    def text_content(self) -> str:
        """Every text below, as DOM `textContent` gives it (nothing skipped, nothing collapsed)."""
        return "".join(c if isinstance(c, str) else c.text_content() for c in self.children)

    def inner_text(self) -> str:
        """The text a reader sees, in lines as `innerText` gives them: a block element or `<br>`
        ends a line, table cells are joined by tabs, white space outside `<pre>` is collapsed, and
        script, style, `hidden` elements and the like are left out."""
        parts: list[str] = []
        self._text(parts, pre=False)
        lines = "".join(parts).split("\n")
        return "\n".join(line.strip(" \t") for line in lines if line.strip(" \t"))

    def _text(self, parts: list[str], pre: bool) -> None:
        for child in self.children:
            if isinstance(child, str):
                text = child if pre else re.sub(r"\s+", " ", child)
                if not pre and text.startswith(" ") and parts and parts[-1].endswith((" ", "\n")):
                    text = text[1:]  # white space runs collapse across elements too
                parts.append(text)
                continue
            if child.tag in UNSEEN or "hidden" in child.attrs:
                continue
            if child.tag == "br":
                parts.append("\n")
                continue
            block = child.tag in BLOCK
            if block:
                parts.append("\n")
            child._text(parts, pre or child.tag == "pre")
            if block:
                parts.append("\n")
            elif child.tag in ("td", "th"):
                parts.append("\t")

    def inner_html(self) -> str:
        """The children written back as HTML (attributes in source order, text escaped): equal for
        two elements that hold the same markup."""
        return "".join(html.escape(c, quote=False) if isinstance(c, str) else c.outer_html() for c in self.children)

    def outer_html(self) -> str:
        attrs = "".join(f' {k}="{html.escape(v, quote=True)}"' for k, v in self.attrs.items())
        if self.tag in VOID:
            return f"<{self.tag}{attrs}>"
        return f"<{self.tag}{attrs}>{self.inner_html()}</{self.tag}>"


def _compound(compound: str):
    """A test for one compound selector part: `a.kb-edit`, `.kb-card__fix`, `#what-it-is`, `p`."""
    tag = re.match(r"[\w-]*", compound).group()
    classes = re.findall(r"\.([\w-]+)", compound)
    ids = re.findall(r"#([\w-]+)", compound)
    return lambda e: ((not tag or e.tag == tag) and all(c in e.classes for c in classes)
                      and all(e.attrs.get("id") == i for i in ids))


class _Builder(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = Element("#document", {}, None)
        self._open = [self.root]

    def handle_starttag(self, tag, attrs):
        element = Element(tag, {k: v if v is not None else "" for k, v in attrs}, self._open[-1])
        self._open[-1].children.append(element)
        if tag not in VOID:
            self._open.append(element)

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag not in VOID:
            self._open.pop()

    def handle_endtag(self, tag):
        # An end tag closes the nearest open element of its name and any left open inside it (as
        # `</ul>` closes an unclosed `<li>`); a stray one closes nothing.
        for i in range(len(self._open) - 1, 0, -1):
            if self._open[i].tag == tag:
                del self._open[i:]
                return

    def handle_data(self, data):
        self._open[-1].children.append(data)


class Page:
    """A built HTML file: its element tree, `<title>`, and `<body>`."""

    def __init__(self, path: Path):
        builder = _Builder()
        builder.feed(path.read_text(encoding="utf-8"))
        builder.close()
        self.path, self.root = path, builder.root
        title = self.root.select_one("title")
        self.title = " ".join(title.text_content().split()) if title else ""
        self.body = self.root.select_one("body")

    def select(self, selector: str) -> list[Element]:
        return self.root.select(selector)

    def select_one(self, selector: str) -> Element | None:
        return self.root.select_one(selector)

    def text(self, selector: str) -> str | None:
        """The reader's text of the first element `selector` finds, or None when there is none."""
        element = self.select_one(selector)
        return element.inner_text() if element is not None else None
