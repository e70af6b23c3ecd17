import pytest
from confkit import Config, ConfigError

CONFIG = Config(
    {
        "server": {"port": "8080", "debug": "true", "verbose": "Yes", "tags": "a, b,, c "},
        "empty": {},
    }
)


def test_get_and_default() -> None:
    assert CONFIG.get("server", "port") == "8080"
    assert CONFIG.get("server", "missing", default="x") == "x"


def test_missing_key_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="missing"):
        CONFIG.get("server", "missing")
    with pytest.raises(ConfigError):
        CONFIG.get("nowhere", "port")


def test_get_int() -> None:
    assert CONFIG.get_int("server", "port") == 8080
    assert CONFIG.get_int("server", "workers", default=4) == 4


def test_get_bool_true_values() -> None:
    assert CONFIG.get_bool("server", "debug") is True
    assert CONFIG.get_bool("server", "verbose") is True
    assert CONFIG.get_bool("server", "missing", default=False) is False


def test_get_list() -> None:
    assert CONFIG.get_list("server", "tags") == ["a", "b", "c"]
    assert CONFIG.get_list("server", "missing", default=[]) == []


def test_set_and_sections() -> None:
    config = Config()
    config.set("Server", "Port", "1")
    assert config.sections() == ["server"]
    assert config.keys("server") == ["port"]
    assert config.as_dict() == {"server": {"port": "1"}}
