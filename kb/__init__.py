"""Blackwell serving-failure knowledge base, one folder per stage, imported in one direction:
records/ (load -> schema -> check -> catalog) -> site/ (render, export, search index, build, serve),
triage/ (`kb match`) and doctor/ (`kb doctor`); cli.py is the commands."""

from pathlib import Path

ENTRIES = Path("kb/entries")  # the live entries, relative to the repository root
DISTRIBUTION = "blackwell-serving-kb"  # pyproject.toml's [project] name
CODE_ROOT = Path(__file__).resolve().parent.parent  # a checkout, or site-packages for the wheel
OWN_ENTRIES = CODE_ROOT / ENTRIES  # the index that comes with this code


def is_checkout(folder: Path) -> bool:
    """Whether `folder` is a checkout of this project: its pyproject.toml names this distribution.
    A folder that merely holds `kb/entries/` (a cloned repository, an unpacked archive, a shared
    temporary folder) is not one; site-packages, where the wheel puts `kb/`, is not one either."""
    import tomllib

    try:
        with open(folder / "pyproject.toml", "rb") as stream:
            project = tomllib.load(stream).get("project")
    except (OSError, ValueError):
        return False
    return isinstance(project, dict) and project.get("name") == DISTRIBUTION


def checkout_of(entries: Path) -> Path | None:
    """The checkout of this project whose `kb/entries/` the folder `entries` is, or None for any other
    folder: its locks (kb/ids.lock, kb/urls.lock) are the ones that number and publish its entries."""
    folder = Path(entries).resolve()
    root = folder.parent.parent
    return root if folder == root / ENTRIES and is_checkout(root) else None


def default_entries() -> Path:
    """The entries a command reads when none are named: the index that comes with this code
    (`make setup` installs the checkout editable; the wheel carries its own), so `kb match` and
    `kb doctor` work from any folder. A developer's kb, run from a checkout (editable), reads the
    kb/entries/ of the checkout it runs in, when that is a checkout of this project too; an
    installed kb never reads a working directory's kb/entries/ unless --entries names it (attack
    review N5: it would swap the index for whatever records a folder holds)."""
    if ENTRIES.is_dir() and is_checkout(CODE_ROOT) and is_checkout(Path.cwd()):
        return ENTRIES
    return OWN_ENTRIES
