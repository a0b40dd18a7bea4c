"""A reader for the EDN that verify/edn.py writes (maps, vectors, keywords, strings, numbers,
nil, booleans), and the list-append history it holds back as transactions: what a user's
exported history goes through when it is read again."""

from __future__ import annotations

import re
from typing import Any

from clusterbench.history.ops import Outcome
from clusterbench.history.txn import MicroOp, Txn

_TOKEN = re.compile(r'\s*(?:(,)|([\[\]{}])|("(?:\\.|[^"\\])*")|([^\s,\[\]{}"]+))')
_OUTCOME = {":ok": Outcome.OK, ":fail": Outcome.FAIL, ":info": Outcome.UNKNOWN}


def _atom(text: str) -> Any:
    if text == "nil":
        return None
    if text in ("true", "false"):
        return text == "true"
    if text.startswith(":"):
        return text
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    return float(text)


def parse(text: str) -> Any:
    """One EDN value."""
    tokens = [m for m in _TOKEN.findall(text) if any(m)]
    pos = 0

    def value() -> Any:
        nonlocal pos
        comma, bracket, string, atom = tokens[pos]
        pos += 1
        if comma:
            return value()
        if string:
            return string[1:-1].replace('\\"', '"').replace("\\\\", "\\")
        if atom:
            return _atom(atom)
        close = {"[": "]", "{": "}"}[bracket]
        items = []
        while tokens[pos][1] != close:
            if tokens[pos][0]:
                pos += 1
                continue
            items.append(value())
        pos += 1
        return items if bracket == "[" else dict(zip(items[::2], items[1::2], strict=True))

    out = value()
    assert all(tok[0] for tok in tokens[pos:]), "trailing input"
    return out


def _mop(item: list[Any]) -> MicroOp:
    f, k, v = item
    if f == ":append":
        return MicroOp("append", k, v)
    return MicroOp("r", k, None if v is None else tuple(v))


def read_list_append(text: str) -> list[Txn]:
    """Transactions from an exported history: each invocation paired with its process's next
    completion, numbered in order of start (as txns_from_ops numbers them)."""
    ops = [parse(line) for line in text.splitlines() if line.strip()]
    open_: dict[int, dict[str, Any]] = {}
    pairs = []
    for op in ops:
        if op[":type"] == ":invoke":
            assert op[":process"] not in open_, "a process invoked twice"
            open_[op[":process"]] = op
        else:
            pairs.append((open_.pop(op[":process"]), op))
    assert not open_, "an invocation without completion"
    pairs.sort(key=lambda p: (p[0][":time"], p[1][":time"], p[0][":process"]))
    return [
        Txn(
            i,
            inv[":process"],
            done.get(":node", f"p{inv[':process']}"),
            _OUTCOME[done[":type"]],
            tuple(_mop(m) for m in done[":value"]),
            inv[":time"] / 1e9,
            done[":time"] / 1e9,
            final=bool(done.get(":final?", False)),
            error=done.get(":error"),
        )
        for i, (inv, done) in enumerate(pairs)
    ]
