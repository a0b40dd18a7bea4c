"""Small texts the experiment report's sections share: which factors vary, a level and a number
as shown, whether a point's repetitions converged."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from clusterbench.experiment.results import PointStats


def varying(points: Sequence[PointStats]) -> list[str]:
    names: list[str] = []
    for p in points:
        for k in p.point:
            if k not in names:
                names.append(k)
    return [k for k in names if len({json.dumps(p.point.get(k)) for p in points}) > 1]


def level_text(v: Any) -> str:
    if isinstance(v, bool):
        return "on" if v else "off"
    return str(v)


def num_text(v: float | None, spec: str = ",.1f") -> str:
    return "—" if v is None else format(v, spec)


def converged_text(p: PointStats) -> str:
    """'yes, ±3.1 %' or 'no, ±8.2 %' (the CI's wider side relative to the statistic), '—' without
    repetitions = "auto"."""
    c = p.convergence
    if c is None:
        return "—"
    hw = c.half_width
    width = f", ±{hw * 100:.1f} %" if hw is not None else ", no CI"
    if c.coverage < 0.95 - 1e-9 and c.n > 1:
        width += f" ({c.coverage:.0%} coverage)"
    return ("yes" if c.converged else "no") + width
