"""`kb build -d DIR` replaces DIR whole: it refuses targets it would destroy, swaps atomically,
serialises builds of one target and removes what killed builds left."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import FIXTURES, ROOT, builds_site
from kb.cli import main
from kb.site import build

ENTRIES = FIXTURES / "good"
LEFT = {".site.lock", ".site.kb-state.json", ".site.kb-work"}  # what a build leaves beside ./site


@pytest.fixture(scope="module")
@builds_site
def site(tmp_path_factory) -> Path:
    """One site built from the good fixture into a folder that existed and was empty."""
    target = tmp_path_factory.mktemp("built") / "site"
    target.mkdir()
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(ROOT)
        assert main(["build", "--preview", "-d", str(target), "--entries", str(ENTRIES)]) == 0
    return target


def _siblings(target: Path) -> set[str]:
    """What a build would leave beside `target`: `.<name>.lock`, its state and its work folder."""
    resolved = target.resolve()
    return {p for p in os.listdir(resolved.parent) if p.startswith(f".{resolved.name}.")}


def _refused(capsys, target: Path, *args: str) -> str:
    before = _siblings(target)
    assert main(["build", "--preview", "-d", str(target), *args]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1
    assert err.startswith(f"kb build: refusing -d {str(target)!r} ({target.resolve()}): ")
    assert "name a folder of its own, e.g. -d site" in err
    assert _siblings(target) == before
    return err


def _untouched_repo():
    for path in ("mkdocs.yml", ".git/HEAD", "kb/site/build.py", "site_src/index.md"):
        assert (ROOT / path).is_file(), path
    assert not (ROOT / build.MARKER).exists()
    assert not (ROOT / "index.html").exists()


def test_the_repository_root_is_refused(capsys):
    assert "it is the repository root (it holds mkdocs.yml)" in _refused(capsys, Path("."))
    _untouched_repo()


def test_a_link_as_the_output_folder_is_refused_and_nothing_written_through_it(capsys, tmp_path):
    """N8 of the 2026-12-05 review: a committed `site -> ../outside/www` (an empty folder) made
    `make site` build into it."""
    outside = tmp_path / "outside" / "www"
    outside.mkdir(parents=True)
    link = tmp_path / "site"
    link.symlink_to(outside)
    err = _refused(capsys, link, "--entries", str(ENTRIES))
    assert f"{str(link)!r} is a symbolic link and a build never writes through one" in err
    assert sorted(os.listdir(tmp_path / "outside")) == ["www"] and not any(outside.iterdir())


def test_a_symlink_to_the_repository_is_refused(capsys, tmp_path):
    link = tmp_path / "link"
    link.symlink_to(ROOT)
    assert "it is the repository root" in _refused(capsys, link)
    assert link.is_symlink()
    _untouched_repo()


@pytest.mark.parametrize("target", [ROOT.parent, Path("/")])
def test_a_folder_holding_the_repository_is_refused(capsys, target):
    listed = sorted(os.listdir("/"))
    assert f"it holds the repository {str(ROOT)!r}" in _refused(capsys, target)
    assert sorted(os.listdir("/")) == listed
    _untouched_repo()


def test_the_entries_folder_and_what_holds_or_is_in_it_are_refused(capsys):
    entries = sorted(os.listdir(ROOT / "kb" / "entries"))
    assert "it is the entries folder;" in _refused(capsys, Path("kb/entries"))
    assert "it holds the entries folder" in _refused(capsys, Path("kb"))
    assert "it is inside the entries folder" in _refused(capsys, Path("kb/entries/site"))
    assert not (ROOT / "kb" / "entries" / "site").exists()
    assert sorted(os.listdir(ROOT / "kb" / "entries")) == entries
    _untouched_repo()


def test_a_folder_inside_git_is_refused(capsys):
    assert "it is inside a .git folder" in _refused(capsys, Path(".git/site"))
    assert not (ROOT / ".git" / "site").exists()


def test_a_file_is_refused(capsys, tmp_path):
    target = tmp_path / "notes.txt"
    target.write_text("mine\n")
    assert "it is a file, not a folder" in _refused(capsys, target, "--entries", str(ENTRIES))
    assert target.read_text() == "mine\n"


def test_a_non_empty_folder_kb_did_not_build_is_refused(capsys, tmp_path):
    target = tmp_path / "photos"
    (target / "2024").mkdir(parents=True)
    (target / "2024" / "a.jpg").write_bytes(b"\xff\xd8")
    (target / "index.html").write_text("<p>my own page</p>")
    err = _refused(capsys, target, "--entries", str(ENTRIES))
    assert "it is not empty and has no .kb-site marker, so kb build did not make it" in err
    assert sorted(p.relative_to(target).as_posix() for p in target.rglob("*")) == \
        ["2024", "2024/a.jpg", "index.html"]
    assert (target / "index.html").read_text() == "<p>my own page</p>"


def test_an_empty_folder_becomes_a_site_with_the_marker(site):
    assert (site / "index.html").is_file()
    assert (site / build.MARKER).read_text(encoding="utf-8") == build.MARKER_TEXT
    assert "kb-site" not in (site / "sitemap.xml").read_text(encoding="utf-8")
    assert oct(site.stat().st_mode & 0o777) == oct(0o755)
    assert _siblings(site) == LEFT


def _files(site):
    """Every file but the search index: Pagefind 1.5.2 writes its filter values in a different
    order from run to run (so its filter file, meta file and entry change name and bytes)."""
    return {p.relative_to(site): (p.stat().st_mtime_ns, p.stat().st_ino, p.read_bytes())
            for p in site.rglob("*") if p.is_file() and p.relative_to(site).parts[0] != "pagefind"}


@pytest.mark.build
def test_a_rebuild_touches_only_files_whose_bytes_changed(tmp_path):
    entries = tmp_path / "entries"
    shutil.copytree(ENTRIES, entries)
    site = tmp_path / "site"
    assert main(["build", "--preview", "-d", str(site), "--entries", str(entries)]) == 0
    before = _files(site)
    assert main(["build", "--preview", "-d", str(site), "--entries", str(entries)]) == 0
    assert _files(site) == before  # same bytes, same inode, same mtime: no file was written
    path = next(entries.glob("*.yaml"))
    text = path.read_text(encoding="utf-8")
    title = next(line for line in text.splitlines() if line.startswith("title: "))
    path.write_text(text.replace(title, title + " (edited)"), encoding="utf-8")
    assert main(["build", "--preview", "-d", str(site), "--entries", str(entries)]) == 0
    after = _files(site)
    changed = {rel for rel in after if rel in before and after[rel][2] != before[rel][2]}
    untouched = {rel for rel in after if rel in before and after[rel] == before[rel]}
    assert changed and untouched and changed | untouched == set(after) == set(before)
    assert any(" (edited)" in after[rel][2].decode("utf-8", "replace") for rel in changed if rel.suffix == ".html")


POLL = """
import os, sys
site, stop = sys.argv[1], sys.argv[2]
checks = missing = 0
while not os.path.exists(stop):
    if not os.path.isdir(site) or not os.path.exists(os.path.join(site, "index.html")):
        missing += 1
    checks += 1
