"""Rebuilding a built site in place: only the files whose content changed are written.

A full build (the engine with its theme, `kb.site.build`) leaves a state beside its target folder
(`.<name>.kb-state.json`, like its lock file; never inside the published site):

- `inputs`: a fingerprint of everything the site depends on except the entries: the code of
  `kb/` and `hooks/`, the templates, the hand-written pages, the engine's config, the versions
  of the installed packages, the build's options;
- `theme`: a fingerprint of what the theme rendered page by page but for the generated part of
  each (titles and descriptions of the navigation's pages, the sitemap's list, the build date);
- `shells`: the theme's shells (`kb.site.shell`), one per folder of filled pages, and `splices`: the
  theme's output of each page it renders one by one, cut around the generated part of the page
  (its body, or what a hand-written page shows at a kb marker);
- `made`: for each file kb writes itself the identity of its content; `stats`: size and
  modification time of every file of the site (the search index aside), as the build left them;
  `indexed`: the URLs of the pages in the search index (`kb.site.index`), and `unindexed`: the
  site paths written since it was made (a rebuild whose index was cancelled: `kb serve`).

The next build of the same folder with the same `inputs` generates the pages (the render cache
renders only pages that show a changed cell) and, when the theme's own pages and the site on
disk are as the state says, writes only the files whose identity changed, each through a
temporary file and one rename, and deletes the files no longer generated. Anything else (new
code, a changed title of a navigation page, a folder without a shell, a file changed on disk) is
a full build. The state is JSON, never code, and a state file that git tracks (a pull request
that commits one) is never read.
"""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import io
import json
import os
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from kb.cache import ROOT, fingerprint, installed_versions
from kb.site import index, search
from kb.site.page import Page
from kb.site.paths import inside
from kb.site.sources import read_regular
from kb.site.hookconfig import Settings
from kb.site.shell import Layout, Shell, kind_of
from kb.site.urls import page_url

SITEMAP_GZ = "sitemap.xml.gz"
VERSION = 3


@dataclass
class State:
    inputs: str
    theme: str
    shells: dict[str, Shell]
    splices: dict[str, tuple[str, str] | None]  # site path -> the theme's output before and after its fragment
    made: dict[str, str]  # site path -> identity of the content kb wrote there
    stats: dict[str, tuple[int, int]] = field(default_factory=dict)  # site path -> (size, mtime_ns)
    indexed: list[str] = field(default_factory=list)  # URLs of the pages in the search index
    unindexed: list[str] = field(default_factory=list)  # site paths written since the index was made


def state_path(site_dir: Path) -> Path:
    return site_dir.with_name(f".{site_dir.name}.kb-state.json")


def _folder_parts(folder: Path, skip: Path | None = None) -> list[str | bytes]:
    """The name and bytes of every file under `folder` (but `skip` and __pycache__), read
    without following a link (kb.site.sources.SourceError: `kb build` refused such files before)."""
    parts: list[str | bytes] = []
    if not folder.is_dir():
        return [str(folder), "absent"]
    for path in sorted(folder.rglob("*")):
        if "__pycache__" in path.parts or (skip is not None and path.is_relative_to(skip)):
            continue
        if path.is_dir() and not path.is_symlink():
            continue
        parts += [str(path.relative_to(folder)), read_regular(path)]
    return parts


def inputs(config_file: Path, docs_dir: Path, settings: Settings, options: dict[str, str]) -> str:
    """The fingerprint of all a site depends on except its entries (see the module's doc); `options`:
    the build's other options (site URL, repository)."""
    entries = settings.entries.resolve()
    parts: list[str | bytes] = ["config", read_regular(config_file)]
    for folder in (ROOT / "kb", ROOT / "hooks", ROOT / "templates", docs_dir):
        parts += ["folder", str(folder), *_folder_parts(folder, entries)]
    for name in ("url_lock", "redirects", "id_lock"):
        path = getattr(settings, name)
        parts += [name, path.read_bytes() if path is not None and path.is_file() else "none"]
    parts += [f"{key}={value}" for key, value in sorted((dataclasses.asdict(settings) | options).items())]
    parts += [f"{name}=={version}" for name, version in sorted(installed_versions().items())]
    return fingerprint(*parts)


