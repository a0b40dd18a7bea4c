"""The Jinja environment every config renderer uses (HAProxy, keepalived, the web node, both
engines' servers): the .j2 files shipped in a package, rendered as plain text."""

from __future__ import annotations

from jinja2 import Environment, PackageLoader, StrictUndefined


def package_templates(package: str) -> Environment:
    """Templates found next to the modules of `package`; an undefined name is an error (never an
    empty string in a config file), the trailing newline is kept and nothing is HTML-escaped."""
    return Environment(
        loader=PackageLoader(package, ""),
        undefined=StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )
