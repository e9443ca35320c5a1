"""The contract between `kb build` and the mkdocs hook (hooks/kb_pages.py), declared in one place.

- `Settings`: what the site is generated from. mkdocs.yml names it under `extra:` (the keys in
  `SETTINGS`; `settings()` reads and checks them, and refuses any other `kb`/`kb_*` key there, so
  nothing a page author writes is taken for part of the build); `kb build` overrides it from its options.
- `BuildPlan`: what the build hands to the hook for one engine run: the generated site, whether the
  hook indexes it, where the theme's shells go afterwards. Typed, frozen, checked when made and
  again when the hook receives it (`received`): a missing or ill-typed field fails the build naming it.
- `ThemeValues`: what the hook hands on to the theme's templates (the `kb` template global).

How the plan travels: mkdocs hooks are modules that mkdocs loads itself (once per process, and
shared by every build it runs, `kb serve`'s rebuilds included), so a plan set on the module would
be module state again. Every mkdocs event is given the build's config instead, so the plan rides
on that config, under the one top-level key `PLAN` (not under `extra:`, which is the page authors'
and which the theme's templates see whole); the hook keeps its state of the run beside it (`RUN`). A config file that sets the key itself fails mkdocs'
strict check of unknown keys (`kb build` is always strict), and the hook refuses anything there
that is not a `BuildPlan` (`received`: mkdocs run without --strict).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from kb.site.shell import Layout, Shell

# The config key the build puts its plan under, and the one the hook keeps its state of the run under.
PLAN = "kb_plan"
RUN = "kb_run"

# The settings mkdocs.yml may give under `extra:`, each with the field of `Settings` it sets.
SETTINGS = {"kb_entries": "entries", "kb_url_lock": "url_lock", "kb_redirects": "redirects",
            "kb_id_lock": "id_lock", "kb_repo_url": "repo_url"}
DEFAULT_ENTRIES = Path("kb/entries")


class PlanError(Exception):
    """The build's settings or plan are missing a field or hold a wrong value (the message names it)."""


@dataclass(frozen=True)
class Settings:
    """What the site is generated from: mkdocs.yml's `extra.kb_*` settings, as `kb build` overrides them."""

    entries: Path  # the folder of entry files (`extra.kb_entries`; kb/entries when unset)
    url_lock: Path | None  # the URL lock that keeps published URLs (`extra.kb_url_lock`); None: not checked
    redirects: Path | None  # the redirects of moved URLs (`extra.kb_redirects`); None: none
    id_lock: Path | None  # the lock of entry numbers (`extra.kb_id_lock`); None: numbered as `kb lock` would
    repo_url: str | None  # where Edit and Report links go (`extra.kb_repo_url`); None: the checkout's origin
    shells: bool = True  # fill pages outside the navigation into shells; False: each page through the theme

    def __post_init__(self):
        check(self)


@dataclass(frozen=True, kw_only=True)
class BuildPlan:
    """One engine run of the hook, as the build planned it. Made through `plan()` or the constructor;
    both check every field."""

    layout: Layout  # the generated site, split between the pages the theme renders and those filled into shells
    index_search: bool  # the hook indexes the built site; False: `kb build` indexes it itself once it is in place
    # Called once the engine has built the site, with the theme's shells and the splices of the pages
    # it rendered (`kb.site.incremental` rebuilds the site in place with them next time); None: dropped.
    keep: Callable[[dict[str, Shell], dict[str, tuple[str, str] | None]], None] | None

    def __post_init__(self):
        check(self)


@dataclass(frozen=True)
class ThemeValues:
    """What the theme's templates show from the generated site (`kb.repo_url` etc. in templates/theme)."""

    repo_url: str | None  # the repository of the footer and the cells' Edit and Report links
    filter_menus: dict = field(default_factory=dict)  # the search box's filter menus (kb.site.search.menus)
    sitemap_xml: str = ""  # the sitemap's <url> elements of the pages filled into shells

    def __post_init__(self):
        check(self)


def plan(**values) -> BuildPlan:
    """A `BuildPlan` of `values`; PlanError naming the first field missing, unknown or ill-typed."""
    names = [f.name for f in dataclasses.fields(BuildPlan)]
    for name in names:
        if name not in values:
            raise PlanError(f"BuildPlan.{name}: missing; the build must set it ({_declared(BuildPlan, name)})")
    for name in values:
        if name not in names:
            raise PlanError(f"BuildPlan.{name}: not a field of the plan (its fields: {', '.join(names)})")
    return BuildPlan(**values)


def check(value) -> None:
    """Raises PlanError for the first field of the dataclass `value` whose value does not fit its type."""
    hints = typing.get_type_hints(type(value))
    for f in dataclasses.fields(value):
        got = getattr(value, f.name)
        if not _fits(got, hints[f.name]):
            raise PlanError(f"{type(value).__name__}.{f.name}: must be {_describe(hints[f.name])}, "
                            f"got {type(got).__name__} {_short(got)}")


def settings(extra: Mapping, config_file: Path) -> Settings:
    """The settings mkdocs.yml gives under `extra:`. PlanError names every key that is not a setting
    and every value that is not a string (an empty string: unset)."""
    problems = [f"{config_file}: extra.{key}: not a setting of kb build (its settings: {', '.join(SETTINGS)}); "
                "remove it" for key in sorted(k for k in extra if k == "kb" or str(k).startswith("kb_"))
                if key not in SETTINGS]
    found: dict[str, str | None] = {}
    for key, name in SETTINGS.items():
        value = extra.get(key)
        if value is not None and not isinstance(value, str):
            problems.append(f"{config_file}: extra.{key}: must be a string (a path, or a URL for kb_repo_url), "
                            f"got {type(value).__name__} {_short(value)}")
        found[name] = value or None
    if problems:
        raise PlanError("\n".join(problems))
    return Settings(entries=Path(found.pop("entries") or DEFAULT_ENTRIES), repo_url=found.pop("repo_url"),
                    **{name: Path(value) if value else None for name, value in found.items()})


def hand_over(config, build_plan: BuildPlan) -> None:
    """Puts `build_plan` where the hook finds it (see the module's doc)."""
    check(build_plan)
    config[PLAN] = build_plan


def received(config) -> BuildPlan | None:
    """The plan the build handed over in `config`, checked again (mkdocs' YAML loader can make any
    object without calling its constructor); None when mkdocs runs without `kb build`."""
    found = config.get(PLAN)
    if found is None:
        return None
    if not isinstance(found, BuildPlan):
        raise PlanError(f"{PLAN}: is a {type(found).__name__}, not the plan `kb build` makes: the config file "
                        f"must not set {PLAN}; remove it")
    check(found)
    return found


def _fits(value, hint) -> bool:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_fits(value, arg) for arg in typing.get_args(hint))
    if hint is type(None):
        return value is None
    if origin is Callable:
        return callable(value)
    if hint is bool:
        return type(value) is bool
    return isinstance(value, origin or hint)


def _describe(hint) -> str:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_describe(arg) for arg in typing.get_args(hint))
    if hint is type(None):
        return "None"
    if origin is Callable:
        return "a function"
    return (origin or hint).__name__


def _declared(cls, name: str) -> str:
    return _describe(typing.get_type_hints(cls)[name])


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
