"""engines/galera/status.py against text captured from a real 3-node MariaDB 10.11 / Galera 4 cluster.

Data files (tests/unit/data/):
- wsrep_status_synced.tsv: `SHOW GLOBAL STATUS LIKE 'wsrep_%'` on a Synced node (mariadb -N -B)
- wsrep_status_non_primary.tsv: the same on a node whose link was taken down (non-Primary)
- grastate_clean.dat / grastate_crashed.dat: after a graceful stop / after kill -9
- wsrep_recover.log: `mariadbd --wsrep-recover` log after kill -9
- join_ist.log / join_sst.log: the joiner's error log from "State transfer required" to
  "State transfer ... complete" for a restart after kill -9 (IST) and with an emptied datadir (SST)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from clusterbench.engines.galera.status import (
    GraState,
    WsrepStatus,
    classify_join,
    parse_donor,
    parse_grastate,
    parse_recovered_position,
    parse_wsrep_status,
    render_grastate,
    render_gvwstate,
)

DATA = Path(__file__).parent / "data"
UUID = "3664e239-e640-11f1-8093-aa394a74bc52"


def rows(name: str) -> list[tuple[str, str]]:
    out = []
    for line in (DATA / name).read_text().splitlines():
        k, _, v = line.partition("\t")
        out.append((k, v))
    return out


# ---------------------------------------------------------------- SHOW STATUS


def test_parse_real_synced_node() -> None:
    r = rows("wsrep_status_synced.tsv")
    assert len(r) == 74
    st = parse_wsrep_status(r)
    assert st == WsrepStatus(
        state=4,
        state_comment="Synced",
        cluster_size=3,
        cluster_status="Primary",
        ready=True,
        connected=True,
        last_committed=10,
        flow_control_paused=0.0,
        cluster_state_uuid=UUID,
        cluster_conf_id=9,
        incoming_addresses="198.18.210.11:3306,198.18.210.13:3306,198.18.210.12:3306",
    )
    assert st.primary is True
    assert st.synced is True


def test_parse_real_non_primary_node() -> None:
    st = parse_wsrep_status(rows("wsrep_status_non_primary.tsv"))
    assert st == WsrepStatus(
        state=0,
        state_comment="Initialized",
        cluster_size=1,
        cluster_status="non-Primary",
        ready=False,
        connected=True,
        last_committed=10,
        flow_control_paused=0.0,
        cluster_state_uuid=UUID,
        cluster_conf_id=-1,  # reported as 2**64 - 1, an unsigned -1
        incoming_addresses="198.18.210.13:3306",
    )
    assert st.primary is False
    assert st.synced is False


def test_parse_accepts_a_dict_and_is_case_insensitive() -> None:
    st = parse_wsrep_status(
        {
            "WSREP_LOCAL_STATE": "2",
            "Wsrep_Local_State_Comment": "Donor/Desynced",
            "WSREP_CLUSTER_SIZE": "3",
            "wsrep_cluster_status": "Primary",
            "WSREP_READY": "on",
            "wsrep_connected": "On",
            "wsrep_flow_control_paused": "0.125",
            "wsrep_last_committed": "123456",
        }
    )
    assert (st.state, st.state_comment, st.cluster_size) == (2, "Donor/Desynced", 3)
    assert (st.ready, st.connected, st.primary) == (True, True, True)
    assert st.flow_control_paused == 0.125
    assert st.last_committed == 123456
    assert st.synced is False  # a donor is not Synced


def test_parse_missing_keys_gives_safe_defaults() -> None:
    assert parse_wsrep_status([]) == WsrepStatus(
        state=-1,
        state_comment="",
        cluster_size=0,
        cluster_status="",
        ready=False,
        connected=False,
        last_committed=-1,
        flow_control_paused=0.0,
        cluster_state_uuid="",
        cluster_conf_id=-1,
    )


def test_parse_garbage_numbers_fall_back() -> None:
    st = parse_wsrep_status(
        [("wsrep_local_state", "x"), ("wsrep_cluster_size", ""), ("wsrep_flow_control_paused", "n/a")]
    )
    assert (st.state, st.cluster_size, st.flow_control_paused) == (-1, 0, 0.0)


def test_parse_none_values() -> None:
    rows: dict[str, Any] = {"wsrep_ready": None, "wsrep_cluster_status": None}  # a NULL from the driver
    st = parse_wsrep_status(rows)
    assert (st.ready, st.cluster_status) == (False, "")


@pytest.mark.parametrize(
    ("state", "status", "ready", "synced"),
    [
        (4, "Primary", True, True),
        (4, "Primary", False, False),
        (4, "non-Primary", True, False),
        (2, "Primary", True, False),
        (1, "Primary", True, False),
        (3, "Primary", True, False),
    ],
)
def test_synced_needs_state_4_primary_and_ready(state: int, status: str, ready: bool, synced: bool) -> None:
    st = parse_wsrep_status(
        {
            "wsrep_local_state": str(state),
            "wsrep_cluster_status": status,
            "wsrep_ready": "ON" if ready else "OFF",
        }
    )
    assert st.synced is synced
    assert st.primary is (status == "Primary")


# ---------------------------------------------------------------- grastate.dat


def test_parse_real_clean_grastate() -> None:
    g = parse_grastate((DATA / "grastate_clean.dat").read_text())
    assert g == GraState(uuid=UUID, seqno=6, safe_to_bootstrap=False)
    assert g.crashed is False


def test_parse_real_crashed_grastate() -> None:
    g = parse_grastate((DATA / "grastate_crashed.dat").read_text())
    assert g == GraState(uuid=UUID, seqno=-1, safe_to_bootstrap=False)
    assert g.crashed is True


def test_render_grastate_matches_galera_byte_for_byte() -> None:
    text = (DATA / "grastate_crashed.dat").read_text()
    assert render_grastate(parse_grastate(text)) == text


def test_real_clean_grastate_has_galera_padding() -> None:
    # Galera rewrote this file in place and left one trailing space after the last line; the parser
    # ignores it and rendering gives the same values back.
    text = (DATA / "grastate_clean.dat").read_text()
    assert text.endswith("safe_to_bootstrap: 0\n ")
    assert render_grastate(parse_grastate(text)) == text[:-1]
    assert parse_grastate(render_grastate(parse_grastate(text))) == parse_grastate(text)


def test_render_grastate_golden_and_round_trip() -> None:
    g = GraState(uuid=UUID, seqno=42, safe_to_bootstrap=True)
    text = render_grastate(g)
    assert text == (
        f"# GALERA saved state\nversion: 2.1\nuuid:    {UUID}\nseqno:   42\nsafe_to_bootstrap: 1\n"
    )
    assert parse_grastate(text) == g


def test_render_gvwstate_matches_what_galera_saved() -> None:
    # gvwstate_n2.dat: what Galera 4.23 wrote on n2 of a 3-node cluster at its Primary view
    # (kept from a real bring-up); the members given in any order.
    ids = ["982cadd8-eb68-11f1-9845-2f7e1b20ed43", "97829983-eb68-11f1-b5e4-46e1b07042a7",
           "976c2cb0-eb68-11f1-a349-cac3486898b4"]  # fmt: skip
    text = (DATA / "gvwstate_n2.dat").read_text()
    assert render_gvwstate("97829983-eb68-11f1-b5e4-46e1b07042a7", ids, view_seq=3) == text


def test_render_gvwstate_refuses_a_node_outside_its_view() -> None:
    with pytest.raises(ValueError, match="not a member"):
        render_gvwstate("00000000-0000-0000-0000-000000000001", ["00000000-0000-0000-0000-000000000002"])


def test_parse_grastate_defaults_and_comments() -> None:
    g = parse_grastate("# uuid: not-this\n# seqno: 5\n")
    assert g == GraState(uuid="00000000-0000-0000-0000-000000000000", seqno=-1, safe_to_bootstrap=False)


# ---------------------------------------------------------------- --wsrep-recover


def test_recovered_position_from_real_log() -> None:
    assert parse_recovered_position((DATA / "wsrep_recover.log").read_text()) == f"{UUID}:4"


def test_recovered_position_last_one_wins() -> None:
    real = (DATA / "wsrep_recover.log").read_text()
    later = real.replace(f"{UUID}:4", f"{UUID}:17")
    assert parse_recovered_position(real + later) == f"{UUID}:17"


def test_recovered_position_negative_seqno() -> None:
    line = "2026-11-22  6:45:05 0 [Note] WSREP: Recovered position: 00000000-0000-0000-0000-000000000000:-1\n"
    assert parse_recovered_position(line) == "00000000-0000-0000-0000-000000000000:-1"


def test_recovered_position_none() -> None:
    real = (DATA / "wsrep_recover.log").read_text()
    without = "\n".join(ln for ln in real.splitlines() if "Recovered position" not in ln)
    assert parse_recovered_position(without) is None
    assert parse_recovered_position("") is None


# ---------------------------------------------------------------- IST or SST


def test_classify_real_ist_join() -> None:
    assert classify_join((DATA / "join_ist.log").read_text()) == "IST"


def test_classify_real_sst_join() -> None:
    assert classify_join((DATA / "join_sst.log").read_text()) == "SST"


def test_real_logs_differ_where_expected() -> None:
    """Pin the lines that tell the two apart, so a change in MariaDB's wording shows up here."""
    ist = (DATA / "join_ist.log").read_text()
    sst = (DATA / "join_sst.log").read_text()
    assert "WSREP_SST: [INFO] rsync IST completed on joiner" in ist
    assert "WSREP_SST: [INFO] rsync SST completed on joiner" in sst
    assert "Receiving IST: 2 writesets, seqnos 5-6" in ist
    assert "Receiving IST:" not in sst.replace("Receiving IST...", "")
    assert "\tLocal state: 00000000-0000-0000-0000-000000000000:-1\n" in sst
    assert f"\tLocal state: {UUID}:4\n" in ist
    # Both contain these, so they cannot tell the two apart:
    for both in (
        "SST received",
        "IST received",
        "rsync SST started on joiner",
        "Installed new state from SST",
    ):
        assert both in ist and both in sst


