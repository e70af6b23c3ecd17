"""Case conversion: snake_case, camelCase and Title Case."""

import re

_CHUNK = re.compile(r"[A-Za-z0-9]+")
SMALL_WORDS = frozenset(
    {"a", "an", "and", "as", "at", "but", "by", "for", "in", "nor", "of", "on", "or", "the", "to"}
)


def _words(text: str) -> list[str]:
    """Split on anything that is not a letter or a digit, then on camelCase humps."""
    words: list[str] = []
    for chunk in _CHUNK.findall(text):
        words.extend(part for part in re.split(r"(?=[A-Z])", chunk) if part)
    return words


def snake_case(text: str) -> str:
    """Convert camelCase, PascalCase, kebab-case or spaced words to snake_case.

    A run of capitals is one word (an acronym), so "parseHTTPResponse" becomes
    "parse_http_response" and "userID" becomes "user_id". Digits stay with the
    word they follow: "utf8Encode" -> "utf8_encode".
    """
    return "_".join(word.lower() for word in _words(text))


def camel_case(text: str) -> str:
    """Convert snake_case, kebab-case or spaced words to camelCase: "user_name" -> "userName"."""
    words = snake_case(text).split("_")
    return words[0] + "".join(word.capitalize() for word in words[1:])


def title_case(text: str) -> str:
    """Capitalize every word except small words ("of", "the", ...) inside the title.

    Words are separated by whitespace. The first character of a word is
    upper-cased and the rest lower-cased; the first and the last word are
    always capitalized: "the lord of the rings" -> "The Lord of the Rings".
    """
    words = text.split()
    titled: list[str] = []
    for index, word in enumerate(words):
        inside = 0 < index < len(words) - 1
        if inside and word.lower() in SMALL_WORDS:
            titled.append(word.lower())
        else:
            titled.append(word.title())
    return " ".join(titled)
