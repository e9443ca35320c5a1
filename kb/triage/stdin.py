"""Stage 5, triage: standard input kept for `kb match -`, within a bound.

`kb match` reads a log up to four times (signatures, evidence, facts, the new-failure request), so a
log from standard input is kept: in memory up to 64 MiB, then in a temporary file. A producer that
never stops (`curl URL | kb match -` against a server that keeps sending, `< /dev/zero`) would fill
the disk, so no more than LIMIT bytes are kept; a longer log is refused, with what to do instead
(a file is read where it lies, never copied).
"""

from __future__ import annotations

import tempfile
from typing import BinaryIO

LIMIT = 1 << 30  # 1 GiB: far above any serving log worth pasting, far below a full disk
_CHUNK = 1 << 20


class TooLarge(ValueError):
    """Standard input held more than the bound."""


def kept(source: BinaryIO, limit: int | None = None) -> BinaryIO:
    """The bytes of `source` in a rewound spooled file; TooLarge (the copy removed) past `limit`
    bytes (LIMIT when None)."""
    limit = LIMIT if limit is None else limit
    log = tempfile.SpooledTemporaryFile(max_size=64 << 20)
    stored = 0
    while chunk := source.read(min(_CHUNK, limit + 1 - stored)):
        stored += len(chunk)
        if stored > limit:
            log.close()
            raise TooLarge(f"standard input holds more than {limit >> 20} MiB, more than `kb match -` keeps; save "
                           "the log to a file and run `kb match FILE` (a file is read where it lies, not copied)")
        log.write(chunk)
    log.seek(0)
    return log