def theme_fingerprint(layout: Layout, marked: list[str]) -> str:
    """What the theme rendered page by page, but for the generated part of each page (see
    `fragments`), and the chrome every page shares that comes from the cells (the search box's
    filter menus); `marked`: URLs of hand-written pages that show generated content."""
    parts: list[str] = [str(layout.epoch), repr(sorted(layout.stand_ins)), repr(marked),
                        repr(search.menus(layout.generated.renderer.site))]
    for page in layout.rendered:
        parts += [page.src, page.title, page.description, page.jsonld or "", page.updated or "", page.canonical or ""]
    return fingerprint(*parts)


def page_path(page: Page) -> str:
    return f"{page.url}index.html"


def fragments(layout: Layout, marked: list[str]) -> dict[str, str]:
    """The generated part of each page the theme renders one by one, by site path: a generated
    page's body, the list a hand-written page shows at its `<!-- kb:newest -->` marker."""
    found = {page_path(p): p.body for p in layout.rendered}
    found |= {f"{url}index.html": layout.generated.renderer.newest(url) for url in marked}
    found["sitemap.xml"] = layout.sitemap
    return found


def identities(layout: Layout, marked: list[str], parts: dict[str, str] | None = None) -> dict[str, str]:
    """The identity of each file kb writes itself: a filled page by its render key (the cache's
    key of everything it shows) or, for a page rendered without the cache, its body; with the
    values that go around the body. A data file by its content; a page the theme renders one by
    one by its generated part (`parts`: `fragments()`, when the caller has them)."""
    keys = layout.generated.renderer.keys
    made: dict[str, str] = {}
    for page in layout.filled:
        shown = keys.get(page.url) or hashlib.sha256(page.body.encode("utf-8", "surrogatepass")).hexdigest()
        made[page_path(page)] = fingerprint(kind_of(page), page.url, page.title, page.description,
                                            page.jsonld or "", page.canonical or "", shown)
    for path, content in layout.generated.files.items():
        made[path] = fingerprint("file", content)
    for path, fragment in (parts if parts is not None else fragments(layout, marked)).items():
        made[path] = fingerprint("fragment", fragment)
    return made


def marked_urls(docs_dir: Path, marker) -> list[str]:
    """URLs (directory style) of the hand-written pages whose Markdown holds a kb marker."""
    return [page_url(path, docs_dir) for path in sorted(docs_dir.rglob("*.md"))
            if marker.search(path.read_text(encoding="utf-8"))]


def load(site_dir: Path) -> State | None:
    """The state the last full build of `site_dir` left, or None (none, unreadable, or tracked by git)."""
    path = state_path(site_dir)
    if not path.is_file() or _committed(path):
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("version") != VERSION:
            return None
        return State(
            str(data["inputs"]), str(data["theme"]),
            {str(kind): Shell.from_parts([str(part) for part in parts]) for kind, parts in data["shells"].items()},
            {str(k): (str(v[0]), str(v[1])) if v is not None else None for k, v in data["splices"].items()},
            {str(k): str(v) for k, v in data["made"].items()},
            {str(k): (int(v[0]), int(v[1])) for k, v in data["stats"].items()},
            [str(url) for url in data["indexed"]], [str(path) for path in data["unindexed"]])
    except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError):
        return None  # a torn or foreign file: the next build is a full one


def save(site_dir: Path, state: State, changed: list[str] | None = None) -> None:
    """Keep `state`, with the stats of the site's files as they are now (one rename): of every
    file, or, after a rebuild in place, of the `changed` paths only (the others are as the
    state found them)."""
    if changed is None:
        state.stats = _stats(site_dir)
    else:
        for path in changed:
            try:
                st = os.lstat(site_dir / path)
            except FileNotFoundError:
                state.stats.pop(path, None)
                continue
            state.stats[path] = (st.st_size, st.st_mtime_ns)
    data = {"version": VERSION, "inputs": state.inputs, "theme": state.theme,
            "shells": {kind: shell.parts for kind, shell in sorted(state.shells.items())},
            "splices": dict(sorted(state.splices.items())), "made": dict(sorted(state.made.items())),
            "stats": dict(sorted(state.stats.items())), "indexed": sorted(state.indexed),
            "unindexed": sorted(state.unindexed)}
    _write(state_path(site_dir), json.dumps(data, ensure_ascii=False, separators=(",", ":")))


