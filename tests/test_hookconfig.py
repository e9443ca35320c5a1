"""The plan `kb build` hands to the mkdocs hook (kb/site/hookconfig.py): every field typed and
checked where it is made and where the hook receives it; nothing in mkdocs.yml taken for it."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import yaml

from kb.site import build, hookconfig, shell

from conftest import FIXTURES, ROOT

CONFIG = Path("mkdocs.yml")


@pytest.fixture(scope="module")
def layout() -> shell.Layout:
    settings = hookconfig.Settings(entries=FIXTURES / "good", url_lock=None, redirects=None, id_lock=None,
                                   repo_url="https://example.org/kb")
    return shell.layout(settings, "https://example.org/", [], ROOT)


def test_a_plan_with_every_field_is_made(layout):
    kept = []
    plan = hookconfig.plan(layout=layout, index_search=False, keep=lambda shells, splices: kept.append(shells))
    assert plan.layout is layout and plan.index_search is False
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.index_search = True  # type: ignore[misc]


@pytest.mark.parametrize("missing", ["layout", "index_search", "keep"])
def test_a_missing_field_is_named(layout, missing):
    values = {"layout": layout, "index_search": True, "keep": None}
    del values[missing]
    with pytest.raises(hookconfig.PlanError, match=rf"^BuildPlan\.{missing}: missing; the build must set it"):
        hookconfig.plan(**values)


@pytest.mark.parametrize(("field", "value", "message"), [
    ("index_search", "no", "BuildPlan.index_search: must be bool, got str 'no'"),
    ("index_search", 1, "BuildPlan.index_search: must be bool, got int 1"),
    ("keep", {}, "BuildPlan.keep: must be a function or None, got dict {}"),
    ("layout", {"pages": []}, "BuildPlan.layout: must be Layout, got dict {'pages': []}"),
])
def test_a_wrong_type_is_named_with_the_value(layout, field, value, message):
    values = {"layout": layout, "index_search": True, "keep": None, field: value}
    with pytest.raises(hookconfig.PlanError) as raised:
        hookconfig.plan(**values)
    assert str(raised.value) == message
    with pytest.raises(hookconfig.PlanError, match=rf"^BuildPlan\.{field}: must be"):
        hookconfig.BuildPlan(**values)  # the constructor checks the same


def test_an_unknown_field_is_named(layout):
    with pytest.raises(hookconfig.PlanError, match=r"^BuildPlan\.kb_built: not a field of the plan"):
        hookconfig.plan(layout=layout, index_search=True, keep=None, kb_built={})


def test_the_hook_refuses_what_is_not_the_builds_plan(layout):
    assert hookconfig.received({}) is None  # mkdocs run directly: the hook plans the site itself
    with pytest.raises(hookconfig.PlanError, match=r"^kb_plan: is a dict, not the plan `kb build` makes"):
        hookconfig.received({"kb_plan": {"layout": "x"}})
    # mkdocs' YAML loader can make a BuildPlan without its constructor: the hook checks it again.
    forged = object.__new__(hookconfig.BuildPlan)
    for name, value in (("layout", "x"), ("index_search", False), ("keep", None)):
        object.__setattr__(forged, name, value)
    with pytest.raises(hookconfig.PlanError, match=r"^BuildPlan\.layout: must be Layout, got str 'x'"):
        hookconfig.received({"kb_plan": forged})
    plan = hookconfig.plan(layout=layout, index_search=True, keep=None)
    config: dict = {}
    hookconfig.hand_over(config, plan)
    assert hookconfig.received(config) is plan


def test_settings_come_from_extra_and_nothing_else_of_it():
    found = hookconfig.settings({"kb_entries": "kb/entries", "kb_url_lock": "kb/urls.lock", "kb_redirects": "",
                                 "generator": False}, CONFIG)
    assert found == hookconfig.Settings(entries=Path("kb/entries"), url_lock=Path("kb/urls.lock"), redirects=None,
                                        id_lock=None, repo_url=None)
    assert hookconfig.settings({}, CONFIG).entries == hookconfig.DEFAULT_ENTRIES


def test_settings_name_every_bad_key_of_extra():
    with pytest.raises(hookconfig.PlanError) as raised:
        hookconfig.settings({"kb": {"layout": 1}, "kb_search_index": False, "kb_url_lock": 3, "kb_entries": "e"},
                            CONFIG)
    settings = "kb_entries, kb_url_lock, kb_redirects, kb_id_lock, kb_repo_url"
    assert str(raised.value).splitlines() == [
        f"mkdocs.yml: extra.kb: not a setting of kb build (its settings: {settings}); remove it",
        f"mkdocs.yml: extra.kb_search_index: not a setting of kb build (its settings: {settings}); remove it",
        "mkdocs.yml: extra.kb_url_lock: must be a string (a path, or a URL for kb_repo_url), got int 3",
    ]


@pytest.mark.parametrize(("top", "extra", "said"), [
    # mkdocs' strict check of unknown keys (kb build is always strict) refuses it before the hook runs
    ({"kb_plan": {"index_search": True}}, {}, "Config value 'kb_plan': Unrecognised configuration name: kb_plan"),
    ({}, {"kb": {"index_search": True}}, "extra.kb: not a setting of kb build"),
])
def test_kb_build_refuses_a_config_file_that_sets_the_plan(tmp_path, capsys, top, extra, said):
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    config.update(docs_dir=str(ROOT / "site_src"), hooks=[str(ROOT / "hooks" / "kb_pages.py")], watch=[], **top)
    config["theme"]["custom_dir"] = str(ROOT / "templates" / "theme")
    config["extra"].update(kb_url_lock="", kb_redirects="", kb_id_lock="", **extra)
    config_file = tmp_path / "repo" / "mkdocs.yml"
    config_file.parent.mkdir()
    config_file.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    site = tmp_path / "site"
    code = build.build(site, FIXTURES / "good", config_file=config_file)
    out, err = capsys.readouterr()
    assert code == 1, out + err
    assert said in err and "build failed: " in err and "Traceback" not in out + err
    assert not site.exists() or not any(site.iterdir())
