"""Designed experiments: which points of a part's factor space to run. Pure.

The design matrices come from pyDOE3 (two-level fractional factorials by resolution or by
generators, Plackett-Burman, central composite, Box-Behnken, Latin hypercube); this module only
maps their coded values onto the levels the experiment file gives, and says what is aliased.

How a factor's levels are read, for every design but the full grid:

* a numeric factor with 2 levels is a **range** [low, high] (coded -1 .. +1, linear in the
  value; integers are rounded); with 3 levels the middle one is the centre (coded 0);
* a numeric factor with more than 3 levels is a list of **allowed values** in order (coded by
  position: threads = [1, 2, 4, 8, 16, 32, 64] is coded on a log scale), and a coded value
  snaps to the nearest allowed one;
* a categorical factor (strings, booleans, a fixed set such as innodb_flush_log_at_trx_commit)
  takes its levels by position too; two-level designs need exactly 2 of them, and centre
  points, central composite and Box-Behnken designs need numeric factors.

Several design rows can land on one point (replicated centre points, integers rounded in a Latin
hypercube): the point then runs that many times the experiment's repetitions.
"""

from __future__ import annotations

import math
import re
import typing
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

if TYPE_CHECKING:  # numpy is imported where a design is built: `plan` of a grid starts without it
    import numpy as np

Level = int | float | str | bool
Point = tuple[tuple[str, Level], ...]

DesignKind = Literal[
    "full-grid",
    "fractional-factorial",
    "plackett-burman",
    "central-composite",
    "box-behnken",
    "latin-hypercube",
]
TWO_LEVEL = ("fractional-factorial", "plackett-burman")
SURFACE = ("central-composite", "box-behnken", "latin-hypercube")


class DesignSpec(BaseModel):
    """`[experiment] design = "NAME"` or `design = { kind = "NAME", ... }` (also per part)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: DesignKind = "full-grid"
    resolution: int | None = Field(
        None, ge=3, le=5, description="fractional-factorial: III, IV or V (3, 4, 5)"
    )
    generators: str | None = Field(
        None, description="fractional-factorial: pyDOE3 generators instead of a resolution, e.g. 'a b c abc'"
    )
    center_points: int = Field(0, ge=0, le=50, description="runs at the centre of the ranges")
    samples: int | None = Field(None, ge=2, le=2000, description="latin-hypercube: number of points")
    seed: int = Field(1, ge=0, description="latin-hypercube: random seed")
    face: Literal["faced", "inscribed", "circumscribed"] = Field(
        "faced", description="central-composite: star points on the faces (3 levels) or beyond"
    )

    @model_validator(mode="before")
    @classmethod
    def _from_name(cls, v: Any) -> Any:
        return {"kind": v} if isinstance(v, str) else v

    @model_validator(mode="after")
    def _options(self) -> DesignSpec:
        k = self.kind
        if self.resolution is not None and k != "fractional-factorial":
            raise ValueError("resolution is an option of fractional-factorial designs")
        if self.generators is not None:
            if k != "fractional-factorial":
                raise ValueError("generators is an option of fractional-factorial designs")
            if self.resolution is not None:
                raise ValueError("give either resolution or generators, not both")
            if not re.fullmatch(r"\s*[a-z]+(\s+[a-z]+)*\s*", self.generators):
                raise ValueError("generators are words of letters separated by spaces, e.g. 'a b c abc'")
        if self.samples is not None and k != "latin-hypercube":
            raise ValueError("samples is an option of latin-hypercube designs")
        if k == "full-grid" and self.center_points:
            raise ValueError("center_points needs a designed experiment (e.g. fractional-factorial)")
        return self

    def describe(self) -> str:
        k = self.kind
        bits = []
        if k == "fractional-factorial":
            bits.append(
                f"generators '{self.generators}'" if self.generators else f"resolution {self.resolution or 4}"
            )
        if k == "latin-hypercube":
            bits.append(f"{self.samples or 10} samples, seed {self.seed}")
        if k == "central-composite":
            bits.append(f"{self.face}")
        if self.center_points:
            bits.append(f"{self.center_points} centre point(s)")
        return k + (f" ({', '.join(bits)})" if bits else "")


# ---- factor kinds and coding --------------------------------------------------------------------

FactorKind = Literal["int", "float", "categorical"]


def kind_of(annotation: Any) -> FactorKind:
    """'int', 'float' or 'categorical' from a Factors field's annotation (list[int] | None ...).

    Driven by the type alone, so a factor added to the spec (e.g. an engine) gets a kind here and
    as a search knob without a list to update."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)] or [annotation]
    inner = typing.get_args(args[0])
    item = inner[0] if inner else args[0]
    if item is bool or typing.get_origin(item) is Literal:
        return "categorical"
    if item is int:
        return "int"
    if item is float:
        return "float"
    return "categorical"


