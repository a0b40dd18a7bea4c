"""Experiment files: TOML read, aliases resolved, a profile merged over the file, then validated
into an Experiment, every problem one line naming the field and the next step; nothing starts."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from clusterbench.errors import InputError
from clusterbench.experiment.design import expand_design
from clusterbench.experiment.search import check_search
from clusterbench.experiment.spec import (
    ENGINES,
    DesignSpec,
    Experiment,
    ExperimentFile,
    Level,
    Part,
    Workload,
    check_client_hosts,
    check_own_workloads,
    factor_kinds,
    for_engine,
)
from clusterbench.experiment.web import check_web
from clusterbench.spec.aliases import ALIASES, canonical_keys
from clusterbench.spec.files import read_toml_text, require_kind
from clusterbench.spec.topology import Topology, parse_toml, validation_messages


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = _merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


PROFILE_KEYS = ("experiment", "topology", "workload", "factors", "parts", "search")


def _canonical_names(data: dict[str, Any], where: str, prefix: str = "") -> dict[str, Any]:
    """The file's tables with every setting under its one name (spec/aliases.py), before a profile
    or a part is merged over them: `time` in the file and `duration` in a profile are one setting.
    A table that gives a setting under two names is refused, named."""
    out = copy.deepcopy(data)
    factor_names = ("workload",)  # the factors with aliases (`test`, `tests`)

    def fix(table: dict[str, Any], path: str, names: tuple[str, ...] = tuple(ALIASES)) -> dict[str, Any]:
        try:
            return dict(canonical_keys(table, names))
        except ValueError as exc:
            raise InputError(f"{where}: {prefix}{path}: {exc}") from None

    tables: list[tuple[dict[str, Any], str, str, tuple[str, ...]]] = [
        (out, "workload", "workload", tuple(ALIASES)),
        (out, "factors", "factors", factor_names),
    ]
    if isinstance(out.get("experiment"), dict):
        tables.append((out["experiment"], "baseline", "experiment.baseline", factor_names))
    if isinstance(out.get("search"), dict):
        tables.append((out["search"], "knobs", "search.knobs", factor_names))
    parts = out.get("parts")
    for name, part in parts.items() if isinstance(parts, dict) else ():
        if isinstance(part, dict):
            tables.append((part, "workload", f"parts.{name}.workload", tuple(ALIASES)))
            tables.append((part, "factors", f"parts.{name}.factors", factor_names))
    for parent, key, path, names in tables:
        if isinstance(parent.get(key), dict):
            parent[key] = fix(parent[key], path, names)
    return out


def _profile(data: dict[str, Any], source: str, profile: str | None) -> tuple[dict[str, Any], str]:
    """The file's data with a profile merged over it, and where messages say they come from."""
    if profile is None:
        return data, source
    profiles = data.get("profiles", {})
    if not isinstance(profiles, dict) or profile not in profiles:
        known = ", ".join(sorted(profiles)) if isinstance(profiles, dict) and profiles else "none"
        raise InputError(f"{source}: no profile '{profile}' (profiles in the file: {known})")
    over = profiles[profile]
    if not isinstance(over, dict):
        raise InputError(f"{source}: profiles.{profile} must be a table")
    bad = [k for k in over if k not in PROFILE_KEYS]
    if bad:
        raise InputError(
            f"{source}: unknown key 'profiles.{profile}.{bad[0]}' (known keys: {', '.join(PROFILE_KEYS)})"
        )
    merged = _merge(data, _canonical_names(over, source, f"profiles.{profile}."))
    return merged, f"{source} (profile {profile})"


def _part(
    f: ExperimentFile, name: str, part: Part, topo: Topology, where: str
) -> tuple[Workload, dict[str, list[Level]]]:
    """One part's workload (the file's, with the part's merged over it) and factor levels, with
    everything about them that can be refused before anything starts."""
    try:
        wl = Workload.model_validate(_merge(f.workload.model_dump(by_alias=True), part.workload))
    except ValidationError as exc:
        lines = validation_messages(exc, Workload, where)
        raise InputError(
            "\n".join(ln.replace(f"{where}: ", f"{where}: parts.{name}.workload.", 1) for ln in lines)
        ) from None
    levels = part.factors.levels()
    if not levels:
        raise InputError(f"{where}: parts.{name}.factors: no factor has levels")
    if "workload" in levels and len(wl.tests) > 1:
        raise InputError(
            f"{where}: parts.{name}: several tests in workload.workload and the factor workload; "
            "give them one way"
        )
    given = set(f.workload.model_fields_set) | set(part.workload)  # the keys the file sets
    check_own_workloads(wl, levels, f"{where}: parts.{name}", given)
    check_web(wl, levels, topo, f"{where}: parts.{name}", given)
    _check_interconnect(wl, levels, topo, f"{where}: parts.{name}")
    smallest = min(int(x) for x in levels.get("nodes", [topo.cluster.nodes]))
    for t in levels.get("target", []):
        if str(t).startswith("node:") and int(str(t)[5:]) > smallest:
            raise InputError(f"{where}: parts.{name}.factors.target: {t} is beyond the smallest node count")
    if wl.target.startswith("node:") and int(wl.target[5:]) > smallest:
        raise InputError(
            f"{where}: parts.{name}.workload.target: {wl.target} is beyond the smallest node count"
        )
    if "client_hosts" in levels:
        check_client_hosts(
            [int(x) for x in levels["client_hosts"]], topo, f"{where}: parts.{name}.factors.client_hosts"
        )
    return wl, levels