print(checks, missing)
"""


def test_readers_always_find_the_site_during_rebuilds(site, tmp_path, capsys):
    """Another process polls the site while it is rebuilt three times: it is never missing."""
    stop = tmp_path / "stop"
    poller = subprocess.Popen([sys.executable, "-c", POLL, str(site), str(stop)], stdout=subprocess.PIPE, text=True)
    try:
        time.sleep(0.2)
        for _ in range(3):
            assert main(["build", "--preview", "--full", "-d", str(site), "--entries", str(ENTRIES)]) == 0
    finally:
        stop.touch()
        checks, missing = map(int, poller.communicate(timeout=30)[0].split())
    assert missing == 0
    assert checks > 1000
    assert capsys.readouterr().out.count(f"pages into {site} and searched") == 3
    assert (site / build.MARKER).is_file()
    assert _siblings(site) == LEFT


HOLD_LOCK = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
fcntl.lockf(fd, fcntl.LOCK_EX)
os.ftruncate(fd, 0)
os.pwrite(fd, f"{os.getpid()}\\n".encode(), 0)
print("held", flush=True)
sys.stdin.read()  # until the test closes it
"""


def _hold_lock(path: Path) -> subprocess.Popen:
    """A process that holds the build lock at `path` (as a running build does) until its stdin is closed."""
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(path)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline() == "held\n"
    return holder


