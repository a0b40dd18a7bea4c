"""A report as data: sections of tables, figures and notes, which the Markdown and HTML templates
walk. Shared by the run report (analysis.document), telemetry, and the experiment reports."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Table:
    header: list[str]
    rows: list[list[str]]
    align: list[str]  # 'l' or 'r' per column
    marks: set[tuple[int, int]] = field(default_factory=set)  # (row, column) of flagged cells
    caption: str = ""
    styles: dict[tuple[int, int], str] = field(default_factory=dict)  # HTML class of a cell (colour)

    def is_marked(self, r: int, c: int) -> bool:
        return (r, c) in self.marks

    def style(self, r: int, c: int) -> str:
        return self.styles.get((r, c), "")


@dataclass
class Figure:
    title: str
    svg: str  # the default view
    alt_svg: str = ""  # the same figure on a log scale (latency), shown by the page's switch
    kind: str = ""  # 'latency' for the switchable ones


@dataclass
class Section:
    key: str
    title: str
    intro: list[str] = field(default_factory=list)  # before the figures and tables
    paragraphs: list[str] = field(default_factory=list)  # notes after them
    warnings: list[str] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    bullets: list[str] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)  # HTML only
    details: list[tuple[str, str]] = field(default_factory=list)  # (label, preformatted text)
    level: int = 2  # heading level: 2 a section, 3 a part of the section before it


def table_section(key: str, title: str, intro: str, table: Table) -> Section | None:
    """A section of one table after a paragraph that says what it shows; None when the table has
    no rows (the report leaves the section out)."""
    if not table.rows:
        return None
    return Section(key, title, intro=[intro], tables=[table])


@dataclass
class Report:
    run_id: int
    title: str
    facts: list[tuple[str, str]]  # (label, value)
    code_facts: set[str]  # labels whose value is a command line
    warnings: list[str]
    sections: list[Section]
    log_latency: bool = False

    @property
    def section_titles(self) -> list[str]:
        return [s.title for s in self.sections if s.level == 2]

    @property
    def switch_at(self) -> str:
        """The section that carries the page's one log-scale switch: the first with a latency plot."""
        return next((s.key for s in self.sections if any(f.kind == "latency" for f in s.figures)), "")


def provenance_section(prov: dict[str, Any], intro: str) -> Section | None:
    """A run's provenance as a section: short values as bullets, long ones folded away."""
    if not prov:
        return None
    sec = Section("provenance", "Provenance", intro=[intro])
    for k, v in prov.items():
        text = json.dumps(v, sort_keys=True)
        if len(text) > 160:
            sec.details.append((k, json.dumps(v, sort_keys=True, indent=1)))
        else:
            sec.bullets.append(f"{k}: {text}")
    return sec
