"""A page ready for a static-site engine: URL, title, description, HTML body, kind."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Page:
    url: str  # relative to the site root, "" for the home page, always ending in "/" otherwise
    title: str  # plain text; escaped by whoever writes it into markup
    description: str
    body: str  # HTML
    kind: str  # cell | pointer | disambiguation | index
    updated: str | None = None  # the newest `updated` date of the cells shown (for sitemaps)
    jsonld: str | None = None  # structured data for search engines, ready for a <script> element
    # The URL (relative to the site root, in the same folder) search engines are told to index instead:
    # a variant page names its entry's page. Such a page is left out of the sitemap.
    canonical: str | None = None

    @property
    def src(self) -> str:
        """Source path of the page for a static-site engine with directory URLs."""
        return self.url.rstrip("/") + ".md" if self.url else "index.md"
