"""components/web/status.py: php-fpm's status page and nginx's stub_status, as captured from a
web node (php-fpm 8.2, nginx 1.22)."""

from __future__ import annotations

from clusterbench.components.web.status import (
    FpmStatus,
    NginxStatus,
    WebNodeStatus,
    parse_fpm_status,
    parse_stub_status,
)

FPM = (
    '{"pool":"web","process manager":"static","start time":1795874022,"start since":0,"accepted conn":7,'
    '"listen queue":0,"max listen queue":0,"listen queue len":0,"idle processes":3,"active processes":1,'
    '"total processes":4,"max active processes":1,"max children reached":0,"slow requests":0}'
)
STUB = "Active connections: 1 \nserver accepts handled requests\n 8 8 9 \nReading: 0 Writing: 1 Waiting: 0 \n"


def test_fpm_status() -> None:
    s = parse_fpm_status(FPM)
    assert s == FpmStatus(
        pool="web", process_manager="static", accepted=7, listen_queue=0, max_listen_queue=0, idle=3,
        active=1, total=4, max_active=1, max_children_reached=0, slow_requests=0,
    )  # fmt: skip
    assert s.busy == 1
    assert parse_fpm_status("File not found.") is None
    assert parse_fpm_status('{"pool":"web"}') is None
    assert parse_fpm_status("[1, 2]") is None


def test_stub_status() -> None:
    assert parse_stub_status(STUB) == NginxStatus(active=1, accepts=8, handled=8, requests=9, reading=0,
                                                  writing=1, waiting=0)  # fmt: skip
    assert parse_stub_status("<html>403 Forbidden</html>") is None


def test_node_status_is_up_only_with_both_processes_and_the_pool_answering() -> None:
    fpm, stub = parse_fpm_status(FPM), parse_stub_status(STUB)
    assert WebNodeStatus("w1", True, True, fpm, stub).up
    assert not WebNodeStatus("w1", True, False, fpm, stub).up
    assert not WebNodeStatus("w1", True, True, None, stub).up
    j = WebNodeStatus("w1", True, True, fpm, None).to_json()
    assert j["up"] and j["fpm"]["idle"] == 3 and j["nginx"] is None
