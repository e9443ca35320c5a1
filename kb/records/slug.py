"""The URL slug of a literal string: readable words plus a hash of the exact text.

The hash makes the mapping one-to-one (two different strings never share a URL, even when
they differ only in punctuation or case); the words make the URL readable in a search result.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

MAX_WORDS_CHARS = 72


def slug(text: str) -> str:
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii").lower()
    words = re.sub(r"[^a-z0-9]+", "-", folded).strip("-")
    if len(words) > MAX_WORDS_CHARS:
        cut = words[:MAX_WORDS_CHARS]
        words = cut.rsplit("-", 1)[0] if "-" in cut else cut
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:10]
    return f"{words}-{digest}" if words else digest
