class CalcError(Exception):
    """Base class of every error calcpy raises."""


class ParseError(CalcError):
    """The expression is not valid syntax."""


class EvalError(CalcError):
    """The expression is valid but cannot be evaluated."""
