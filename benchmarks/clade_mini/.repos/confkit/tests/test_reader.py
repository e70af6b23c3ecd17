import pytest
from confkit import ConfigError, loads

SAMPLE = """
# a comment
[server]
host = example.org
port = 8080   ; the public port
; another comment

[Database]
URL = postgres://db.internal/app
"""


def test_sections_and_values() -> None:
    config = loads(SAMPLE)
    assert config.sections() == ["server", "database"]
    assert config.get("server", "host") == "example.org"
    assert config.get("server", "port") == "8080"


def test_names_are_case_insensitive() -> None:
    config = loads(SAMPLE)
    assert config.get("database", "url") == "postgres://db.internal/app"
    assert config.get("DATABASE", "Url") == "postgres://db.internal/app"


def test_inline_comments_need_whitespace_before_them() -> None:
    config = loads("[a]\ncolor = #ff0000\nchannel = irc#python # the channel\n")
    assert config.get("a", "color") == "#ff0000"
    assert config.get("a", "channel") == "irc#python"


def test_empty_value() -> None:
    assert loads("[a]\nkey =\n").get("a", "key") == ""


def test_key_before_any_section() -> None:
    with pytest.raises(ConfigError, match="line 2"):
        loads("\nkey = value\n")


def test_bad_section_header() -> None:
    with pytest.raises(ConfigError, match="line 1"):
        loads("[server\nkey = value\n")
