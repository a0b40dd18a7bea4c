"""Checked string fields of the spec models, one definition for every setting written as a pattern
(CPU lists, rates, sizes, delays, names, addresses...): `Annotated[str, checked(test, expected)]`
refuses a value `test` rejects with "'<value>' <expected>", the one line the file readers print
under the field's name. Pure."""

from __future__ import annotations

import ipaddress
from collections.abc import Callable

from pydantic import AfterValidator


def checked(test: Callable[[str], object], expected: str) -> AfterValidator:
    """A validator for a string field: `test(value)` must be true (a regex's `match` will do),
    else the field's error is "'<value>' <expected>"."""

    def check(v: str) -> str:
        if not test(v):
            raise ValueError(f"'{v}' {expected}")
        return v

    return AfterValidator(check)


def is_ipv4(v: str) -> bool:
    """An IPv4 address such as 198.18.0.3 (not a network, not a name)."""
    try:
        ipaddress.IPv4Address(v)
    except ValueError:
        return False
    return True
