"""One line per problem in a file a user wrote: pydantic's validation errors as `file: field: what`
(an unknown key with the keys that section takes), and TOML syntax errors as `file:line: ...`."""

from __future__ import annotations

import re
import tomllib
from typing import Any

from pydantic import BaseModel, ValidationError

from clusterbench.errors import InputError


def _format_loc(loc: tuple[Any, ...]) -> str:
    parts: list[str] = []
    for p in loc:
        if isinstance(p, int):
            parts.append(f"[{p}]")
        else:
            parts.append(("." if parts else "") + str(p))
    return "".join(parts)


def _known_keys(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    """Walk the model along `loc` (minus the unknown key) and list the keys it accepts."""
    current: Any = model
    for p in loc[:-1]:
        if isinstance(p, int):
            continue
        field = (
            current.model_fields.get(p)
            if isinstance(current, type) and issubclass(current, BaseModel)
            else None
        )
        if field is None:
            return []
        ann = field.annotation
        args = getattr(ann, "__args__", ())
        candidates = [ann, *args]
        current = next((c for c in candidates if isinstance(c, type) and issubclass(c, BaseModel)), None)
        if current is None:
            return []
    return (
        sorted(current.model_fields) if isinstance(current, type) and issubclass(current, BaseModel) else []
    )


def validation_messages(exc: ValidationError, model: type[BaseModel], source: str) -> list[str]:
    """One line per problem: `source: field: what is wrong`."""
    lines: list[str] = []
    for err in exc.errors():
        loc = tuple(err.get("loc", ()))
        where = _format_loc(loc) or "(top level)"
        if err["type"] == "extra_forbidden":
            known = _known_keys(model, loc)
            hint = f" (known keys: {', '.join(known)})" if known else ""
            lines.append(f"{source}: unknown key '{where}'{hint}")
            continue
        msg = str(err.get("msg", "invalid"))
        msg = msg.removeprefix("Value error, ")
        got = err.get("input")
        got_s = "" if isinstance(got, dict | list) or got is None else f" (got {got!r})"
        lines.append(f"{source}: {where}: {msg}{got_s}")
    return lines


def parse_toml(text: str, source: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        # tomllib says "... (at line 3, column 7)"; turn that into file:line first.
        m = re.search(r"\(at line (\d+), column (\d+)\)", str(exc))
        where = f"{source}:{m.group(1)}" if m else source
        msg = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(exc))
        raise InputError(f"{where}: invalid TOML: {msg}; fix the syntax and try again") from None


