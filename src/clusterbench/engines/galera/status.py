"""Pure parsing of Galera state: `SHOW STATUS LIKE 'wsrep_%'` rows, grastate.dat, recovery logs;
and the gvwstate.dat a bring-up writes."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

_DONOR = re.compile(r"Member \S+ \(([^)]*)\) requested state transfer from .*?Selected \S+ \(([^)]*)\)")
_RECOVERED = re.compile(r"WSREP: Recovered position: ([0-9a-f-]{36}:-?\d+)")


@dataclass(frozen=True)
class WsrepStatus:
    state: int
    state_comment: str
    cluster_size: int
    cluster_status: str
    ready: bool
    connected: bool
    last_committed: int
    flow_control_paused: float
    cluster_state_uuid: str
    cluster_conf_id: int
    incoming_addresses: str = ""  # the view's members' client addresses, comma-separated

    @property
    def primary(self) -> bool:
        return self.cluster_status == "Primary"

    @property
    def synced(self) -> bool:
        return self.state == 4 and self.primary and self.ready


def _int(v: str | None, default: int = -1) -> int:
    try:
        return int(v) if v is not None else default
    except ValueError:
        return default


def _float(v: str | None) -> float:
    try:
        return float(v) if v is not None else 0.0
    except ValueError:
        return 0.0


def _conf_id(v: str | None) -> int:
    """A non-Primary node reports conf_id as 2**64 - 1 (an unsigned -1); keep it as -1."""
    n = _int(v)
    return -1 if n >= 2**63 else n


def parse_wsrep_status(rows: list[tuple[str, str]] | dict[str, str]) -> WsrepStatus:
    d = dict(rows) if not isinstance(rows, dict) else rows
    d = {k.lower(): ("" if v is None else str(v)) for k, v in d.items()}
    return WsrepStatus(
        state=_int(d.get("wsrep_local_state")),
        state_comment=d.get("wsrep_local_state_comment", "") or "",
        cluster_size=_int(d.get("wsrep_cluster_size"), 0),
        cluster_status=d.get("wsrep_cluster_status", "") or "",
        ready=d.get("wsrep_ready", "").upper() == "ON",
        connected=d.get("wsrep_connected", "").upper() == "ON",
        last_committed=_int(d.get("wsrep_last_committed")),
        flow_control_paused=_float(d.get("wsrep_flow_control_paused")),
        cluster_state_uuid=d.get("wsrep_cluster_state_uuid", "") or "",
        cluster_conf_id=_conf_id(d.get("wsrep_cluster_conf_id")),
        incoming_addresses=d.get("wsrep_incoming_addresses", "") or "",
    )


@dataclass(frozen=True)
class GraState:
    uuid: str
    seqno: int
    safe_to_bootstrap: bool

    @property
    def crashed(self) -> bool:
        """seqno -1: the node did not shut down cleanly; its position is only in InnoDB."""
        return self.seqno == -1


def parse_grastate(text: str) -> GraState:
    fields: dict[str, str] = {}
    for line in text.splitlines():
        if ":" in line and not line.lstrip().startswith("#"):
            k, v = line.split(":", 1)
            fields[k.strip()] = v.strip()
    return GraState(
        uuid=fields.get("uuid", "00000000-0000-0000-0000-000000000000"),
        seqno=_int(fields.get("seqno")),
        safe_to_bootstrap=fields.get("safe_to_bootstrap", "0") == "1",
    )


def render_grastate(g: GraState) -> str:
    return (
        "# GALERA saved state\nversion: 2.1\n"
        f"uuid:    {g.uuid}\nseqno:   {g.seqno}\nsafe_to_bootstrap: {1 if g.safe_to_bootstrap else 0}\n"
    )


def render_gvwstate(me: str, members: Sequence[str], view_seq: int = 1) -> str:
    """A node's gvwstate.dat naming a Primary view of `members` (gcomm UUIDs, `me` among them):
    what Galera saves at every Primary view and restores at start (pc.recovery). Nodes that all
    hold it form that Primary component by themselves once every member is connected, with no
    bootstrap; when they all hold one position, none needs a state transfer. Type 3 is a
    Primary view; the representative is the lowest UUID, every member in segment 0."""
    if me not in members:
        raise ValueError(f"{me} is not a member of the view it is to restore")
    ids = sorted(members)
    lines = [f"my_uuid: {me}", "#vwbeg", f"view_id: 3 {ids[0]} {view_seq}", "bootstrap: 0"]
    lines += [f"member: {u} 0" for u in ids]
    return "\n".join([*lines, "#vwend"]) + "\n"


def parse_recovered_position(log_text: str) -> str | None:
    """The last `Recovered position: uuid:seqno` printed by `mariadbd --wsrep-recover`."""
    found = _RECOVERED.findall(log_text)
    return found[-1] if found else None


def classify_join(log_text: str) -> str:
    """'SST' if a full state snapshot was received, 'IST' if only write-sets, 'none' otherwise.

    Galera runs wsrep_sst_<method> for both, and logs 'SST received' either way. The SST script's
    own joiner-side line tells them apart: '<method> SST completed on joiner' for a full transfer,
    'rsync IST completed on joiner' for write-sets only. Donor-side lines ('... on donor', when the
    node serves another joiner right after) do not count.
    """
    # wsrep_sst_mariabackup's joiner also says "Proceeding with SST" when a full backup streams in.
    if re.search(r"SST completed on joiner|Proceeding with SST", log_text):
        return "SST"
    if re.search(r"IST completed on joiner", log_text) or "IST received" in log_text:
        return "IST"
    if "SST received" in log_text:
        return "SST"
    return "none"


def parse_donor(log_text: str, joiner: str | None = None) -> str | None:
    """The donor Galera selected for the last state transfer `joiner` requested (any joiner when
    None): 'Member 1.0 (n2) requested state transfer from '*any*'. Selected 2.0 (n3)(SYNCED) as
    donor.' gives n3."""
    found = [m.group(2) for m in _DONOR.finditer(log_text) if joiner is None or m.group(1) == joiner]
    return found[-1] if found else None
