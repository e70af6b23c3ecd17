from textkit import slugify


def test_lowercases_and_joins_words() -> None:
    assert slugify("Hello World") == "hello-world"


def test_drops_accents() -> None:
    assert slugify("Crème Brûlée") == "creme-brulee"


def test_custom_separator() -> None:
    assert slugify("Release notes 2024", sep="_") == "release_notes_2024"


def test_strips_separators_at_the_ends() -> None:
    assert slugify(" trailing space ") == "trailing-space"


def test_max_length() -> None:
    assert slugify("one two three", max_length=7) == "one-two"
