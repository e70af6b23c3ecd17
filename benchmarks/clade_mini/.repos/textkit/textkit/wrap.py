"""Line wrapping and truncation."""

DEFAULT_PLACEHOLDER = "…"


def wrap(text: str, width: int) -> list[str]:
    """Greedy word wrap: split `text` into lines of at most `width` characters.

    Words are separated by whitespace and never split; a word longer than `width`
    gets a line of its own. Returns an empty list for blank text.
    """
    if width < 1:
        raise ValueError("width must be at least 1")
    lines: list[str] = []
    current = ""
    for word in text.split():
        if len(current) + 1 + len(word) <= width:
            current = f"{current} {word}" if current else word
        else:
            lines.append(current)
            current = word
    if current:
        lines.append(current)
    return lines


def truncate(text: str, width: int, placeholder: str = DEFAULT_PLACEHOLDER) -> str:
    """Shorten `text` to at most `width` characters, ending with `placeholder`.

    Text that already fits is returned unchanged. Otherwise the text is cut at
    the last word boundary that leaves room for the placeholder (or mid-word if
    the first word alone is too long) and the placeholder is appended, so the
    result is never longer than `width`.
    """
    if len(text) <= width:
        return text
    if width < len(placeholder):
        raise ValueError("width is smaller than the placeholder")
    cut = text[:width].rstrip()
    boundary = cut.rfind(" ")
    if boundary > 0:
        cut = cut[:boundary].rstrip()
    return cut + placeholder
