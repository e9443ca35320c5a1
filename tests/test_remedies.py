"""kb.records.remedies, table-driven: which remedy a card leads with, the words for how ready it
is, and the versions it applies to, for each way a record can say how far a fix got. The pages show
`do_now`'s answer (tests/test_first_screen.py compares every built page with it)."""

from __future__ import annotations

import pytest

from conftest import FIXTURES, ROOT
from kb.records import load, remedies
from kb.records.schema import Entry

GOOD = FIXTURES / "good" / "mla-decode-fp8-kv-triton-shared-memory.yaml"
LIVE = ROOT / "kb" / "entries"
REPO = "https://github.com/vllm-project/vllm"
ISSUE, PR, COMMIT = f"{REPO}/issues/1", f"{REPO}/pull/2", f"{REPO}/commit/abcdef1"


def _entry(status="under-investigation", upstream=(), components=(("vllm", None),), fixes=(), workarounds=(),
           pins=()):
    """The canonical good entry with its status, upstream links, components (package, fixed_in),
    fixes (kind, what, package, applies, source) and workarounds (kind, what) replaced; the fixes
    whose what is in `pins` break a pin."""
    data = load.load(GOOD).data  # the project's reader: dates stay the strings the schema wants
    data["status"] = {"state": status, "as_of": "2026-09", "source": ISSUE}
    data["upstream"] = [{"kind": "issue", "url": ISSUE, "state": "open", "as_of": "2026-09"}] + [
        {"kind": kind, "url": url, "state": state, "as_of": "2026-09"} for kind, url, state in upstream]
    data["components"] = [{"package": package, "role": "triggers", **({"fixed_in": fixed_in, "fixed_by": PR} if fixed_in else {})}
                          for package, fixed_in in components]
    data["fixes"] = [{"kind": kind, "what": what, "source": source, "as_of": "2026-09",
                      **({"package": package} if package else {}), **({"applies": applies} if applies else {}),
                      **({"breaks_pin": "vLLM 0.28.0 requires flashinfer-python==0.6.16.post3"} if what in pins else {})}
                     for kind, what, package, applies, source in fixes]
    data["workarounds"] = [{"kind": kind, "what": what, "cost": "none stated", "source": ISSUE, "as_of": "2026-09"}
                           for kind, what in workarounds]
    return Entry.model_validate(data)


# (case, the record's parts, [(readiness, what, versions) of `ranked`, first to last]).
CASES = [
    ("an upgrade naming its releases is a released fix",
     dict(fixes=[("version-upgrade", "upgrade vLLM", "vllm", ">=0.12", ISSUE)]),
     [("released", "upgrade vLLM", ">=0.12")]),
    ("a fix that is a setting needs no new code",
     dict(fixes=[("env-var", "VLLM_X=0", None, None, ISSUE)]),
     [("setting", "VLLM_X=0", None)]),
    ("a merged fix of a component whose fixed_in names its first release",
     dict(upstream=[("pr", PR, "merged")], components=[("vllm", "0.13.0")], fixes=[("patch", "the fix", "vllm", None, PR)]),
     [("released", "the fix", ">=0.13.0")]),
    ("a fixed-release status vouches for a merged fix where no component names a release",
     dict(status="fixed-release", fixes=[("patch", "the fix", "vllm", None, PR)]),
     [("released", "the fix", None)]),
    ("a fixed-release status does not vouch for another package's fix where a component names a release",
     dict(status="fixed-release", components=[("vllm", None), ("triton", "3.7.0")],
          fixes=[("patch", "the fix", "vllm", None, PR)]),
     [("main", "the fix", None)]),
    ("a merged commit in no named release is a fix on main",
     dict(upstream=[("commit", COMMIT, "merged")], fixes=[("patch", "the fix", "vllm", None, COMMIT)]),
     [("main", "the fix", None)]),
    ("a fixed-main status says a fix merged, whatever its link says",
     dict(status="fixed-main", fixes=[("patch", "the fix", "vllm", None, ISSUE)]),
     [("main", "the fix", None)]),
    ("an upgrade only a thread names is reported fixed",
     dict(upstream=[("pr", PR, "merged")], fixes=[("version-upgrade", "upgrade vLLM", "vllm", None, PR)]),
     [("reported", "upgrade vLLM", None)]),
    ("a fix in an open pull request is proposed, even under a fixed-main status",
     dict(status="fixed-main", upstream=[("pr", PR, "open")], fixes=[("patch", "the fix", "vllm", None, PR)]),
     [("proposed", "the fix", None)]),
    ("a fix nothing says merged is unmerged",
     dict(fixes=[("patch", "the fix", "vllm", None, ISSUE)]),
     [("unmerged", "the fix", None)]),
    ("a workaround that works today comes before an open pull request",
     dict(upstream=[("pr", PR, "open")], fixes=[("patch", "the fix", "vllm", None, PR)],
          workarounds=[("flag", "--safe")]),
     [("workaround", "--safe", None), ("proposed", "the fix", None)]),
    ("a workaround that patches the source comes after a flag, whatever the record's order",
     dict(workarounds=[("patch", "edit the kernel"), ("env-var", "X=1"), ("config", "max_num_seqs: 1")]),
     [("workaround", "X=1", None), ("workaround", "max_num_seqs: 1", None), ("workaround", "edit the kernel", None)]),
    ("every rank in order: released, setting, workaround, patched workaround, reported, main, proposed, unmerged",
     dict(upstream=[("pr", PR, "open"), ("commit", COMMIT, "merged"), ("pr", f"{REPO}/pull/3", "merged")],
          fixes=[("patch", "unmerged fix", "vllm", None, ISSUE), ("patch", "open pull request", "vllm", None, PR),
                 ("patch", "on main", "vllm", None, COMMIT),
                 ("version-upgrade", "reported upgrade", "vllm", None, f"{REPO}/pull/3"),
                 ("config", "a setting", None, None, ISSUE), ("version-upgrade", "released", "vllm", ">=1", ISSUE)],
          workarounds=[("patch", "patched workaround"), ("flag", "--flag")]),
     [("released", "released", ">=1"), ("setting", "a setting", None), ("workaround", "--flag", None),
      ("workaround", "patched workaround", None), ("reported", "reported upgrade", None), ("main", "on main", None),
      ("proposed", "open pull request", None), ("unmerged", "unmerged fix", None)]),
    ("a one-line workaround that works as shipped comes before a released upgrade that breaks a pin",
     dict(components=[("vllm", None), ("flashinfer", "0.6.18")],
          fixes=[("version-upgrade", "flashinfer 0.6.18", "flashinfer", ">=0.6.18", ISSUE)],
          workarounds=[("patch", "edit the kernel"), ("env-var", "X=1")], pins=["flashinfer 0.6.18"]),
     [("workaround", "X=1", None), ("pinned", "flashinfer 0.6.18", ">=0.6.18"), ("workaround", "edit the kernel", None)]),
    ("a merged fix that breaks a pin, released per its component, is pinned too",
     dict(upstream=[("pr", PR, "merged")], components=[("vllm", "0.13.0")], fixes=[("patch", "the fix", "vllm", None, PR)],
          pins=["the fix"]),
     [("pinned", "the fix", ">=0.13.0")]),
    ("record order within a rank",
     dict(fixes=[("flag", "--b", None, None, ISSUE), ("flag", "--a", None, None, ISSUE)]),
     [("setting", "--b", None), ("setting", "--a", None)]),
    ("a record with neither fix nor workaround has nothing to do now",
     dict(), []),
]


