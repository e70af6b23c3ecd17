from confkit import Config, apply_env


def test_overrides_and_adds_values() -> None:
    config = Config({"server": {"port": "8080"}})
    applied = apply_env(config, {"APP_SERVER__PORT": "9090", "APP_SERVER__HOST": "0.0.0.0"})
    assert applied == [("server", "host"), ("server", "port")]
    assert config.get("server", "port") == "9090"
    assert config.get("server", "host") == "0.0.0.0"


def test_keys_with_underscores() -> None:
    config = Config()
    apply_env(config, {"APP_DATABASE__POOL_SIZE": "10"})
    assert config.get_int("database", "pool_size") == 10


def test_other_variables_are_ignored() -> None:
    config = Config()
    applied = apply_env(config, {"PATH": "/bin", "APP_DEBUG": "1", "OTHER_SERVER__PORT": "1"})
    assert applied == []
    assert config.sections() == []


def test_custom_prefix() -> None:
    config = Config()
    apply_env(config, {"SHOP_CART__LIMIT": "3"}, prefix="shop")
    assert config.get("cart", "limit") == "3"
