"""Find the Debian mirror this machine's apt already uses, so image builds never hard-code one.

Reads deb822 `.sources` files and one-line `.list` files; the first `deb` entry that
serves the wanted suite wins.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sandbox.base import SandboxUnavailable

_USABLE_SCHEMES = ("http://", "https://", "ftp://", "file:/")


@dataclass(frozen=True)
class AptSource:
    uri: str
    suites: tuple[str, ...]
    keyring: Path | None = None


_DEBOOTSTRAP_SCRIPTS = Path("/usr/share/debootstrap/scripts")


def find_mirror(
    suite: str, apt_dir: Path = Path("/etc/apt"), scripts: Path = _DEBOOTSTRAP_SCRIPTS
) -> AptSource:
    """The first `deb` source in apt's configuration that serves `suite`; failing that, the
    first one that serves a release of the same distribution (debootstrap builds both with
    one script: Debian's releases all share `sid`'s), since its archive holds every release."""
    sources = read_sources(apt_dir)
    for source in sources:
        if suite in source.suites:
            return source
    family = _script(scripts, suite)
    if family is not None:
        for source in sources:
            if any(_script(scripts, other) == family for other in source.suites):
                return AptSource(source.uri, (suite,), source.keyring)
    seen = ", ".join(f"{s.uri} ({' '.join(s.suites)})" for s in sources) or "none"
    raise SandboxUnavailable(
        f"no apt source under {apt_dir} serves Debian '{suite}' (found: {seen}); pass a mirror explicitly"
    )


def read_sources(apt_dir: Path) -> list[AptSource]:
    """All enabled `deb` sources, in the order apt reads them."""
    found: list[AptSource] = []
    main_list = apt_dir / "sources.list"
    if main_list.is_file():
        found += parse_one_line(main_list.read_text())
    parts = apt_dir / "sources.list.d"
    if parts.is_dir():
        for path in sorted(parts.iterdir()):
            if path.suffix == ".list":
                found += parse_one_line(path.read_text())
            elif path.suffix == ".sources":
                found += parse_deb822(path.read_text())
    return found


def parse_one_line(text: str) -> list[AptSource]:
    """`deb [opt=val ...] URI suite [component ...]` lines."""
    found: list[AptSource] = []
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line.startswith("deb "):
            continue
        rest = line[4:].strip()
        options: dict[str, str] = {}
        if rest.startswith("["):
            closing = rest.find("]")
            if closing < 0:
                continue
            for option in rest[1:closing].split():
                key, _, value = option.partition("=")
                options[key] = value
            rest = rest[closing + 1 :].strip()
        words = rest.split()
        if len(words) < 2 or not words[0].startswith(_USABLE_SCHEMES):
            continue
        found.append(AptSource(words[0], (words[1],), _keyring(options.get("signed-by", ""))))
    return found


def parse_deb822(text: str) -> list[AptSource]:
    """Stanzas of `Types:`, `URIs:`, `Suites:`, `Signed-By:` fields."""
    found: list[AptSource] = []
    for stanza in _stanzas(text):
        if stanza.get("enabled", "yes").strip().lower() == "no":
            continue
        if "deb" not in stanza.get("types", "").split():
            continue
        suites = tuple(stanza.get("suites", "").split())
        keyring = _keyring(stanza.get("signed-by", ""))
        for uri in stanza.get("uris", "").split():
            if uri.startswith(_USABLE_SCHEMES):
                found.append(AptSource(uri, suites, keyring))
    return found


def _stanzas(text: str) -> list[dict[str, str]]:
    stanzas: list[dict[str, str]] = []
    current: dict[str, str] = {}
    key = ""
    for raw in [*text.splitlines(), ""]:
        if raw.startswith("#"):
            continue
        if not raw.strip():
            if current:
                stanzas.append(current)
            current, key = {}, ""
        elif raw[0] in " \t":
            if key:  # continuation line (e.g. an inline key block)
                current[key] += "\n" + raw.strip()
        elif ":" in raw:
            key, _, value = raw.partition(":")
            key = key.strip().lower()
            current[key] = value.strip()
    return stanzas


def _script(scripts: Path, suite: str) -> Path | None:
    # `bookworm-updates` has no script: only whole releases count.
    path = scripts / suite
    return path.resolve() if "/" not in suite and path.is_file() else None


def _keyring(value: str) -> Path | None:
    # Only a keyring file can be handed to debootstrap; inline key blocks are skipped.
    value = value.strip()
    if value.startswith("/") and "\n" not in value:
        path = Path(value)
        return path if path.is_file() else None
    return None