def _release(holder: subprocess.Popen) -> None:
    holder.stdin.close()
    holder.wait(timeout=30)
    holder.stdout.close()


@pytest.mark.slow
def test_a_build_waiting_on_the_lock_gives_up_in_bounded_time_naming_the_holder(tmp_path):
    """A build that another one (or an orphan of a killed one) keeps waiting stops after
    KB_LOCK_WAIT seconds with a message that names the holder's pid (attack review M4)."""
    target = tmp_path / "site"
    holder = _hold_lock(tmp_path / ".site.lock")
    try:
        started = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "kb.cli", "build", "--preview", "-d", str(target),
                               "--entries", str(ENTRIES)], cwd=tmp_path, capture_output=True, text=True,
                              timeout=120, env={**os.environ, "KB_LOCK_WAIT": "1"})
        waited = time.monotonic() - started
    finally:
        _release(holder)
    assert done.returncode == 1, done.stderr
    assert f"(pid {holder.pid}) still holds {tmp_path / '.site.lock'} after 1 s" in done.stderr
    assert f"kill {holder.pid}" in done.stderr and "Traceback" not in done.stderr
    assert waited < 60 and not target.exists()


KILLED_MID_RENDER = """
import os, sys, time
from kb.site import pages

pages.PARALLEL_FROM = 2  # the fixture's few pages go to worker processes
marks = sys.argv[1]


def busy(jobs):  # a worker that is rendering when its parent is killed
    open(os.path.join(marks, str(os.getpid())), "w").close()
    time.sleep(300)
    return []


pages._render_part = busy
from kb.cli import main

sys.exit(main(["build", "--preview", "-d", sys.argv[2], "--entries", sys.argv[3]]))
"""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")  # a zombie nobody has reaped yet is dead


@pytest.mark.build
@pytest.mark.parametrize("signal_name", ["SIGTERM", "SIGKILL"])
def test_workers_die_with_a_killed_build_and_the_next_build_runs(tmp_path, signal_name):
    """Killing kb build while its worker processes render (attack review M4) leaves no worker
    alive and no lock held: the next build of the same folder runs at once and succeeds."""
    import signal

    if not hasattr(os, "fork") or (os.cpu_count() or 1) < 2:
        pytest.skip("pages are rendered by workers only with fork and two cores")
    entries = tmp_path / "entries"
    shutil.copytree(ENTRIES, entries)  # outside the checkout: no render cache, every page is rendered
    marks = tmp_path / "marks"
    marks.mkdir()
    target = tmp_path / "site"
    log = tmp_path / "build.log"
    with open(log, "w") as out:
        build_ = subprocess.Popen([sys.executable, "-c", KILLED_MID_RENDER, str(marks), str(target), str(entries)],
                                  cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while not any(marks.iterdir()) and build_.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert any(marks.iterdir()), log.read_text()
    time.sleep(0.3)  # let every worker start
    workers = [int(p.name) for p in marks.iterdir()]
    build_.send_signal(getattr(signal, signal_name))
    build_.wait(timeout=30)
    deadline = time.monotonic() + 15
    while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_alive(pid) for pid in workers), f"workers {workers} outlived their killed parent"
    started = time.monotonic()
    again = subprocess.run([sys.executable, "-m", "kb.cli", "build", "--preview", "-d", str(target), "--entries",
                            str(entries)], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                           env={**os.environ, "KB_LOCK_WAIT": "20"})
    assert again.returncode == 0, again.stderr
    assert "waiting" not in again.stderr and (target / "index.html").is_file()
    assert time.monotonic() - started < 240