def forget(site_dir: Path) -> None:
    state_path(site_dir).unlink(missing_ok=True)


def _committed(path: Path) -> bool:
    """True when git tracks `path` (or cannot say whether it does)."""
    try:
        done = subprocess.run(["git", "-C", str(path.parent), "ls-files", "-z", "--", path.name],
                              capture_output=True, timeout=10, env={**os.environ, "LC_ALL": "C"})
    except (OSError, subprocess.TimeoutExpired):
        return True
    if done.returncode != 0:
        return b"not a git repository" not in done.stderr
    return bool(done.stdout)


def _stats(site_dir: Path) -> dict[str, tuple[int, int]]:
    found: dict[str, tuple[int, int]] = {}
    for folder, dirs, files in os.walk(site_dir):
        rel = os.path.relpath(folder, site_dir)
        if rel == index.FOLDER:
            dirs.clear()
            continue
        for name in files:
            path = name if rel == "." else f"{rel}/{name}"
            st = os.lstat(os.path.join(folder, name))
            found[path] = (st.st_size, st.st_mtime_ns)
    return found


class FullBuild(Exception):
    """Why the site cannot be rebuilt in place (not an error: the full build runs)."""


def rebuild(site_dir: Path, state: State | None, inputs: str, layout: Layout, theme: str,
            marked: list[str]) -> list[str]:
    """Bring the site at `site_dir` up to `layout` by writing only what changed: the site paths
    written or deleted. Raises FullBuild, with the reason, when a full build is needed (nothing
    is written then)."""
    if state is None:
        raise FullBuild("no earlier build of this folder is known")
    if inputs != state.inputs:
        raise FullBuild("code, templates, hand-written pages, config or options changed")
    if theme != state.theme or not set(layout.stand_ins) <= set(state.shells):
        raise FullBuild("a page the theme renders whole changed")
    if _stats(site_dir) != state.stats:
        raise FullBuild("files of the site changed since it was built")
    parts = fragments(layout, marked)
    made = identities(layout, marked, parts)
    pages = {page_path(p): p for p in layout.filled}
    writes: list[tuple[str, str]] = []
    for path in sorted(made):
        if state.made.get(path) == made[path]:
            continue
        if path in parts:
            around = state.splices.get(path)
            if around is None:
                raise FullBuild(f"{path} changed and the theme's output of it cannot be cut around what changed")
            writes.append((path, around[0] + parts[path] + around[1]))
        elif path in pages:
            writes.append((path, state.shells[kind_of(pages[path])].fill(pages[path])))
        else:
            writes.append((path, layout.generated.files[path]))
    for path, text in writes:
        _write(inside(site_dir, path), text)
    written = [path for path, _ in writes]
    if "sitemap.xml" in written:  # the engine writes a gzipped copy beside it
        _write_bytes(site_dir / SITEMAP_GZ, _gzipped(dict(writes)["sitemap.xml"], layout.epoch))
        written.append(SITEMAP_GZ)
    gone = sorted(set(state.made) - set(made))
    for path in gone:
        target = inside(site_dir, path)
        if target.is_file() and not target.is_symlink():
            target.unlink()
            _remove_empty(target.parent, site_dir)
    state.made = made
    return written + gone


def _gzipped(text: str, epoch: int) -> bytes:
    """sitemap.xml.gz as the engine writes it (mkdocs: gzip, its name and the build date in the header)."""
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, filename=SITEMAP_GZ, mode="wb", mtime=epoch) as stream:
        stream.write(text.encode("utf-8"))
    return buffer.getvalue()


def _write(target: Path, text: str) -> None:
    _write_bytes(target, text.encode("utf-8", "surrogatepass"))


def _write_bytes(target: Path, data: bytes) -> None:
    """Write `data` at `target` through a temporary file (`.<name>.kb-new.*`, which a killed
    build leaves for the next one to remove) and one rename: a reader sees the old bytes or the
    new ones."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(prefix=f".{target.name}.kb-new.", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as stream:
            stream.write(data)
        os.chmod(temporary, 0o644)
        os.replace(temporary, target)
    except BaseException:
        os.unlink(temporary)
        raise


def _remove_empty(folder: Path, site_dir: Path) -> None:
    while folder != site_dir and folder.is_dir() and not any(folder.iterdir()):
        folder.rmdir()
        folder = folder.parent
