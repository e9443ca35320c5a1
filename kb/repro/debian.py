"""Install one pinned Debian package release into the per-user cache (a reproduction's `source: debian`).

Some tools that print an index literal ship in no pip wheel: nvcc older than 12.8 is one (the wheels
checked, nvidia-cuda-nvcc-cu11 11.8.89 and -cu12 12.1.105 and 12.4.131 to 12.9.86, hold ptxas alone), while
Debian's non-free archive has nvidia-cuda-toolkit 11.8.89 (bookworm) and 12.4.131 (trixie).
kb/repro/debian.lock pins each release: suite, component, package=version, architecture and the
sha256 that the suite's signed Packages index lists for its .deb.

`apt-get download` fetches it with an apt state of its own, inside the partial folder (sources,
lists, cache): the system's apt state and sources are not changed and nothing is installed. The
mirror and keyring are those of the system's own Debian source, with the pinned suite and component;
on a system with none (Ubuntu, a CI runner), Debian's own redirector and the debian-archive-keyring
package's keyring, which Ubuntu ships too. Either way the .deb must have the pinned sha256. The .deb's sha256 is checked against the lock, then `dpkg-deb -x`
unpacks it into the release folder, which is renamed into place when complete, as install.py does
for a pip release. Offline, `--wheelhouse DIR` takes the .deb from DIR, hash-checked the same way.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from kb.records.reproduction import DEBIAN_LOCK, debian_pins
from kb.repro.install import InstallError, folder, partial_folder, placed

APT_SOURCES = Path("/etc/apt")
OS_RELEASE = Path("/etc/os-release")
DEBIAN_MIRROR = "https://deb.debian.org/debian"
DEBIAN_KEYRING = Path("/usr/share/keyrings/debian-archive-keyring.gpg")


def deb_name(package: str, version: str, architecture: str) -> str:
    """The file name apt gives a downloaded .deb (an epoch's ':' written '%3a')."""
    return f"{package}_{version.replace(':', '%3a')}_{architecture}.deb"


def system_source(apt: Path = APT_SOURCES, os_release: Path = OS_RELEASE,
                  keyring: Path = DEBIAN_KEYRING) -> tuple[str, str | None]:
    """The URI and keyring of the system's Debian archive: the first `deb` source whose suites hold
    the system's own codename (from os-release, on Debian only), read from sources.list.d/*.sources (deb822) and
    sources.list (one line each); on a system without one, Debian's redirector with the
    debian-archive-keyring package's keyring."""
    release = _read(os_release)
    codename = re.search(r"^VERSION_CODENAME=\"?([a-z]+)", release, re.M)
    if codename is not None and re.search(r"^ID=\"?debian\"?$", release, re.M):  # Ubuntu's own archive has no bookworm
        for stanza in _stanzas(apt):
            if "deb" in stanza.get("types", "").split() and codename.group(1) in stanza.get("suites", "").split():
                return stanza["uris"].split()[0], stanza.get("signed-by")
    if keyring.is_file():
        return DEBIAN_MIRROR, str(keyring)
    raise InstallError(f"this system has no Debian source in {apt} and no {keyring}: install the "
                       "debian-archive-keyring package (Debian and Ubuntu have it) so that the Debian archive's "
                       "signatures can be checked, or pass --wheelhouse DIR holding the .deb")


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return ""


def _stanzas(apt: Path) -> list[dict[str, str]]:
    out = []
    for path in sorted((apt / "sources.list.d").glob("*.sources")):
        for block in re.split(r"\n\s*\n", _read(path)):
            fields = {}
            for line in block.splitlines():
                key, sep, value = line.partition(":")
                if sep and not line.startswith(("#", " ", "\t")):
                    fields[key.strip().lower()] = value.strip()
            if fields.get("uris") and fields.get("enabled", "yes") != "no":
                out.append(fields)
    for line in _read(apt / "sources.list").splitlines():
        # deb [signed-by=/path arch=amd64] URI SUITE COMPONENT...
        found = re.match(r"\s*(deb)\s+(?:\[([^\]]*)\]\s+)?(\S+)\s+(\S+)", line)
        if found:
            options = dict(o.split("=", 1) for o in (found.group(2) or "").split() if "=" in o)
            out.append({"types": "deb", "uris": found.group(3), "suites": found.group(4),
                        "signed-by": options.get("signed-by")})
    return out


def install(package: str, version: str, wheelhouse: Path | None = None, timeout: float = 900) -> Path:
    """The release's folder (the .deb unpacked), fetched and unpacked first when the cache lacks it."""
    target = folder(package, version)
    if target.is_dir():
        return target
    pin = debian_pins().get((package, version))
    if pin is None:
        raise InstallError(f"{package}={version} is not pinned in {DEBIAN_LOCK}: add its line (suite, component, "
                           "package=version, architecture, sha256 from the suite's Packages index)")
    name = deb_name(package, version, pin.architecture)
    if wheelhouse is not None and not (wheelhouse / name).is_file():
        raise InstallError(f"--wheelhouse {wheelhouse}: no {name} there; put the .deb there (`apt-get download "
                           f"{package}={version}` from Debian {pin.suite} {pin.component}), or leave the option out "
                           "to download it")
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = partial_folder(target)
    try:
        if wheelhouse is not None:
            deb = wheelhouse / name
        else:
            print(f"kb repro: downloading {package}={version} (Debian {pin.suite} {pin.component}) into {target}",
                  file=sys.stderr, flush=True)
            deb = _download(partial, package, version, pin, timeout)
        digest = hashlib.sha256(deb.read_bytes()).hexdigest()
        if digest != pin.sha256:
            raise InstallError(f"{deb.name} has sha256 {digest}, {DEBIAN_LOCK} pins {pin.sha256}: not unpacked "
                               "(a changed archive or a wrong pin; check the suite's Packages index)")
        release = partial / "release"
        done = subprocess.run(["dpkg-deb", "-x", str(deb), str(release)], capture_output=True, text=True,
                              timeout=timeout)
        if done.returncode != 0:
            raise InstallError(f"dpkg-deb could not unpack {deb.name}: {done.stderr.strip() or done.returncode}")
        return placed(release, target)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InstallError(f"fetching {package}={version} failed: {exc}") from None
    finally:
        shutil.rmtree(partial, ignore_errors=True)


def _download(partial: Path, package: str, version: str, pin, timeout: float) -> Path:
    """`apt-get update` and `apt-get download` with an apt state inside `partial`: the .deb's path."""
    uri, keyring = system_source()
    state = partial / "apt"
    for sub in ("sources.list.d", "preferences.d", "lists/partial", "cache/archives/partial", "deb"):
        (state / sub).mkdir(parents=True, exist_ok=True)
    (state / "status").write_text("", encoding="utf-8")
    (state / "sources.list.d" / "kb-repro.sources").write_text(
        f"Types: deb\nURIs: {uri}\nSuites: {pin.suite}\nComponents: {pin.component}\n"
        + (f"Signed-By: {keyring}\n" if keyring else ""), encoding="utf-8")
    options = []
    for key, value in (("Dir::Etc::SourceList", os.devnull), ("Dir::Etc::SourceParts", state / "sources.list.d"),
                       ("Dir::Etc::Preferences", os.devnull), ("Dir::Etc::PreferencesParts", state / "preferences.d"),
                       ("Dir::State::Lists", state / "lists"), ("Dir::Cache", state / "cache"),
                       ("Dir::State::status", state / "status"), ("APT::Architecture", pin.architecture),
                       ("Debug::NoLocking", "true")):
        options += ["-o", f"{key}={value}"]
    if os.geteuid() == 0:  # apt's _apt user cannot write into a root-owned private folder
        options += ["-o", "APT::Sandbox::User=root"]
    for command in (["update"], ["download", f"{package}={version}"]):
        try:
            done = subprocess.run(["apt-get", *options, "-q", *command], cwd=state / "deb", capture_output=True,
                                  text=True, timeout=timeout, env={**os.environ, "LC_ALL": "C"})
        except FileNotFoundError:
            raise InstallError("apt-get is not installed: a Debian package is fetched with apt (or pass "
                               "--wheelhouse DIR holding the .deb)") from None
        said = [line for line in (done.stderr + done.stdout).splitlines() if line.startswith(("E:", "Err:"))]
        if done.returncode != 0 or said:
            raise InstallError(f"apt-get {command[0]} for {package}={version} (Debian {pin.suite} {pin.component}) "
                               f"failed: {said[0] if said else done.returncode}; check the network and the "
                               "system's Debian source")
    deb = state / "deb" / deb_name(package, version, pin.architecture)
    if not deb.is_file():
        raise InstallError(f"apt-get download left no {deb.name}")
    return deb
