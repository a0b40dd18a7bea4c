"""Analysis of a designed experiment: effects, interactions, ANOVA, a fitted surface. Pure.

The model is ordinary least squares from statsmodels over coded factors (each in [-1, 1], see
experiment/design.py), every repetition one observation:

* main effects of every factor, two-factor interactions of numeric (or two-level) factors, and,
  when a factor was run at 3 or more levels by a response-surface design, its square;
* a term whose column adds nothing to the model (aliased with terms before it, main effects
  first, or not estimable from the points run) is left out and listed as such;
* an **effect** is the change of the response from the low to the high end of a factor's range
  (twice the coded coefficient), with its confidence interval from the fit's t distribution; a
  factor with more than two categorical levels has no single effect, only its ANOVA row;
* the ANOVA table is statsmodels' type II table.

The fitted surface over the two strongest factors is predicted on a grid with the other factors
at the centre of their ranges (categorical ones at their first level).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from clusterbench.experiment.design import Coding

Level = int | float | str | bool


@dataclass(frozen=True)
class Effect:
    term: str  # "nodes", "nodes×threads", "threads²"
    effect: float  # low -> high change (for a square: the coded coefficient)
    low: float | None  # CI of the effect; None without residual degrees of freedom
    high: float | None
    t: float | None
    p: float | None

    @property
    def significant(self) -> bool:
        return self.low is not None and self.high is not None and (self.low > 0 or self.high < 0)


@dataclass(frozen=True)
class AnovaRow:
    term: str
    df: float
    sum_sq: float
    f: float | None
    p: float | None


@dataclass
class Surface:
    x: str
    y: str
    xs: list[float]  # coded
    ys: list[float]
    z: list[list[float]]  # z[j][i] at (xs[i], ys[j])
    x_ticks: list[tuple[float, str]]
    y_ticks: list[tuple[float, str]]
    best: tuple[float, float, float]  # coded x, coded y, predicted response


@dataclass
class DoeAnalysis:
    response: str
    n: int
    effects: list[Effect]
    anova: list[AnovaRow]
    r2: float | None
    df_resid: float
    confidence: float
    t_crit: float | None
    dropped: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    surface: Surface | None = None
    fit: Any = None  # the statsmodels results object (for predictions)
    codings: dict[str, Coding] = field(default_factory=dict)

    def effect(self, term: str) -> Effect | None:
        return next((e for e in self.effects if e.term == term), None)

    def predict(self, point: dict[str, Level]) -> float:
        import pandas as pd

        row = {_col(n): c.code(point[n]) if _numeric(c) else str(point[n]) for n, c in self.codings.items()}
        return float(self.fit.predict(pd.DataFrame([row])).iloc[0])


def _col(name: str) -> str:
    return f"x_{name}"


def _numeric(c: Coding) -> bool:
    """Numeric in the model: numbers, and categorical factors with exactly two levels (coded ±1)."""
    return c.kind != "categorical" or len(c.levels) == 2


def _pretty(term: str, names: dict[str, str]) -> str:
    out = term
    for col, name in sorted(names.items(), key=lambda kv: -len(kv[0])):
        out = out.replace(f"C({col})", name).replace(f"I({col} ** 2)", f"{name}²").replace(col, name)
    return out.replace(":", "×")


def _candidates(names: list[str], codings: dict[str, Coding], df: Any, quadratic: bool) -> list[str]:
    """Model terms to try, main effects first: each factor, each pair of numeric factors, and
    (quadratic) the square of each numeric factor with at least 3 levels."""

    def main(n: str) -> str:
        return _col(n) if _numeric(codings[n]) else f"C({_col(n)})"

    out = [main(n) for n in names]
    numeric = [n for n in names if _numeric(codings[n])]
    out += [f"{_col(a)}:{_col(b)}" for a, b in itertools.combinations(numeric, 2)]
    if quadratic:
        for n in numeric:
            if codings[n].kind != "categorical" and len({round(v, 9) for v in df[_col(n)]}) >= 3:
                out.append(f"I({_col(n)} ** 2)")
    return out


def _estimable(
    candidates: list[str], df: Any, distinct: int, labels: dict[str, str]
) -> tuple[list[str], list[str]]:
    """Keep a term only if its columns raise the rank of the model matrix: aliased or inestimable
    terms are dropped (main effects come first, so they win against the interactions aliased with
    them)."""
    import patsy  # type: ignore[import-untyped, unused-ignore]

    kept: list[str] = []
    dropped: list[str] = []
    rank = 1
    for term in candidates:
        mat = np.asarray(patsy.dmatrix(" + ".join([*kept, term]), df))
        r = int(np.linalg.matrix_rank(mat))
        if rank < r <= distinct:
            kept.append(term)
            rank = r
        else:
            dropped.append(_pretty(term, labels))
    return kept, dropped


def _effects(fit: Any, ci: Any, labels: dict[str, str]) -> list[Effect]:
    """Each numeric term's effect (twice its coefficient for a ±1-coded factor, the coefficient
    itself for a square), with its interval, t and p when there are residual degrees of freedom."""
    out = []
    for term in fit.params.index:
        if term == "Intercept" or term.startswith("C("):
            continue
        scale = 1.0 if "** 2" in term else 2.0
        lo = hi = tv = pv = None
        if ci is not None:
            lo, hi = scale * float(ci.loc[term, 0]), scale * float(ci.loc[term, 1])
            tv, pv = _finite(fit.tvalues[term]), _finite(fit.pvalues[term])
        out.append(Effect(_pretty(term, labels), scale * float(fit.params[term]), lo, hi, tv, pv))
    return out


def _anova(fit: Any, labels: dict[str, str]) -> list[AnovaRow]:
    import statsmodels.api as sm  # type: ignore[import-untyped, unused-ignore]

    table = sm.stats.anova_lm(fit, typ=2)
    return [
        AnovaRow("residual" if term == "Residual" else _pretty(str(term), labels), float(row["df"]),
                 float(row["sum_sq"]), _finite(row.get("F")), _finite(row.get("PR(>F)")))
        for term, row in table.iterrows()
    ]  # fmt: skip


def analyze(
    points: Sequence[dict[str, Level]],
    y: Sequence[float],
    codings: dict[str, Coding],
    *,
    response: str = "tps",
    quadratic: bool = False,
    confidence: float = 0.95,
) -> DoeAnalysis | None:
    """Fit the model; None when there is nothing to fit (fewer than 2 distinct points)."""
    import pandas as pd
    import statsmodels.formula.api as smf  # type: ignore[import-untyped, unused-ignore]
    from scipy import stats as sps  # type: ignore[import-untyped, unused-ignore]

    if len(points) != len(y):
        raise ValueError("one response per point")
    names = [n for n, c in codings.items() if len({json_key(p.get(n)) for p in points}) > 1]
    if not names or len(points) < 2:
        return None
    data: dict[str, list[Any]] = {"y": [float(v) for v in y]}
    for n in names:
        c = codings[n]
        data[_col(n)] = [c.code(p[n]) if _numeric(c) else str(p[n]) for p in points]
    df = pd.DataFrame(data)
    labels = {_col(n): n for n in names}
    distinct = len({tuple(json_key(p.get(n)) for n in names) for p in points})
    kept, dropped = _estimable(_candidates(names, codings, df, quadratic), df, distinct, labels)
    fit = smf.ols("y ~ " + " + ".join(kept), data=df).fit()
    df_resid = float(fit.df_resid)
    notes: list[str] = []
    alpha = 1.0 - confidence
    t_crit = float(sps.t.ppf(1 - alpha / 2, df_resid)) if df_resid > 0 else None
    ci = fit.conf_int(alpha) if df_resid > 0 else None
    if df_resid <= 0:
        notes.append(
            "no residual degrees of freedom (as many model terms as distinct runs): effects have no "
            "confidence intervals; repeat the points (repetitions >= 2) or add centre points"
        )
    out = DoeAnalysis(
        response=response, n=len(points), effects=_effects(fit, ci, labels),
        anova=_anova(fit, labels) if df_resid > 0 else [], r2=_finite(fit.rsquared), df_resid=df_resid,
        confidence=confidence, t_crit=t_crit, dropped=dropped, notes=notes, fit=fit,
        codings={n: codings[n] for n in names},
    )  # fmt: skip
    out.surface = _surface(out, points)
    return out


def json_key(v: Any) -> str:
    return repr(v)


def _finite(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def strongest(a: DoeAnalysis, k: int = 2) -> list[str]:
    """The k numeric factors with the largest main effects (|t| when there are CIs, else |effect|)."""
    mains = [e for e in a.effects if e.term in a.codings and _numeric(a.codings[e.term])]
    mains.sort(key=lambda e: -(abs(e.t) if e.t is not None else abs(e.effect)))
    return [e.term for e in mains[:k]]


def _surface(a: DoeAnalysis, points: Sequence[dict[str, Level]], steps: int = 41) -> Surface | None:
    import pandas as pd

    two = strongest(a, 2)
    if len(two) < 2:
        return None
    x, y = two
    grid = [-1.0 + 2.0 * i / (steps - 1) for i in range(steps)]
    base: dict[str, Any] = {}
    for n, c in a.codings.items():
        base[_col(n)] = (
            0.0 if _numeric(c) and c.kind != "categorical" else (-1.0 if _numeric(c) else str(c.levels[0]))
        )
    rows = []
    for yv in grid:
        for xv in grid:
            rows.append({**base, _col(x): xv, _col(y): yv})
    pred = np.asarray(a.fit.predict(pd.DataFrame(rows)), dtype=float).reshape(steps, steps)
    j, i = np.unravel_index(int(np.argmax(pred)), pred.shape)
    return Surface(
        x=x,
        y=y,
        xs=grid,
        ys=grid,
        z=pred.tolist(),
        x_ticks=a.codings[x].tick_levels(),
        y_ticks=a.codings[y].tick_levels(),
        best=(grid[int(i)], grid[int(j)], float(pred[j, i])),
    )