@pytest.mark.build
def test_a_second_build_waits_then_removes_what_killed_builds_left(tmp_path, capsys):
    from kb.site.paths import work_folder

    target = tmp_path / "site"
    work = work_folder(target)
    stale = [work / "building-k1ll3d", work / "index-4242", work / "farm-x"]
    for folder in stale:
        (folder / "assets").mkdir(parents=True)
        (folder / "assets" / "x.css").write_text("stale")
    # Folders of the user's beside the site, whatever their names (attack review L8): never touched.
    foreign = [tmp_path / ".other.building-keep", tmp_path / ".site.old-backup-2025", tmp_path / ".site.building-mine",
               tmp_path / ".site.index-notes", tmp_path / ".site.farm-photos"]
    for folder in foreign:
        folder.mkdir()
        (folder / "my only backup").write_text("keep me")

    # A build holding the lock (another process: the lock is a POSIX record lock, which a process
    # shares with no other): the new one must wait, name it, and not touch its staging folders.
    holder = _hold_lock(tmp_path / ".site.lock")
    codes = []
    second = threading.Thread(target=lambda: codes.append(
        main(["build", "--preview", "-d", str(target), "--entries", str(ENTRIES)])))
    second.start()
    err = ""
    deadline = time.monotonic() + 30
    while "waiting" not in err and time.monotonic() < deadline:
        time.sleep(0.05)
        err += capsys.readouterr().err
    try:
        assert err == f"kb build: another kb build into {target} (pid {holder.pid}) is running (it holds " \
                      f"{tmp_path / '.site.lock'}); waiting for it, at most 600 s\n"
        time.sleep(0.3)
        assert all(folder.is_dir() for folder in stale)
        assert not target.exists()
    finally:
        _release(holder)
        second.join()
    assert codes == [0]
    assert (target / "index.html").is_file()
    assert not any(folder.exists() for folder in stale)
    assert all((folder / "my only backup").read_text() == "keep me" for folder in foreign)
    assert _siblings(target) == LEFT | {p.name for p in foreign if p.name.startswith(".site.")}
    assert sorted(p.name for p in work.iterdir()) == [".kb-work"]


