from confkit import Config, dump, dumps, load, loads


def test_dumps() -> None:
    config = Config({"server": {"host": "example.org", "port": "8080"}, "db": {"pool": "5"}})
    assert dumps(config) == "[server]\nhost = example.org\nport = 8080\n\n[db]\npool = 5\n"


def test_dumps_empty_config() -> None:
    assert dumps(Config()) == ""


def test_round_trip_of_plain_values() -> None:
    config = Config({"a": {"name": "Ada Lovelace", "color": "#00ff00", "empty": ""}})
    assert loads(dumps(config)) == config


def test_dump_and_load_a_file(tmp_path) -> None:
    config = Config({"a": {"b": "c"}})
    dump(config, tmp_path / "settings.ini")
    assert load(tmp_path / "settings.ini") == config
