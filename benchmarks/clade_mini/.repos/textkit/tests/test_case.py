from textkit import camel_case, snake_case, title_case


def test_snake_case_from_camel_case() -> None:
    assert snake_case("userName") == "user_name"
    assert snake_case("HelloWorld") == "hello_world"


def test_snake_case_from_other_separators() -> None:
    assert snake_case("kebab-case words") == "kebab_case_words"
    assert snake_case("already_snake") == "already_snake"


def test_snake_case_keeps_digits_with_their_word() -> None:
    assert snake_case("utf8Encode") == "utf8_encode"


def test_camel_case() -> None:
    assert camel_case("user_name") == "userName"
    assert camel_case("Hello world") == "helloWorld"


def test_title_case_small_words() -> None:
    assert title_case("the lord of the rings") == "The Lord of the Rings"
    assert title_case("what it is for") == "What It Is For"


def test_title_case_lowercases_the_rest_of_each_word() -> None:
    assert title_case("SHOUTING IN the HALL") == "Shouting in the Hall"