@pytest.mark.parametrize("parts, expected", [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_ranked_and_do_now(parts, expected):
    """`ranked` orders every remedy; Do now is the first a reader can do on released versions, never
    a fix no release holds; the second line is the first such fix, or a pinned release passed over."""
    entry = _entry(**parts)
    got = remedies.ranked(entry)
    assert [(d.readiness, d.remedy.what, d.versions) for d in got] == expected
    assert [d.label for d in got] == [remedies.READY[readiness] for readiness, _, _ in expected]
    doable = [d for d in got if d.readiness in ("released", "setting", "workaround", "pinned", "reported")]
    assert remedies.do_now(entry) == (doable[0] if doable else None)
    first = remedies.do_now(entry)
    later = [d for d in got if d.readiness in ("pinned", "main", "proposed", "unmerged") and d is not first]
    assert remedies.coming(entry) == (later[0] if later and not (first and first.readiness == "released") else None)


def test_an_unreleased_fix_is_never_the_thing_to_do():
    """A record whose only fix is merged but unreleased has nothing to do now and says 'Fix coming'."""
    entry = _entry(upstream=[("commit", COMMIT, "merged")], fixes=[("patch", "the fix", "vllm", None, COMMIT)])
    assert remedies.do_now(entry) is None
    assert (remedies.coming(entry).label, remedies.coming(entry).remedy.what) == ("Fix coming", "the fix")


def test_the_xid13_card_leads_with_the_environment_variable():
    """The Xid 13 entry: the FlashInfer upgrade breaks vLLM 0.28.0's pin (flashinfer-python==0.6.16.post3,
    the wheel's Requires-Dist), so Do now is the one-line variable that works on stock 0.28.0, with
    its cost, and the upgrade is the second line."""
    from kb.records.state import state
    entry = Entry.model_validate(load.load(LIVE / "xid13-fp8-cudnn-autotune-sm120.yaml").data)
    shown = state(entry)
    assert shown.line.text == "Workaround: VLLM_DISABLED_KERNELS=FlashInferFP8ScaledMMLinearKernel"
    assert shown.line.code and shown.cost and "speed" in shown.cost
    assert shown.coming.label == "Released fix, breaks a pin" and "0.6.18" in shown.coming.what
    assert "flashinfer-python==0.6.16.post3" in entry.fixes[0].breaks_pin


def test_the_words_for_each_readiness():
    """The card's words, as the reader reads them (a change here is a change to every page)."""
    assert remedies.READY == {
        "released": "Released fix",
        "setting": "Fix",
        "workaround": "Workaround",
        "pinned": "Released fix, breaks a pin",
        "reported": "Upgrade, reported fixed (release not confirmed)",
        "main": "Fix coming",
        "proposed": "Fix proposed, not merged",
        "unmerged": "Fix proposed, not merged",
    }