def test_a_folder_named_like_the_work_folder_that_kb_did_not_make_is_left_alone(tmp_path, capsys):
    target = tmp_path / "site"
    mine = tmp_path / ".site.kb-work"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    assert main(["build", "--preview", "-d", str(target), "--entries", str(ENTRIES)]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") == 1
    assert f"cannot write {str(mine)!r}: it exists and kb build did not make it" in err
    assert (mine / "notes.txt").read_text() == "mine" and sorted(p.name for p in mine.iterdir()) == ["notes.txt"]


@pytest.mark.build
def test_pages_are_in_place_before_the_search_index_is_rebuilt(tmp_path, monkeypatch):
    """An edited page is on disk when Pagefind starts reading the site again; the old index stays
    until the new one is swapped in, and a failing index leaves the new pages and the old index."""
    from kb.site import index

    entries = tmp_path / "entries"
    shutil.copytree(ENTRIES, entries)
    site = tmp_path / "site"
    assert main(["build", "--preview", "-d", str(site), "--entries", str(entries)]) == 0
    old_index = {p.relative_to(site): p.read_bytes() for p in (site / "pagefind").rglob("*") if p.is_file()}
    (path,) = entries.glob("*.yaml")
    path.write_text(path.read_text(encoding="utf-8").replace("title: ", "title: Renamed ", 1), encoding="utf-8")
    seen = []
    real = index.build_index

    def watching(site_dir, output, urls, previous=None, since=None, cancelled=None):
        page = next(p for p in site_dir.glob("e/*/index.html") if "Renamed " in p.read_text(encoding="utf-8"))
        seen.append(page)
        assert {p.relative_to(site): p.read_bytes() for p in (site / "pagefind").rglob("*") if p.is_file()} == old_index
        return real(site_dir, output, urls, previous, since, cancelled)

    monkeypatch.setattr(index, "build_index", watching)
    assert main(["build", "--preview", "-d", str(site), "--entries", str(entries)]) == 0
    assert seen

    def failing(*_, **__):
        raise index.SearchIndexError("pagefind failed (1): boom")

    path.write_text(path.read_text(encoding="utf-8").replace("Renamed ", "Renamed again ", 1), encoding="utf-8")
    before = {p.relative_to(site): p.read_bytes() for p in (site / "pagefind").rglob("*") if p.is_file()}
    monkeypatch.setattr(index, "build_index", failing)
    assert main(["build", "--preview", "-d", str(site), "--entries", str(entries)]) == 1
    assert any("Renamed again " in p.read_text(encoding="utf-8") for p in site.glob("e/*/index.html"))
    assert {p.relative_to(site): p.read_bytes() for p in (site / "pagefind").rglob("*") if p.is_file()} == before
    assert _siblings(site) == LEFT


INTERRUPTED = """
import os, signal, sys, time
import mkdocs.commands.build as engine

def interrupted(config, **kwargs):  # Ctrl-C while the engine writes the staged site
    os.makedirs(os.path.join(config["site_dir"], "e"), exist_ok=True)
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(10)

engine.build = interrupted
from kb.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.build
def test_ctrl_c_during_a_build_is_one_line_and_leaves_the_site(tmp_path):
    """SIGINT (attack review I3): no KeyboardInterrupt traceback, the site as it was, no staging left."""
    target = tmp_path / "site"
    args = ["build", "--preview", "-d", str(target), "--entries", str(ENTRIES)]
    assert main(args) == 0
    before = {p.relative_to(target): p.read_bytes() for p in target.rglob("*") if p.is_file()}
    done = subprocess.run([sys.executable, "-c", INTERRUPTED, *args, "--full"], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)
    assert done.returncode == 130, done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith(f"kb build: interrupted; {target} was left as it was")
    assert done.stderr.count("interrupted") == 1
    assert {p.relative_to(target): p.read_bytes() for p in target.rglob("*") if p.is_file()} == before
    assert sorted(p.name for p in (tmp_path / ".site.kb-work").iterdir()) == [".kb-work"]


def _session(sid: int) -> list[int]:
    """The live processes of session `sid` (a command started with start_new_session and every
    process it made, however far removed: a forkserver, its workers, the resource tracker)."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit() and _alive(int(name)):
            try:
                fields = Path(f"/proc/{name}/stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if int(fields[3]) == sid:
                found.append(int(name))
    return found


@pytest.fixture(scope="module")
def synth300(tmp_path_factory) -> Path:
    """300 synthetic entries outside the checkout: nothing cached, so `kb check` parses them in its
    worker pool (kb.records.lint.PARALLEL_FROM)."""
    out = tmp_path_factory.mktemp("synth") / "entries"
    subprocess.run([sys.executable, str(ROOT / "bench" / "synth.py"), "300", "--out", str(out)], check=True,
                   capture_output=True, timeout=120)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("signal_name", ["SIGTERM", "SIGKILL", "SIGINT"])
def test_check_pool_workers_die_with_a_killed_check(synth300, tmp_path, signal_name):
    """Killing kb check while its check-stage workers parse (attack review N4) leaves no process of
    the run: no worker, no server, no resource tracker. SIGINT goes to the whole process group, as
    Ctrl-C in a terminal does, and no worker prints a traceback."""
    import signal

    if not hasattr(os, "fork") or (os.cpu_count() or 1) < 2 or not Path("/proc/self/stat").exists():
        pytest.skip("the check stage uses workers only with two cores; processes are found through /proc")
    log = tmp_path / "check.log"  # a file, not a pipe: a process left behind would hold a pipe open
    with open(log, "wb") as out:
        check = subprocess.Popen([sys.executable, "-m", "kb.cli", "check", str(synth300)], cwd=ROOT,
                                 stdout=out, stderr=out, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        # the command, the resource tracker and at least two more: workers (and a server, if any)
        while len(_session(check.pid)) < 4 and check.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert check.poll() is None, "kb check ended before its workers could be killed"
        assert len(_session(check.pid)) >= 4, _session(check.pid)
        if signal_name == "SIGINT":
            os.killpg(check.pid, signal.SIGINT)
        else:
            check.send_signal(getattr(signal, signal_name))
        check.wait(timeout=60)
        deadline = time.monotonic() + 5
        while _session(check.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = _session(check.pid)
        assert not left, f"processes {left} outlived kb check killed by {signal_name}"
        # a worker's traceback starts "Process SpawnProcess-1:"
        assert "Process " not in log.read_text(errors="replace"), log.read_text(errors="replace")
    finally:
        for pid in _session(check.pid):  # only this run's processes, found by its session
            os.kill(pid, signal.SIGKILL)
