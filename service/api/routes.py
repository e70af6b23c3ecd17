"""The route class of every API router: what no store can keep is refused before the endpoint runs.

A NUL character or a lone surrogate in a path or query parameter, or anywhere in a JSON
body (keys too), answers 422 at its place (in a URL a surrogate can only come percent-encoded,
as bytes that are not UTF-8, which the server decodes to U+FFFD: such a parameter is refused
too, rather than looked up under a name the client never sent); so does a body nested deeper
than MAX_JSON_DEPTH, or holding an integer longer than Python reads (4300 digits:
`sys.get_int_max_str_digits`), or an object that gives a key twice (JSON parsers disagree on
which one counts).
PostgreSQL refuses NUL in text and no UTF-8 exists for a lone surrogate, so without this
such a value surfaces as a 500 from the database or from encoding the answer, on whichever
column it happens to reach first.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Coroutine, Iterable
from typing import Any
from urllib.parse import unquote_to_bytes

from fastapi import Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.dependencies.models import Dependant
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute

from contracts.text import MAX_JSON_DEPTH, json_depth, text_problem, text_problems
from service.api.deps import BODY_GUARDS, TokenGuard, check_token_before_body

Handler = Callable[[Request], Coroutine[Any, Any, Response]]


def _issue(loc: Iterable[str | int], message: str, kind: str = "unstorable_text") -> dict[str, Any]:
    return {"loc": list(loc), "msg": message, "type": kind}


NOT_UTF8 = "must be valid Unicode text (its percent-encoded bytes are not UTF-8, e.g. an encoded surrogate)"


def _param_issues(
    kind: str, items: Iterable[tuple[str, str]], *, raw_utf8: bool = True
) -> list[dict[str, Any]]:
    """`raw_utf8`: whether the URL part the items come from is UTF-8 once percent-decoded; when it
    is not, an item holding U+FFFD is where the server replaced the bytes that are not."""
    issues = []
    for name, value in items:
        problem = text_problem(value) or text_problem(name)
        if problem is None and not raw_utf8 and "\ufffd" in name + value:
            problem = NOT_UTF8
        if problem is not None:
            issues.append(_issue((kind, name.replace("\x00", "\ufffd")), problem))
    return issues


def _is_utf8(raw: bytes, *, form: bool = False) -> bool:
    """Whether a raw path (or, `form`, query string) is UTF-8 text once percent-decoded."""
    try:
        unquote_to_bytes(raw.replace(b"+", b" ") if form else raw).decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


class _KeyTwice(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _keys_once(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object's members as a dict, refusing a key given twice (json.loads keeps the last)."""
    members: dict[str, Any] = {}
    for key, value in pairs:
        if key in members:
            raise _KeyTwice(key)
        members[key] = value
    return members


def _body_issues(request: Request, body: bytes) -> list[dict[str, Any]]:
    content_type = request.headers.get("content-type", "")
    if content_type.startswith(("multipart/", "application/x-www-form-urlencoded")):
        return []  # form fields are checked by their own types
    try:
        data = json.loads(body, object_pairs_hook=_keys_once)
    except _KeyTwice as twice:
        # repr: a NUL or lone surrogate in the key is shown escaped, never stored or encoded
        return [_issue(("body",), f"the key {twice.key!r} is given twice in one object", "duplicate_key")]
    except UnicodeDecodeError:
        return [_issue(("body",), "the body is not UTF-8 text")]
    except json.JSONDecodeError:
        return []  # FastAPI answers it, at the position of the error
    except RecursionError:
        return [_issue(("body",), f"the body is nested more than {MAX_JSON_DEPTH} levels deep", "too_deep")]
    except ValueError:
        # The one ValueError json.loads leaves once the decode errors above are caught: an
        # integer with more digits than Python converts (uncaught, it was a 500).
        limit = sys.get_int_max_str_digits()
        return [_issue(("body",), f"a number in the body has more than {limit} digits", "too_many_digits")]
    if json_depth(data) > MAX_JSON_DEPTH:
        return [_issue(("body",), f"the body is nested more than {MAX_JSON_DEPTH} levels deep", "too_deep")]
    return [_issue(("body", *loc), problem) for loc, problem in text_problems(data)]


def _query_names(dependant: Dependant) -> set[str]:
    names = {param.alias for param in dependant.query_params}
    for sub in dependant.dependencies:
        names |= _query_names(sub)
    return names


def _guards(dependant: Dependant) -> list[TokenGuard]:
    """The token checks among the route's dependencies (the router's included), each once."""
    found: list[TokenGuard] = []
    for sub in dependant.dependencies:
        if sub.call in BODY_GUARDS and sub.call not in found:
            found.append(sub.call)
        found += [guard for guard in _guards(sub) if guard not in found]
    return found


class CheckedRoute(APIRoute):
    def get_route_handler(self) -> Handler:
        handler = super().get_route_handler()
        query_names = _query_names(self.dependant)
        guards = _guards(self.dependant)

        async def checked(request: Request) -> Response:
            raw_path = request.scope.get("raw_path") or request.scope["path"].encode()
            issues = _param_issues("path", request.path_params.items(), raw_utf8=_is_utf8(raw_path))
            # Only the parameters the route reads: FastAPI ignores any other.
            queried = [(k, v) for k, v in request.query_params.multi_items() if k in query_names]
            query_utf8 = _is_utf8(request.scope.get("query_string", b""), form=True)
            issues += _param_issues("query", queried, raw_utf8=query_utf8)
            if self.body_field is not None:
                # A caller without the token is refused before a byte of its body is read.
                for guard in guards:
                    await check_token_before_body(request, guard)
                body = await request.body()  # kept on the request: the endpoint reads it again
                if body:
                    # In a thread: walking megabytes of JSON would hold up every other request.
                    issues += await run_in_threadpool(_body_issues, request, body)
            if issues:
                raise RequestValidationError(issues)
            return await handler(request)

        return checked
