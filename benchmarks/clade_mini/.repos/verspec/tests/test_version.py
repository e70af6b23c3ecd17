import pytest
from verspec import Version


def test_parse() -> None:
    assert Version.parse("1.2.3") == Version(1, 2, 3)
    assert Version.parse("v0.10.0") == Version(0, 10, 0)
    version = Version.parse("1.4.0-rc.1+build.7")
    assert version.prerelease == ("rc", "1")
    assert version.build == ("build", "7")
    assert str(version) == "1.4.0-rc.1+build.7"


def test_parse_rejects_bad_versions() -> None:
    for text in ("1.2", "1.2.3.4", "01.2.3", "1.2.3-", "one.two.three"):
        with pytest.raises(ValueError):
            Version.parse(text)


def test_order_of_releases() -> None:
    versions = [Version.parse(text) for text in ("1.10.0", "1.2.0", "0.9.9", "1.2.10", "1.2.9")]
    assert [str(v) for v in sorted(versions)] == ["0.9.9", "1.2.0", "1.2.9", "1.2.10", "1.10.0"]


def test_order_of_prereleases_of_one_version() -> None:
    assert Version.parse("1.0.0-alpha") < Version.parse("1.0.0-alpha.1")
    assert Version.parse("1.0.0-alpha.1") < Version.parse("1.0.0-beta")
    assert Version.parse("1.0.0-beta") < Version.parse("1.0.0-rc.1")


def test_build_metadata_is_ignored_by_comparisons() -> None:
    assert Version.parse("1.0.0+a") == Version.parse("1.0.0+b")
    assert not Version.parse("1.0.0+a") < Version.parse("1.0.0+b")


def test_equal_versions_in_a_set() -> None:
    assert len({Version.parse("1.2.3"), Version.parse("v1.2.3"), Version(1, 2, 3)}) == 1


def test_bump() -> None:
    version = Version.parse("1.2.3")
    assert version.bump("major") == Version(2, 0, 0)
    assert version.bump("minor") == Version(1, 3, 0)
    assert version.bump("patch") == Version(1, 2, 4)
    assert Version.parse("1.2.3-rc.1").bump("patch") == Version(1, 2, 3)
    with pytest.raises(ValueError):
        version.bump("build")
