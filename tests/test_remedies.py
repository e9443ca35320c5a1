"""kb.records.remedies, table-driven: which remedy a card leads with, the words for how ready it
is, and the versions it applies to, for each way a record can say how far a fix got. The pages show
`do_now`'s answer (tests/test_first_screen.py compares every built page with it)."""

from __future__ import annotations

import pytest

from conftest import FIXTURES
from kb.records import load, remedies
from kb.records.schema import Entry

GOOD = FIXTURES / "good" / "mla-decode-fp8-kv-triton-shared-memory.yaml"
REPO = "https://github.com/vllm-project/vllm"
ISSUE, PR, COMMIT = f"{REPO}/issues/1", f"{REPO}/pull/2", f"{REPO}/commit/abcdef1"


def _entry(status="under-investigation", upstream=(), components=(("vllm", None),), fixes=(), workarounds=()):
    """The canonical good entry with its status, upstream links, components (package, fixed_in),
    fixes (kind, what, package, applies, source) and workarounds (kind, what) replaced."""
    data = load.load(GOOD).data  # the project's reader: dates stay the strings the schema wants
    data["status"] = {"state": status, "as_of": "2026-09", "source": ISSUE}
    data["upstream"] = [{"kind": "issue", "url": ISSUE, "state": "open", "as_of": "2026-09"}] + [
        {"kind": kind, "url": url, "state": state, "as_of": "2026-09"} for kind, url, state in upstream]
    data["components"] = [{"package": package, "role": "triggers", **({"fixed_in": fixed_in, "fixed_by": PR} if fixed_in else {})}
                          for package, fixed_in in components]
    data["fixes"] = [{"kind": kind, "what": what, "source": source, "as_of": "2026-09",
                      **({"package": package} if package else {}), **({"applies": applies} if applies else {})}
                     for kind, what, package, applies, source in fixes]
    data["workarounds"] = [{"kind": kind, "what": what, "source": ISSUE, "as_of": "2026-09"} for kind, what in workarounds]
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
    ("record order within a rank",
     dict(fixes=[("flag", "--b", None, None, ISSUE), ("flag", "--a", None, None, ISSUE)]),
     [("setting", "--b", None), ("setting", "--a", None)]),
    ("a record with neither fix nor workaround has nothing to do now",
     dict(), []),
]


@pytest.mark.parametrize("parts, expected", [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_ranked_and_do_now(parts, expected):
    entry = _entry(**parts)
    got = remedies.ranked(entry)
    assert [(d.readiness, d.remedy.what, d.versions) for d in got] == expected
    assert [d.label for d in got] == [remedies.READY[readiness] for readiness, _, _ in expected]
    assert remedies.do_now(entry) == (got[0] if got else None)


def test_the_words_for_each_readiness():
    """The card's words, as the reader reads them (a change here is a change to every page)."""
    assert remedies.READY == {
        "released": "Released fix",
        "setting": "Fix",
        "workaround": "Workaround",
        "reported": "Upgrade, reported fixed (release not confirmed)",
        "main": "Fix on main, not in a release yet",
        "proposed": "Fix in a pull request, not merged",
        "unmerged": "Proposed fix, not merged upstream",
    }
