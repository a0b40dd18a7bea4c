"""What the servers really ran with: each node's server variables as stored at the start and end of
every trial (`server_variables@start` / `@end` in the trial's provenance), compared with what the
topology asked for and between the nodes.

A node changed by hand (`SET GLOBAL wsrep_slave_threads=8` on n3) shows as 8 on n3, flagged as
differing from the topology's 2 and from the other nodes; a value that changed during the run shows
as `2 → 8` with the trial where it was first seen.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from clusterbench.store import Store

# Shown whenever a server reports them, also when nothing differs: what people ask first.
KEY_VARIABLES: tuple[str, ...] = (
    "version",
    "innodb_buffer_pool_size",
    "innodb_log_file_size",
    "innodb_flush_log_at_trx_commit",
    "sync_binlog",
    "binlog_format",
    "max_connections",
    "wsrep_slave_threads",
    "wsrep_sync_wait",
    "transaction_isolation",
    "tx_isolation",
)

# Different on every node by design (names, addresses, paths), or changing by themselves while a
# server runs: never a finding.
PER_NODE = re.compile(
    r"^(hostname|server_id|server_uuid|server_uid|auto_increment_offset|pid_file|socket|datadir|tmpdir|"
    r"bind_address|report_host|"
    r"log_error|general_log_file|slow_query_log_file|log_bin_basename|log_bin_index|relay_log.*|"
    r"wsrep_node_name|wsrep_node_address|wsrep_node_incoming_address|wsrep_sst_receive_address|"
    r"wsrep_cluster_address|wsrep_data_home_dir|gtid_.*|timestamp|last_insert_id|"
    r"innodb_buffer_pool_load_at_startup|system_time_zone|wsrep_start_position|wsrep_gtid_seq_no)$"
)
# wsrep_provider_options entries that name the node itself
PER_NODE_OPTIONS = re.compile(
    r"^(base_host|base_port|base_dir|ist\.recv_addr|ist\.recv_bind|gmcast\.listen_addr|"
    r"gcache\.dir|gcache\.name|gmcast\.segment)$"
)

SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT])?B?\s*$", re.I)
ISO_SECONDS = re.compile(r"^P(?:T(?:(\d+(?:\.\d+)?)H)?(?:(\d+(?:\.\d+)?)M)?(?:(\d+(?:\.\d+)?)S)?)?$")


def normalize(value: Any) -> str:
    """A value as a server prints it, so that '64M' equals 67108864, true equals ON, 2 equals 2.0
    and PT5S equals 5."""
    if isinstance(value, bool):
        return "ON" if value else "OFF"
    text = str(value).strip()
    if text.upper() in ("ON", "TRUE", "YES"):
        return "ON"
    if text.upper() in ("OFF", "FALSE", "NO"):
        return "OFF"
    m = SIZE.match(text)
    if m:
        mult = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}[(m.group(2) or "").upper()]
        number = float(m.group(1)) * mult
        return str(int(number)) if number == int(number) else f"{number:g}"
    m = ISO_SECONDS.match(text)
    if m and text != "P":
        h, mi, s = (float(x) if x else 0.0 for x in m.groups())
        secs = h * 3600 + mi * 60 + s
        return str(int(secs)) if secs == int(secs) else f"{secs:g}"
    return text


def provider_options(text: str) -> dict[str, str]:
    """wsrep_provider_options ('a.b = 1; c = PT5S; ...') as a dict."""
    out: dict[str, str] = {}
    for part in text.split(";"):
        if "=" in part:
            k, v = part.split("=", 1)
            out[k.strip()] = v.strip()
    return out


def _flatten(variables: Mapping[str, str]) -> dict[str, str]:
    """A node's variables with wsrep_provider_options split into `wsrep_provider_options:<key>`."""
    out = {k: v for k, v in variables.items() if k != "wsrep_provider_options"}
    for k, v in provider_options(variables.get("wsrep_provider_options", "")).items():
        if not PER_NODE_OPTIONS.match(k):
            out[f"wsrep_provider_options:{k}"] = v
    return out


