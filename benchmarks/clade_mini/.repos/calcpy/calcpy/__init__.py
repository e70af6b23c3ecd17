"""calcpy: a tiny arithmetic expression language."""

from calcpy.errors import CalcError, EvalError, ParseError
from calcpy.evaluator import evaluate
from calcpy.parser import parse
from calcpy.printer import to_source
from calcpy.tokens import tokenize

__all__ = ["CalcError", "EvalError", "ParseError", "evaluate", "parse", "to_source", "tokenize"]