@dataclass(frozen=True)
class Coding:
    """How one factor's values map to coded units in [-1, 1]."""

    name: str
    kind: FactorKind
    levels: tuple[Level, ...]

    @property
    def by_position(self) -> bool:
        return self.kind == "categorical" or len(self.levels) > 3

    @property
    def low(self) -> float:
        return float(self.levels[0])

    @property
    def high(self) -> float:
        return float(self.levels[-1])

    def code(self, value: Level) -> float:
        import numpy as np

        if self.by_position:
            if value in self.levels:
                return -1.0 + 2.0 * self.levels.index(value) / max(1, len(self.levels) - 1)
            if self.kind == "categorical":
                raise ValueError(f"{self.name}: {value!r} is not a level")
            # a numeric value between two allowed values: interpolate the position
            xs = [float(v) for v in self.levels]
            pos = float(np.interp(float(value), xs, range(len(xs))))
            return -1.0 + 2.0 * pos / (len(xs) - 1)
        if self.high == self.low:
            return 0.0
        return -1.0 + 2.0 * (float(value) - self.low) / (self.high - self.low)

    def value(self, coded: float) -> Level:
        """The level for a coded value (clipped to [-1, 1]; snapped or rounded as the factor needs)."""
        c = min(1.0, max(-1.0, float(coded)))
        if self.by_position:
            i = int(math.floor((c + 1.0) / 2.0 * (len(self.levels) - 1) + 0.5))
            return self.levels[i]
        if len(self.levels) == 3 and abs(c) < 1e-9:
            return self.levels[1]
        x = self.low + (c + 1.0) / 2.0 * (self.high - self.low)
        if self.kind == "int":
            return int(math.floor(x + 0.5))
        return round(x, 3)

    def tick_levels(self) -> list[tuple[float, str]]:
        """(coded position, label) for plot axes."""
        if self.by_position or len(self.levels) <= 3:
            return [(self.code(v), str(v)) for v in self.levels]
        return [(c, str(self.value(c))) for c in (-1.0, 0.0, 1.0)]


# ---- expansion ----------------------------------------------------------------------------------


@dataclass
class DesignResult:
    points: list[Point]  # distinct points, in design order
    copies: dict[Point, int]  # how many design rows landed on each point
    notes: list[str] = field(default_factory=list)
    aliases: list[str] = field(default_factory=list)  # "nodes = threads×clients", main effects first


def _letters(n: int) -> list[str]:
    return [chr(ord("a") + i) for i in range(n)]