def test_classify_nothing() -> None:
    assert classify_join("") == "none"
    assert classify_join(
        "2026-11-22  6:45:13 0 [Note] WSREP: Synchronized with group, ready for connections\n"
    ) == ("none")


@pytest.mark.parametrize(
    "line",
    [
        "WSREP_SST: [INFO] mariabackup SST completed on joiner (20261122 06:45:24.771)",
        "WSREP_SST: [INFO] Proceeding with SST (20261122 06:45:24.771)",
    ],
)
def test_classify_mariabackup_sst(line: str) -> None:
    assert classify_join(line + "\n2026-11-22  6:45:25 1 [Note] WSREP: IST received: x:8\n") == "SST"


def test_classify_ist_without_script_lines() -> None:
    assert classify_join("2026-11-22  6:45:16 2 [Note] WSREP: IST received: x:6\n") == "IST"


def test_classify_ist_then_donor_is_still_ist() -> None:
    # The node served as donor right after its own IST: the donor-side line must not count.
    ist = (DATA / "join_ist.log").read_text()
    donor = "WSREP_SST: [INFO] rsync SST completed on donor (20261122 06:46:00.000)\n"
    assert classify_join(ist + donor) == "IST"


def test_parse_donor_of_a_joiner() -> None:
    text = (DATA / "join_sst.log").read_text()
    assert parse_donor(text) == "n1"
    assert parse_donor(text, "n2") == "n1"
    assert parse_donor(text, "n3") is None
    line = "WSREP: Member 1.0 (n3) requested state transfer from '*any*'. Selected 0.0 (n2)(SYNCED) as donor."
    assert parse_donor(text + line + "\n", "n3") == "n2"