def experiment_from_data(data: dict[str, Any], source: str, profile: str | None = None) -> Experiment:
    data, where = _profile(_canonical_names(data, source), source, profile)
    try:
        f = ExperimentFile.model_validate(data)
    except ValidationError as exc:
        raise InputError("\n".join(validation_messages(exc, ExperimentFile, where))) from None
    engines = _engine_levels(f)
    _check_unused_server_sections(f.topology, engines, where)
    topo = _validate_topology(for_engine(f.topology, engines[0]) if engines else f.topology, where)
    engine_topologies = {e: _validate_topology(for_engine(f.topology, e), where, e) for e in engines}
    parts: dict[str, tuple[Workload, dict[str, list[Level]]]] = {}
    raw_parts: dict[str, Part] = {"main": Part(factors=f.factors)} if f.factors is not None else {}
    raw_parts.update(f.parts)
    designs: dict[str, DesignSpec] = {}
    for name, part in raw_parts.items():
        parts[name] = _part(f, name, part, topo, where)
        design = designs[name] = part.design or f.experiment.design
        if design.kind != "full-grid":
            try:
                expand_design(parts[name][1], design, factor_kinds(), f"{where}: parts.{name}")
            except ValueError as exc:
                raise InputError(str(exc)) from None
    if f.search is not None:
        check_search(f.search, f.workload, topo, where)
        if f.experiment.baseline:
            raise InputError(f"{where}: experiment.baseline: a search has no baseline point; remove it")
    for k, v in f.experiment.baseline.items():
        if not any(k in lv and v in lv[k] for _, lv in parts.values()):
            raise InputError(f"{where}: experiment.baseline.{k}: {v!r} is not a level of factor {k}")
    return Experiment(
        settings=f.experiment, topology=topo, parts=parts, profile=profile, source=source, designs=designs,
        search=f.search, search_workload=f.workload if f.search is not None else None,
        engine_topologies=engine_topologies,
    )  # fmt: skip


def _check_interconnect(wl: Workload, levels: dict[str, list[Level]], topo: Topology, where: str) -> None:
    """An interconnect decides the target: not both; haproxy needs a balancer."""
    ics = [str(x) for x in levels.get("interconnect", [wl.interconnect] if wl.interconnect else [])]
    if not ics:
        return
    if "target" in levels:
        raise InputError(
            f"{where}.factors.target: the factor interconnect decides the target; remove one of them"
        )
    if "haproxy" in ics and topo.balancer.kind == "none":
        raise InputError(
            f"{where}: interconnect haproxy needs a balancer; set topology.balancer.kind = 'haproxy' "
            "or drop that level"
        )


# which engine reads which server section of the topology
SERVER_SECTIONS = {"mariadb": "galera", "mysql": "group_replication"}


def _check_unused_server_sections(topology: dict[str, Any], engines: list[str], where: str) -> None:
    """A server section for an engine that no point runs would be dropped without a word."""
    if not engines:
        return
    for section, engine in SERVER_SECTIONS.items():
        if topology.get(section) and engine not in engines:
            raise InputError(
                f"{where}: topology.{section}: settings for {engine}, but the experiment runs only "
                f"{', '.join(engines)} (factor engine); remove [topology.{section}] or add {engine} "
                "to the engine levels"
            )


def _engine_levels(f: ExperimentFile) -> list[str]:
    """The engines the experiment's points run (factor levels or knob values), base first."""
    found: list[str] = []
    for part in ([f.factors] if f.factors is not None else []) + [p.factors for p in f.parts.values()]:
        found += [str(e) for e in part.engine or []]
    if f.search is not None and "engine" in f.search.knobs:
        knob = f.search.knobs["engine"]
        values = knob.get("choices") or knob.get("levels") if isinstance(knob, dict) else knob
        found += [str(e) for e in values or [] if str(e) in ENGINES]
    return list(dict.fromkeys(found))


def _validate_topology(data: dict[str, Any], where: str, engine: str | None = None) -> Topology:
    try:
        return Topology.model_validate(data)
    except ValidationError as exc:
        lines = validation_messages(exc, Topology, where)
        suffix = f" (with engine = {engine})" if engine else ""
        raise InputError(
            "\n".join(ln.replace(f"{where}: ", f"{where}: topology.", 1) + suffix for ln in lines)
        ) from None


def load_experiment(path: Path, profile: str | None = None) -> Experiment:
    text = read_toml_text(path, "experiment", "see examples/experiments/")
    data = parse_toml(text, str(path))
    require_kind(data, "experiment", path)
    return experiment_from_data(data, str(path), profile)