def _alias_lines(matrix: np.ndarray, names: list[str], kind: str) -> list[str]:
    """What is aliased with what, up to two-factor interactions, in factor names."""
    import numpy as np
    import pyDOE3  # type: ignore[import-untyped, unused-ignore]

    letters = _letters(len(names))
    tr = dict(zip(letters, names, strict=True))

    def word(w: str) -> str:

        return "×".join(tr[c] for c in w)

    out: list[str] = []
    if len(names) <= 26:
        lines, _ = pyDOE3.fracfact_aliasing(matrix)
        for ln in lines:
            words = [w.strip() for w in ln.split("=")]
            short = [w for w in words if len(w) <= 2]
            if len(short) > 1:
                out.append(" = ".join(word(w) for w in short))
    if kind == "plackett-burman" and not out:
        # Runs not a power of two: no effect is fully aliased, but each main effect is partially
        # correlated with the two-factor interactions that do not involve it.
        parts: dict[str, list[str]] = {}
        for i, a in enumerate(names):
            for j in range(len(names)):
                for k in range(j + 1, len(names)):
                    if i in (j, k):
                        continue
                    r = float(np.corrcoef(matrix[:, i], matrix[:, j] * matrix[:, k])[0, 1])
                    if abs(r) > 1e-9:
                        parts.setdefault(f"{a} (|r| = {abs(r):.2f})", []).append(f"{names[j]}×{names[k]}")
        for head, ws in parts.items():
            out.append(f"{head} ~ partially " + ", ".join(ws[:6]) + (" ..." if len(ws) > 6 else ""))
    return out


def _resolution(alias_map: list[str]) -> float:
    """The shortest word of the defining relation, from pyDOE3's alias lines ('a = bcd' ...)."""
    best = math.inf
    for ln in alias_map:
        words = [set(w.strip()) for w in ln.split("=")]
        for i in range(len(words)):
            for j in range(i + 1, len(words)):
                best = min(best, len(words[i] ^ words[j]))
    return best


def _fraction_by_resolution(n: int, res: int) -> np.ndarray | None:
    """The smallest two-level fraction of at least this resolution pyDOE3 finds: fracfact_by_res,
    else (it refuses some small cases, e.g. 4 factors at resolution IV) pyDOE3's search for the
    best generators, for up to 6 factors (beyond, that search takes seconds to minutes)."""
    import numpy as np
    import pyDOE3  # type: ignore[import-untyped, unused-ignore]

    try:
        return np.asarray(pyDOE3.fracfact_by_res(n, res))
    except ValueError:
        pass
    if n > 6:
        return None
    for erased in range(n - 1, 0, -1):
        if 2 ** (n - erased) < n + 1:
            continue
        try:
            gen, alias_map, _ = pyDOE3.fracfact_opt(n, erased)
        except (ValueError, IndexError):
            continue
        if _resolution(alias_map) >= res:
            return np.asarray(pyDOE3.fracfact(gen))
    return None


def _design_problems(
    names: list[str], codings: dict[str, Coding], spec: DesignSpec, where: str
) -> list[str]:
    """What keeps these factors out of the design: level counts, categorical factors, how many."""
    k = spec.kind
    problems: list[str] = []
    if k in TWO_LEVEL:
        for n in names:
            c = codings[n]
            if len(c.levels) not in (2, 3) or (c.kind == "categorical" and len(c.levels) != 2):
                problems.append(
                    f"{where}.factors.{n}: a two-level design needs 2 levels (low, high) or, for a numeric "
                    f"factor, 3 (low, centre, high); got {len(c.levels)}"
                )
            elif spec.center_points and c.kind == "categorical":
                problems.append(
                    f"{where}.factors.{n}: centre points need numeric factors ({n} is categorical)"
                )
        if len(names) < 2:
            problems.append(f"{where}.factors: a {k} design needs at least 2 factors")
    if k in ("central-composite", "box-behnken"):
        problems += [
            f"{where}.factors.{n}: a {k} design needs numeric factors ({n} is categorical)"
            for n in names if codings[n].kind == "categorical"
        ]  # fmt: skip
        need = 3 if k == "box-behnken" else 2
        if len(names) < need:
            problems.append(f"{where}.factors: a {k} design needs at least {need} factors")
    return problems