def expected_from_topology(topology: Mapping[str, Any] | None) -> dict[str, str]:
    """The server settings a topology asks for, by the server's own names: a setting whose name
    is a variable, or `wsrep_<name>`, or a provider option (`evs_suspect_timeout` is
    `evs.suspect_timeout`, `gcache_size` is `gcache.size`). Which of these exist is decided
    against the servers' own lists (see `compare`), so this stays engine-neutral."""
    if not topology:
        return {}
    out: dict[str, str] = {}
    for section in ("mariadb", "mysql", "server"):
        settings = topology.get(section)
        if not isinstance(settings, Mapping):
            continue
        for k, v in settings.items():
            if k == "extra" and isinstance(v, Mapping):
                out.update({str(ek).replace("-", "_"): str(ev) for ek, ev in v.items()})
            elif not isinstance(v, Mapping | list):
                out[str(k)] = str(v)
    return out


def node_expected(topology: Mapping[str, Any] | None) -> dict[str, dict[str, str]]:
    """The server settings single nodes have of their own ([[node]] with a [mariadb]/[mysql]
    table), by node name: what that node is expected to run instead of the cluster's."""
    out: dict[str, dict[str, str]] = {}
    for o in (topology or {}).get("node") or []:
        if not isinstance(o, Mapping):
            continue
        for section in ("mariadb", "mysql"):
            own = o.get(section)
            if isinstance(own, Mapping) and own:
                out.setdefault(f"n{o.get('index')}", {}).update({str(k): str(v) for k, v in own.items()})
    return out


def _resolve(name: str, known: set[str]) -> str | None:
    for cand in (name, f"wsrep_{name}", f"wsrep_provider_options:{name.replace('_', '.', 1)}"):
        if cand in known:
            return cand
    return None


@dataclass
class VariableRow:
    name: str
    expected: str | None  # what the topology asked for, as the server would print it
    values: dict[str, list[tuple[str, str]]]  # node -> [(value, where first seen)]
    differs_from_topology: set[str] = field(default_factory=set)  # nodes
    differs_between_nodes: bool = False
    changed: set[str] = field(default_factory=set)  # nodes whose value changed during the run
    expected_text: str | None = None  # as the topology file wrote it ('64M')

    @property
    def odd_nodes(self) -> set[str]:
        """Nodes whose (first or last) value is not the one most nodes have."""
        if not self.differs_between_nodes:
            return set()
        out: set[str] = set()
        for pick in (0, -1):
            vals = {n: normalize(v[pick][0]) for n, v in self.values.items()}
            counts: dict[str, int] = {}
            for v in vals.values():
                counts[v] = counts.get(v, 0) + 1
            common = max(counts.values())
            if list(counts.values()).count(common) > 1:  # no majority: every node is odd
                out |= set(vals)
            else:
                out |= {n for n, v in vals.items() if counts[v] < common}
        return out

    @property
    def flagged(self) -> bool:
        return bool(self.differs_from_topology or self.differs_between_nodes or self.changed)


@dataclass
class VariableReport:
    nodes: list[str]
    rows: list[VariableRow]
    unanswered: dict[str, str]  # node -> where it did not answer (e.g. 'trial 2 end')

    @property
    def findings(self) -> list[VariableRow]:
        return [r for r in self.rows if r.flagged]


def snapshots(store: Store, run_id: int) -> list[tuple[str, dict[str, dict[str, str]], dict[str, str]]]:
    """(where, node -> variables, node -> error) for every stored snapshot of the run, in order."""
    out = []
    for tr in store.trials(run_id):
        prov = store.provenance(run_id, tr.id)
        for when in ("start", "end"):
            variables = prov.get(f"server_variables@{when}")
            if variables is None:
                continue
            out.append((f"trial {tr.seq} {when}", variables, prov.get(f"server_errors@{when}") or {}))
    return out


