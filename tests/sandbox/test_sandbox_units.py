"""Pure parts of the sandbox package: no engine needed."""

from __future__ import annotations

import os
import random
from functools import partial
from pathlib import Path

import pytest

from sandbox.base import SandboxError, SandboxUnavailable
from sandbox.docker_exec import CappedOutput, FrameDemuxer
from sandbox.images import rootfs
from sandbox.images.apt_sources import AptSource, find_mirror, parse_deb822, parse_one_line
from sandbox.images.npm import ensure_npm_tree
from sandbox.images.rootfs import RootfsRecipe, customise
from sandbox.images.wheels import InvalidRequirement, WheelTarget, normalise
from sandbox.registry import UnknownBackend, backend_names, get_backend

DEB822 = """\
# a comment
Types: deb deb-src
URIs: http://mirror.example/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: {keyring}

Types: deb
URIs: http://mirror.example/debian-security
Suites: bookworm-security
Components: main

Enabled: no
Types: deb
URIs: http://disabled.example/debian
Suites: bookworm

Types: deb
URIs: cdrom:/media http://second.example/debian
Suites: trixie
Signed-By:
 -----BEGIN PGP PUBLIC KEY BLOCK-----
 .
 abc
 -----END PGP PUBLIC KEY BLOCK-----
"""


def test_deb822_sources(tmp_path: Path) -> None:
    keyring = tmp_path / "key.gpg"
    keyring.write_bytes(b"key")
    sources = parse_deb822(DEB822.format(keyring=keyring))
    assert sources == [
        AptSource("http://mirror.example/debian", ("bookworm", "bookworm-updates"), keyring),
        AptSource("http://mirror.example/debian-security", ("bookworm-security",), None),
        AptSource("http://second.example/debian", ("trixie",), None),
    ]


def test_one_line_sources() -> None:
    text = (
        "deb [arch=amd64 signed-by=/nonexistent.gpg] http://a.example/debian bookworm main\n"
        "# deb http://commented.example/debian bookworm main\n"
        "deb-src http://src.example/debian bookworm main\n"
        "deb http://b.example/debian bookworm-updates main  # trailing comment\n"
    )
    assert parse_one_line(text) == [
        AptSource("http://a.example/debian", ("bookworm",), None),
        AptSource("http://b.example/debian", ("bookworm-updates",), None),
    ]


def test_find_mirror_reads_both_formats_in_apt_order(tmp_path: Path) -> None:
    (tmp_path / "sources.list.d").mkdir()
    (tmp_path / "sources.list").write_text("deb http://list.example/debian bookworm-updates main\n")
    (tmp_path / "sources.list.d" / "debian.sources").write_text(DEB822.format(keyring="/none"))
    assert find_mirror("bookworm", tmp_path).uri == "http://mirror.example/debian"
    assert find_mirror("trixie", tmp_path).uri == "http://second.example/debian"
    with pytest.raises(SandboxUnavailable, match="sid"):
        find_mirror("sid", tmp_path, scripts=tmp_path / "no-debootstrap-scripts")


def test_find_mirror_falls_back_to_the_archive_of_another_release(tmp_path: Path) -> None:
    # The host lists only bookworm; its archive serves trixie too (debootstrap builds both
    # with sid's script), but not an Ubuntu release (another script).
    (tmp_path / "sources.list").write_text(
        "deb http://security.example/debian-security bookworm-security main\n"
        "deb [signed-by=/none.gpg] http://archive.example/debian bookworm main\n"
    )
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    (scripts / "sid").write_text("# debian\n")
    (scripts / "gutsy").write_text("# ubuntu\n")
    for name, target in (("bookworm", "sid"), ("trixie", "sid"), ("noble", "gutsy")):
        (scripts / name).symlink_to(target)
    assert find_mirror("trixie", tmp_path, scripts=scripts) == AptSource(
        "http://archive.example/debian", ("trixie",), None
    )
    with pytest.raises(SandboxUnavailable, match="noble"):
        find_mirror("noble", tmp_path, scripts=scripts)


def test_a_failed_debootstrap_keeps_its_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A stand-in debootstrap that fails as the real one does: the cause only in its own log,
    # inside the root that is about to be removed.
    fake = tmp_path / "bin" / "debootstrap"
    fake.parent.mkdir()
    fake.write_text(
        "#!/bin/sh\n"
        "for arg; do root=$previous; previous=$arg; done\n"
        'mkdir -p "$root/debootstrap"\n'
        """echo "E: Couldn't find these debs: npm" > "$root/debootstrap/debootstrap.log"\n"""
        'echo "W: Failure trying to run: chroot"\n'
        "exit 1\n"
    )
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    log = tmp_path / "logs" / "trixie.log"
    log.parent.mkdir()
    with pytest.raises(SandboxError, match=f"full log: {log}") as caught:
        rootfs._debootstrap(RootfsRecipe(), tmp_path / "root", "http://m.example/d", None, print, log)
    assert "W: Failure trying to run" in str(caught.value)
    assert "Couldn't find these debs: npm" in log.read_text()