def _fractional(nf: int, spec: DesignSpec, where: str, notes: list[str]) -> Any:
    """A two-level fraction: from the generators given, else by the resolution asked."""
    import pyDOE3  # type: ignore[import-untyped, unused-ignore]

    if spec.generators is not None:
        gen = spec.generators.split()
        if len(gen) != nf:
            raise ValueError(f"{where}.design.generators: {len(gen)} words for {nf} factors")
        bad = sorted({ch for w in gen for ch in w if ord(ch) - ord("a") >= nf})
        if bad:
            raise ValueError(f"{where}.design.generators: letters {', '.join(bad)} name no factor")
        return pyDOE3.fracfact(spec.generators)
    res = spec.resolution or 4
    m = _fraction_by_resolution(nf, res)
    if m is None:
        m = pyDOE3.ff2n(nf)
        notes.append(
            f"pyDOE3 has no fraction of resolution {res} for {nf} factors: the full 2^{nf} factorial "
            "is used (or give design.generators)"
        )
    return m


def _matrix(nf: int, spec: DesignSpec, where: str, notes: list[str]) -> Any:
    """The design's coded matrix (levels in [-1, 1]), one row per run."""
    import numpy as np
    import pyDOE3  # type: ignore[import-untyped, unused-ignore]

    k = spec.kind
    if k == "fractional-factorial":
        return _fractional(nf, spec, where, notes)
    if k == "plackett-burman":
        return pyDOE3.pbdesign(nf)
    if k == "central-composite":
        face = {"faced": "ccf", "inscribed": "cci", "circumscribed": "ccc"}[spec.face]
        m = pyDOE3.ccdesign(nf, center=(max(1, spec.center_points), 0), face=face)
        if spec.face == "circumscribed":
            notes.append("circumscribed star points are scaled into the ranges (the factorial part moves in)")
        return np.asarray(m) / float(np.max(np.abs(m)))  # the star points at the ends of the ranges
    if k == "box-behnken":
        return pyDOE3.bbdesign(nf, center=max(1, spec.center_points))
    if k == "latin-hypercube":
        samples = spec.samples or max(10, 2 * nf + 1)
        return np.asarray(pyDOE3.lhs(nf, samples=samples, criterion="maximin", seed=spec.seed)) * 2.0 - 1.0
    raise ValueError(k)  # pragma: no cover - the full grid does not come here


def expand_design(
    levels: Mapping[str, Sequence[Level]], spec: DesignSpec, kinds: dict[str, FactorKind], where: str
) -> DesignResult:
    """The points of a design over `levels`. Raises ValueError (one line per problem, naming
    `where`) when the factors do not fit the design."""
    import numpy as np

    names = list(levels)
    codings = {n: Coding(n, kinds[n], tuple(levels[n])) for n in names}
    k = spec.kind
    problems = _design_problems(names, codings, spec, where)
    if problems:
        raise ValueError("\n".join(problems))
    notes: list[str] = []
    nf = len(names)
    m = np.asarray(_matrix(nf, spec, where, notes), dtype=float)
    aliases = _alias_lines(m, names, k) if k in ("fractional-factorial", "plackett-burman") else []
    if k in TWO_LEVEL and spec.center_points:
        m = np.vstack([m, np.zeros((spec.center_points, nf))])
    rows: list[Point] = [
        tuple((name, _coded_value(codings[name], float(c), k)) for name, c in zip(names, row, strict=True))
        for row in m
    ]
    copies = Counter(rows)
    distinct = list(dict.fromkeys(rows))
    merged = len(rows) - len(distinct)
    if merged and k == "latin-hypercube":
        notes.append(
            f"{merged} sample(s) landed on a point already drawn (levels are discrete): it runs more times"
        )
    return DesignResult(distinct, dict(copies), notes, aliases)


def _coded_value(c: Coding, coded: float, kind: str) -> Level:
    if kind == "latin-hypercube" and c.by_position:
        # equal-width bins over the positions, so each level gets its share of the samples
        i = min(len(c.levels) - 1, int((coded + 1.0) / 2.0 * len(c.levels)))
        return c.levels[i]
    if kind in TWO_LEVEL and c.kind == "categorical":
        return c.levels[0] if coded < 0 else c.levels[-1]
    return c.value(coded)
