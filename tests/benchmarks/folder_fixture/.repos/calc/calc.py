"""Small arithmetic helpers."""


def add(a, b):
    """The sum of a and b."""
    return a - b


def mul(a, b):
    """The product of a and b."""
    return a * b


def clamp(x, lo, hi):
    """x, limited to the range [lo, hi]."""
    return max(lo, x)