def test_find_mirror_on_this_machine() -> None:
    assert find_mirror("bookworm").uri.startswith(("http://", "https://", "file:/"))


def _collect(into: dict[int, bytearray], stream: int, data: bytes) -> None:
    into[stream].extend(data)


def test_demuxer_reassembles_frames_split_anywhere() -> None:
    frames = [(1, b"hello "), (2, b"oops"), (1, b""), (1, b"x" * 70000), (2, b"!")]
    wire = b"".join(bytes([s, 0, 0, 0]) + len(p).to_bytes(4, "big") + p for s, p in frames)
    rng = random.Random(7)
    for _ in range(20):
        got: dict[int, bytearray] = {1: bytearray(), 2: bytearray()}
        demux = FrameDemuxer(partial(_collect, got))
        at = 0
        while at < len(wire):
            step = rng.randint(1, 9000)
            demux.feed(wire[at : at + step])
            at += step
        assert bytes(got[1]) == b"hello " + b"x" * 70000
        assert bytes(got[2]) == b"oops!"


def test_capped_output_shares_one_budget() -> None:
    out = CappedOutput(10)
    out.add(1, b"123456")
    out.add(2, b"abc")
    assert not out.truncated
    out.add(1, b"789")
    out.add(2, b"def")
    assert (bytes(out.stdout), bytes(out.stderr), out.truncated) == (b"1234567", b"abc", True)


def test_requirements_are_normalised() -> None:
    assert normalise(["pytest", " requests>=2 ", "", "numpy [ extra ] == 1.*", "pytest"]) == [
        "numpy [ extra ] == 1.*",
        "pytest",
        "requests>=2",
    ]


@pytest.mark.parametrize(
    "bad",
    [
        "--index-url=http://evil.example/simple",
        "-e .",
        "pkg @ file:///etc/shadow",
        "pkg @ https://evil.example/pkg.whl",
        "/etc/passwd",
        "./local",
        "pkg; os_name == 'posix'",
        "pkg>=1 --hash=sha256:00",
    ],
)
def test_requirements_that_could_touch_the_host_are_refused(bad: str) -> None:
    with pytest.raises(InvalidRequirement):
        normalise([bad])
    assert issubclass(InvalidRequirement, ValueError)


def test_wheel_target_covers_older_manylinux_levels() -> None:
    options = WheelTarget(machine="x86_64").pip_options()
    assert "--only-binary=:all:" in options and "--python-version=3.11" in options
    for platform in ("manylinux_2_36_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64"):
        assert f"--platform={platform}" in options


def test_rootfs_key_changes_with_inputs() -> None:
    assert RootfsRecipe().key() == RootfsRecipe().key()
    assert RootfsRecipe().key() != RootfsRecipe(packages=("python3",)).key()


def test_customise_adds_user_and_layout_once(tmp_path: Path) -> None:
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc/passwd").write_text("root:x:0:0:root:/root:/bin/bash\n")
    (tmp_path / "etc/group").write_text("root:x:0:\n")
    (tmp_path / "etc/shadow").write_text("root:*:19000:0:99999:7:::\n")
    (tmp_path / "var/cache/apt/archives").mkdir(parents=True)
    (tmp_path / "var/cache/apt/archives/big.deb").write_bytes(b"deb")
    (tmp_path / "usr/share/doc/pkg").mkdir(parents=True)
    (tmp_path / "usr/share/doc/pkg/copyright").write_text("c")
    (tmp_path / "usr/share/doc/pkg/changelog.gz").write_text("log")
    recipe = RootfsRecipe()
    customise(tmp_path, recipe)
    customise(tmp_path, recipe)
    passwd = (tmp_path / "etc/passwd").read_text().splitlines()
    assert passwd == ["root:x:0:0:root:/root:/bin/bash", "clade:x:1000:1000:Clade sandbox:/tmp:/bin/bash"]
    assert (tmp_path / "etc/group").read_text().count("clade:x:1000:") == 1
    for rel in recipe.dirs:
        assert (tmp_path / rel).is_dir()
    assert not (tmp_path / "var/cache/apt/archives/big.deb").exists()
    assert (tmp_path / "usr/share/doc/pkg/copyright").exists()
    assert not (tmp_path / "usr/share/doc/pkg/changelog.gz").exists()


def test_registry_knows_docker_and_names_the_known_ones() -> None:
    assert "docker" in backend_names()
    with pytest.raises(UnknownBackend, match="known: docker") as caught:
        get_backend("podman-maybe")
    assert isinstance(caught.value, SandboxError) and isinstance(caught.value, LookupError)


@pytest.mark.parametrize("spec", ["jest", "jest@^29 --global", "../evil@1", "https://x.example/p.tgz@1"])
def test_npm_tree_takes_only_name_at_range(tmp_path: Path, spec: str) -> None:
    with pytest.raises(ValueError, match="name@range"):
        ensure_npm_tree(["jest@^29.7.0", spec], tmp_path, progress=print)
    assert not (tmp_path / "npm").exists()  # refused before npm runs