def compare(
    snaps: list[tuple[str, dict[str, dict[str, str]], dict[str, str]]],
    expected: Mapping[str, str],
    node_settings: Mapping[str, Mapping[str, str]] | None = None,
    by_design: frozenset[str] = frozenset(),
) -> VariableReport:
    """Rows for the key variables, every variable the topology sets, and every variable that
    differs between nodes or changed during the run. `node_settings`: settings single nodes have of
    their own; such a node is held against its own value (the difference between nodes still
    shows: a heterogeneous cluster is a finding to read). `by_design`: variables the engine's nodes
    differ in by design (a member's own address, a secondary's read_only): never a finding."""
    nodes: list[str] = []
    history: dict[str, dict[str, list[tuple[str, str]]]] = {}  # var -> node -> [(value, where)]
    unanswered: dict[str, str] = {}
    for where, variables, errors in snaps:
        for node in [*variables, *errors]:
            if node not in nodes:
                nodes.append(node)
        for node in errors:
            unanswered.setdefault(node, where)
        for node, vs in variables.items():
            for k, v in _flatten(vs).items():
                seen = history.setdefault(k, {}).setdefault(node, [])
                if not seen or seen[-1][0] != v:
                    seen.append((v, where))
    nodes.sort(key=_node_key)
    known = set(history)
    wanted: dict[str, str | None] = {k: None for k in KEY_VARIABLES if k in known}
    raw: dict[str, str] = {}
    for name, value in expected.items():
        var = _resolve(name, known)
        if var is not None:
            wanted[var] = normalize(value)
            raw[var] = str(value)
    own: dict[str, dict[str, str]] = {}  # var -> node -> its own expected value
    for node, settings in (node_settings or {}).items():
        for name, value in settings.items():
            var = _resolve(name, known)
            if var is not None:
                own.setdefault(var, {})[node] = normalize(value)
                wanted.setdefault(var, None)
    rows: list[VariableRow] = []
    for var in sorted(known):
        per_node = history[var]
        if (PER_NODE.match(var) or var in by_design) and var not in wanted:
            continue
        firsts = {normalize(v[0][0]) for v in per_node.values()}
        lasts = {normalize(v[-1][0]) for v in per_node.values()}
        between = len(firsts) > 1 or len(lasts) > 1
        changed = {n for n, v in per_node.items() if len({normalize(x) for x, _ in v}) > 1}
        if var not in wanted and not between and not changed:
            continue
        if var not in wanted and not changed and all(v[0][0].startswith("/") for v in per_node.values()):
            continue  # a directory of each node's own (aria_log_dir_path, slave_load_tmpdir ...)
        exp = wanted.get(var)
        mine = own.get(var, {})
        off = {
            n for n, v in per_node.items()
            if mine.get(n, exp) is not None and any(normalize(x) != mine.get(n, exp) for x, _ in v)
        }  # fmt: skip
        rows.append(VariableRow(var, exp, per_node, off, between, changed, raw.get(var)))
    order = {k: i for i, k in enumerate(wanted)}
    rows.sort(key=lambda r: (not r.flagged, order.get(r.name, len(order)), r.name))
    return VariableReport(nodes, rows, unanswered)


def _node_key(n: str) -> tuple[int, str]:
    m = re.match(r"^n(\d+)$", n)
    return (int(m.group(1)), n) if m else (10**6, n)


def variable_report(store: Store, run_id: int) -> VariableReport:
    """The report of a run; each engine says which of its variables differ between nodes by design."""
    from clusterbench.engines import per_node_variables

    topology = store.provenance(run_id).get("topology")
    kinds = {str((topology or {}).get("engine", {}).get("kind") or "galera")} if topology else set()
    kinds |= {str(t.params["engine"]) for t in store.trials(run_id) if t.params.get("engine")}
    by_design = frozenset().union(*(per_node_variables(k) for k in kinds)) if kinds else frozenset()
    expected = expected_from_topology(topology)
    return compare(snapshots(store, run_id), expected, node_expected(topology), by_design)


def cell(row: VariableRow, node: str) -> str:
    seen = row.values.get(node)
    if not seen:
        return "—"
    text = seen[0][0]
    for value, where in seen[1:]:
        text += f" → {value} ({where})"
    return text
