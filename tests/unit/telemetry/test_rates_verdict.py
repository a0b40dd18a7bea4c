"""Counters to per-second figures, the utilization math and the bottleneck verdict (pure)."""

from __future__ import annotations

import pytest

from clusterbench.telemetry.live import live_line
from clusterbench.telemetry.rates import Hello, engine_points, probe_points
from clusterbench.telemetry.sites import rate_bps
from clusterbench.telemetry.verdict import Candidate, ClientFacts, candidates, decide, tier_of

HELLO = Hello(tck=100, ncpu=2, roles={"n1": {"disk": "vda", "mbit": None}, "lb1": {}})


def line(
    m: float, cpu: int, net: list[int], *, busy: int = 0, quota: float | None = 0.5, pid: int = 7
) -> dict:
    return {
        "w": 1000 + m, "m": m, "self": int(m * 2), "cpu": [busy, int(m * 200)],
        "disks": {"vda": [int(m * 10), int(m * 2048), int(m * 20), int(m * 4096), int(m * 250)]},
        "r": {
            "n1": {"pid": pid, "cpu": cpu, "rss": 204800, "io": [0, int(m * 1048576)], "quota": quota,
                   "aff": 2, "thr": [int(m * 10), int(m * 4), 0], "net": net},
            "lb1": {"pid": 9, "cpu": 0, "hap": [["n1", 3, 0, int(m), 0, 1], ["n2", 0, 1, 0, 0, 0]]},
        },
    }  # fmt: skip


def as_dict(points: list[tuple[str, str, float]]) -> dict[tuple[str, str], float]:
    return {(s, m): v for s, m, v in points}


def test_probe_points_cpu_link_disk_and_balancer() -> None:
    a = line(10.0, 1000, [0, 0, 0, 0], busy=1000)
    # 2 s later: 98 ticks of CPU = 0.49 CPUs; 2.5 MB received and sent 1.25 MB = 10 / 5 Mbit/s
    b = line(12.0, 1098, [2_500_000, 2000, 1_250_000, 1000], busy=1300)
    p = as_dict(probe_points("host", HELLO, a, b, {"n1": 10e6}))
    assert p[("n1", "cpu_cores")] == 0.49
    assert p[("n1", "cpu_limit_cores")] == 0.5 and p[("n1", "cpu_quota_cores")] == 0.5
    assert abs(p[("n1", "cpu_util")] - 0.98) < 1e-9
    assert p[("n1", "cpu_throttled")] == 0.4
    assert p[("n1", "rss_mib")] == 200
    assert p[("n1", "io_write_mib_s")] == 1.0
    assert p[("n1", "net_rx_mbit")] == 10.0 and p[("n1", "net_tx_mbit")] == 5.0
    assert p[("n1", "net_rx_pps")] == 1000 and p[("n1", "net_limit_mbit")] == 10.0
    assert p[("n1", "net_util")] == 1.0  # the busier direction against the limit
    assert p[("host", "host_cpu_busy")] == 300 / 400
    assert p[("host", "probe_cpu_cores")] == 4 / 100 / 2
    # vda holds n1's data alone: its figures are n1's disk's
    assert p[("n1/vda", "disk_util")] == 0.25 and p[("n1/vda", "disk_write_iops")] == 20
    assert p[("n1/vda", "disk_read_mib_s")] == 1.0
    assert ("n1/vda", "disk_limit_mib_s") not in p
    assert p[("lb1/n1", "sessions")] == 3 and p[("lb1/n1", "conn_errors_s")] == 1.0
    assert p[("lb1/n2", "up")] == 0 and p[("lb1/n2", "queue")] == 1


def test_a_shared_disk_is_the_sites_and_a_throttled_one_is_as_busy_as_its_use_of_the_limit() -> None:
    shared = Hello(100, 2, {"n1": {"disk": "vda"}, "n2": {"disk": "vda"}})
    a = line(10.0, 1000, [0, 0, 0, 0], busy=1000)
    b = line(12.0, 1098, [0, 0, 0, 0], busy=1300)
    assert as_dict(probe_points("host", shared, a, b, {}))[("host/vda", "disk_util")] == 0.25
    # 8192 sectors in 2 s = 2 MiB/s written against a 2.5 MiB/s write limit: 80 % of it, while
    # the device itself was busy 25 % of the time (held requests are not busy time)
    b["dlim"] = {"vda": [0, 2621440, 0, 0]}
    p = as_dict(probe_points("host", HELLO, a, b, {}))
    assert abs(p[("n1/vda", "disk_util")] - 0.8) < 1e-9
    assert p[("n1/vda", "disk_limit_mib_s")] == 2.5
    # an operations limit: 20 writes/s against 20 allowed
    b["dlim"] = {"vda": [0, 0, 0, 20]}
    p = as_dict(probe_points("host", HELLO, a, b, {}))
    assert p[("n1/vda", "disk_util")] == 1.0 and p[("n1/vda", "disk_limit_iops")] == 20


def test_a_throttled_disk_is_named_with_what_its_limit_allows() -> None:
    per: dict[str, list[float]] = {
        "n2/loop1__disk_util": [0.96, 0.99, 0.97], "n2/loop1__disk_limit_mib_s": [1.0, 1.0, 1.0],
        "n2/loop1__disk_write_mib_s": [0.96, 0.99, 0.97], "n2/loop1__disk_write_iops": [30, 30, 30],
        "n2__cpu_util": [0.3, 0.3, 0.3], "host__host_cpu_busy": [0.4, 0.4, 0.4],
    }  # fmt: skip
    s = series(**per)
    v = decide(candidates(s, 0, 3, []))
    assert (v.resource, v.source) == ("disk", "n2/loop1")
    assert "disk n2/loop1" in v.summary and "wrote 0.97 of the 1.00 MiB/s its limit allows" in v.summary


def test_no_quota_means_the_cpus_it_may_use_and_no_limit_means_no_link_utilization() -> None:
    a = line(0.0, 0, [0, 0, 0, 0], quota=None)
    b = line(1.0, 150, [1000, 1, 1000, 1], quota=None)
    p = as_dict(probe_points("host", HELLO, a, b, {}))
    assert p[("n1", "cpu_limit_cores")] == 2 and p[("n1", "cpu_util")] == 0.75
    assert ("n1", "cpu_quota_cores") not in p and ("n1", "net_util") not in p
    # a NIC speed the kernel reports is the limit where none is configured
    fast = Hello(100, 2, {"n1": {"mbit": 1000}})
    assert as_dict(probe_points("host:db1", fast, a, b, {}))[("n1", "net_util")] == 8e3 / 1e9


def test_a_restart_between_lines_gives_no_rate() -> None:
    a = line(0.0, 5000, [10, 1, 10, 1])
    b = line(1.0, 10, [0, 0, 0, 0], pid=8)  # a new process: its counters start again
    p = as_dict(probe_points("host", HELLO, a, b, {}))
    assert ("n1", "cpu_cores") not in p and ("n1", "net_rx_mbit") not in p
    assert p[("n1", "cpu_limit_cores")] == 0.5


def test_engine_points_rates_for_counters_gauges_as_read() -> None:
    a = {"flow_control_paused_s": 1.0, "recv_queue": 4, "replicated_bytes": 0, "cert_failures": 3}
    b = {
        "flow_control_paused_s": 1.5,
        "recv_queue": 9,
        "replicated_bytes": 2048,
        "cert_failures": 5,
        "bogus": 1,
    }
    p = as_dict(engine_points("n2", a, b, 2.0))
    assert p == {
        ("n2", "flow_control_paused"): 0.25,
        ("n2", "recv_queue"): 9,
        ("n2", "replicated_kib_s"): 1.0,
        ("n2", "cert_failures_s"): 1.0,
    }
    assert as_dict(engine_points("n2", None, b, 1.0)) == {("n2", "recv_queue"): 9}


def test_rates() -> None:
    assert rate_bps("10mbit") == 10e6 and rate_bps("512kbit") == 512e3 and rate_bps("1gbit") == 1e9
    assert rate_bps(None) is None and rate_bps("fast") is None


def series(**per: list[float]) -> dict[tuple[str, str], list[tuple[float, float]]]:
    out = {}
    for key, vals in per.items():
        src, metric = key.split("__")
        out[(src, metric)] = [(float(i + 1), v) for i, v in enumerate(vals)]
    return out


def test_link_bound_case() -> None:
    s = series(
        n1__net_util=[0.97, 0.95, 0.96],
        n1__net_limit_mbit=[10, 10, 10],
        n1__net_rx_mbit=[9.7, 9.5, 9.6],
        n2__net_util=[0.5, 0.5, 0.5],
        n1__cpu_util=[0.2, 0.2, 0.2],
        host__host_cpu_busy=[0.5, 0.5, 0.5],
    )
    v = decide(candidates(s, 0, 3, []))
    assert (v.resource, v.source) == ("link", "n1") and abs((v.utilization or 0) - 0.96) < 1e-9
    assert v.short == "link n1 96%"
    assert "link of n1 was nearest its limit: 96 %" in v.summary.replace("96%", "96 %")


def test_cpu_bound_beats_a_client_and_the_shared_machine() -> None:
    s = series(
        n2__cpu_util=[0.99, 0.97],
        n2__cpu_cores=[0.49, 0.48],
        n2__cpu_quota_cores=[0.5, 0.5],
        n2__cpu_limit_cores=[0.5, 0.5],
        host__host_cpu_busy=[0.95, 0.96],
        n2__flow_control_paused=[0.3, 0.4],
    )
    clients = [ClientFacts(0, "local", ("cpu_saturated",), 0.93)]
    v = decide(candidates(s, 0, 2, clients, ["host"]))
    assert (v.resource, v.source) == ("cpu", "n2")
    assert "0.48 of its 0.5-CPU quota" in v.summary
    assert (
        "also near their limit" in v.summary and "load client 0" in v.summary and "flow control" in v.summary
    )


def test_neither_limit_the_client_is_named() -> None:
    s = series(n1__cpu_util=[0.3, 0.35], host__host_cpu_busy=[0.97, 0.99])
    v = decide(
        candidates(
            s, 0, 2, [ClientFacts(0, "local", ("cpu_saturated",), 0.95, ("client 0: busy",))], ["host"]
        )
    )
    assert v.resource == "client" and "its tps is a floor" in v.summary
    # the same without a saturated client: the shared machine, never a node's CPU or link
    v = decide(candidates(s, 0, 2, [ClientFacts(0, "local", (), 0.6)], ["host"]))
    assert v.resource == "host_cpu" and "shared by the nodes" in v.summary


def test_nothing_near_its_limit() -> None:
    s = series(n1__cpu_util=[0.4, 0.5], n1__net_util=[0.1, 0.1], n1__flow_control_paused=[0.1, 0.1])
    v = decide(candidates(s, 0, 2, [ClientFacts(0, "local", (), 0.3)]))
    assert v.resource == "none" and v.utilization is None
    assert v.summary.startswith("no resource near its limit; the highest was")
    assert v.short.startswith("none (")


def test_flow_control_only_when_nothing_else_explains_it() -> None:
    s = series(n3__flow_control_paused=[0.5, 0.4], n3__cpu_util=[0.3, 0.3])
    v = decide(candidates(s, 0, 2, []))
    assert (v.resource, v.source) == ("flow_control", "n3")


def test_flow_control_names_the_member_furthest_behind() -> None:
    # GR: the primary n1 is throttled; n3's applier queue is the longest, n2 is the busier CPU
    s = series(n1__flow_control_paused=[1.0, 1.0], n1__recv_queue=[0, 0], n1__cpu_util=[0.2, 0.2],
               n2__flow_control_paused=[0, 0], n2__recv_queue=[0, 1], n2__cpu_util=[0.8, 0.8],
               n3__flow_control_paused=[0, 0], n3__recv_queue=[2, 4], n3__cpu_util=[0.5, 0.7])  # fmt: skip
    v = decide(candidates(s, 0, 2, []))
    assert (v.resource, v.source, v.cause) == ("flow_control", "n1", "n3")
    why = "the member furthest behind: n3 (applier queue 3.0 on average, up to 4, CPU at 60% of its limit)"
    assert why in v.summary
    assert v.to_json()["cause"] == "n3"
    # negative control: with no queue anywhere, the busiest member's CPU names it
    s2 = {k: ([(t, 0.0) for t, _ in p] if k[1] == "recv_queue" else p) for k, p in s.items()}
    assert decide(candidates(s2, 0, 2, [])).cause == "n2"
    # no flow control at all: no cause is named
    s3 = {k: ([(t, 0.0) for t, _ in p] if k[1] == "flow_control_paused" else p) for k, p in s.items()}
    v3 = decide(candidates(s3, 0, 2, []))
    assert v3.cause == "" and "furthest behind" not in v3.summary


def test_the_member_behind_is_named_with_its_own_disk_and_whether_it_was_held_to_a_limit() -> None:
    per: dict[str, list[float]] = {
        "n1__flow_control_paused": [0.8, 0.8], "n1__recv_queue": [0, 0], "n1__cpu_util": [0.2, 0.2],
        "n2__flow_control_paused": [0.8, 0.8], "n2__recv_queue": [20, 30], "n2__cpu_util": [0.03, 0.03],
        "n2/loop1__disk_util": [0.9, 0.5], "n2/loop1__disk_limit_mib_s": [1.0, 1.0],
        "n1/loop0__disk_util": [0.1, 0.1],
    }  # fmt: skip
    v = decide(candidates(series(**per), 0, 2, []))
    assert v.cause == "n2"
    assert (
        "n2 (applier queue 25.0 on average, up to 30, CPU at 3% of its limit, "
        "disk n2/loop1 busy 70% of its limit)"
        in v.summary
    )
    del per["n2/loop1__disk_limit_mib_s"]
    assert "disk n2/loop1 busy 70% of the time)" in decide(candidates(series(**per), 0, 2, [])).summary


def test_flow_control_summed_over_sessions_is_at_most_all_of_the_time() -> None:
    # GR's throttle time adds up every waiting session: 4 sessions throttled all the time = 4.0
    s = series(n1__flow_control_paused=[4.0, 3.0])
    v = decide(candidates(s, 0, 2, []))
    assert (v.resource, v.source, v.utilization) == ("flow_control", "n1", 1.0)
    assert "held back by flow control 100% of the time" in v.summary


def test_the_window_is_the_measured_seconds() -> None:
    s = {("n1", "cpu_util"): [(-2.0, 1.0), (-1.0, 1.0), (1.0, 0.1), (2.0, 0.1), (9.0, 1.0)]}
    (c,) = candidates(s, 0, 2, [])
    assert abs(c.utilization - 0.1) < 1e-9


def test_without_servers_the_verdict_is_unknown_unless_the_client_was_saturated() -> None:
    v = decide(candidates({}, 0, 2, [ClientFacts(0, "local", (), 0.2)]), have_servers=False)
    assert v.resource == "unknown" and "not saturated" in v.summary
    v = decide(
        candidates({}, 0, 2, [ClientFacts(0, "local", ("rate_not_achieved",), None)]), have_servers=False
    )
    assert v.resource == "client"


def test_candidate_line() -> None:
    c = Candidate("cpu", "n1", 0.5, 0.9, "CPU of n1", "1 of 2 CPUs")
    assert c.line() == "CPU of n1 at 50% (1 of 2 CPUs)" and not c.near


def test_live_line() -> None:
    latest = {("n1", "cpu_util"): 0.4, ("n2", "cpu_util"): 0.98, ("n3", "net_util"): 0.5,
              ("n1", "flow_control_paused"): 0.0, ("host", "host_cpu_busy"): 1.0}  # fmt: skip
    assert live_line(latest) == "cpu n2 98% · link n3 50% · fc n1 0% · host cpu 100%"
    assert live_line({("n1", "flow_control_paused"): 3.2}) == "fc n1 100%"
    assert live_line({}) == ""


def test_a_shared_machine_says_who_kept_its_cpus_busy() -> None:
    s = series(n1__cpu_cores=[0.5, 0.5], n2__cpu_cores=[0.3, 0.3], lb1__cpu_cores=[0.4, 0.4],
               host__host_cpu_busy=[0.95, 0.95], host__host_cpus=[2, 2])  # fmt: skip
    clients = [ClientFacts(0, "local", (), 0.3, cores=0.2)]
    (c,) = [c for c in candidates(s, 0, 2, clients, ["host"]) if c.resource == "host_cpu"]
    assert c.detail == (
        "2 CPU(s) busy 95%: nodes 0.80, balancers 0.40, load clients 0.20, everything else 0.50 CPUs"
    )


def test_the_verdict_chooses_across_tiers_and_names_them() -> None:
    s = series(
        w2__cpu_util=[0.97, 0.97],
        w2__cpu_cores=[0.97, 0.97],
        w2__cpu_limit_cores=[1, 1],
        n1__cpu_util=[0.6, 0.6],
        fe1__net_util=[0.5, 0.5],
        lb1__cpu_util=[0.2, 0.2],
    )
    v = decide(candidates(s, 0, 2, []))
    assert (v.resource, v.source, v.tier) == ("cpu", "w2", "web node")
    assert v.summary.startswith(
        "CPU of web node w2 was nearest its limit: 97% (0.97 of the 1 CPU(s) it may use)"
    )
    assert v.to_json()["tier"] == "web node" and v.short == "cpu w2 97%"
    links = {c.source: c.label for c in candidates(s, 0, 2, [])}
    assert links["fe1"] == "link of front balancer fe1" and links["lb1"] == "CPU of lb1"
    assert [tier_of(x) for x in ("fe2", "lb1", "w9", "n3", "client 0", "host:db1", "")] == [
        "front balancer", "database balancer", "web node", "database node", "load client", "machine", "",
    ]  # fmt: skip
    assert decide(candidates(series(n1__cpu_util=[0.1]), 0, 1, [])).tier == ""


def test_a_shared_machine_names_the_web_nodes_share() -> None:
    s = series(host__host_cpu_busy=[0.95, 0.95], host__host_cpus=[2, 2], n1__cpu_cores=[0.5, 0.5],
               w1__cpu_cores=[0.7, 0.7], fe1__cpu_cores=[0.1, 0.1], lb1__cpu_cores=[0.1, 0.1])  # fmt: skip
    v = decide(candidates(s, 0, 2, [], ["host"]))
    assert v.resource == "host_cpu"
    shares = "nodes 0.50, balancers 0.20, web nodes 0.70, load clients 0.00, everything else 0.50 CPUs"
    assert shares in v.summary


def test_a_web_node_whose_masters_changed_gives_no_cpu_rate() -> None:
    def web(m: float, cpu: int, roots: list[int]) -> dict:
        return {"m": m, "r": {"w1": {"pid": roots[0], "roots": roots, "cpu": cpu, "rss": 1024}}}

    same = as_dict(probe_points("host", HELLO, web(0.0, 100, [5, 6]), web(1.0, 150, [5, 6]), {}))
    assert same[("w1", "cpu_cores")] == 0.5
    # nginx (6) was killed and started again as 7: php-fpm's counters alone would mislead
    moved = as_dict(probe_points("host", HELLO, web(0.0, 100, [5, 6]), web(1.0, 150, [5, 7]), {}))
    assert ("w1", "cpu_cores") not in moved and moved[("w1", "rss_mib")] == 1.0


def test_of_two_near_resources_the_more_loaded_one_is_the_verdict() -> None:
    a = Candidate("cpu", "n1", 0.95, 0.9, "CPU of n1", "0.95 of 1")
    b = Candidate("link", "n2", 0.99, 0.9, "link of n2", "99 of 100 Mbit/s")
    for order in ([a, b], [b, a]):
        v = decide(order)
        assert (v.resource, v.source, v.utilization) == ("link", "n2", 0.99)
        assert v.summary == (
            "link of n2 was nearest its limit: 99% (99 of 100 Mbit/s); also near their limit: "
            "CPU of n1 at 95% (0.95 of 1)"
        )
    # exactly at the threshold is near; just under it is not
    at = Candidate("disk", "host/vda", 0.90, 0.9, "disk host/vda", "busy")
    under = Candidate("disk", "host/vda", 0.899, 0.9, "disk host/vda", "busy")
    assert decide([at]).resource == "disk"
    assert decide([under]).resource == "none"
    # a server's own limit comes before a client even when the client is busier
    client = Candidate("client", "client 0", 1.0, 0.9, "load client 0 on local", "saturated")
    assert decide([client, a]).source == "n1"
    # flow control is measured against its own 25 %
    fc = Candidate("flow_control", "n3", 0.3, 0.25, "flow control at n3", "held back", cause="n2")
    v = decide([fc, Candidate("cpu", "n1", 0.5, 0.9, "CPU of n1", "x")])
    assert (v.resource, v.cause) == ("flow_control", "n2")


def test_short_tags_and_the_window() -> None:
    from clusterbench.telemetry.verdict import Bottleneck, _cores, _shares, in_window

    def short(resource: str, source: str, util: float = 0.97) -> str:
        c = Candidate(resource, source, util, 0.9, "x", "y")
        return Bottleneck(resource, source, util, "", [c]).short

    assert short("host_cpu", "host") == "machine cpu 97%"
    assert short("host_cpu", "host:db1") == "host:db1 cpu 97%"
    assert short("flow_control", "n1") == "flow control n1 97%"
    assert short("client", "client 0") == "client 0 97%"
    assert short("link", "n3") == "link n3 97%"
    low = Candidate("cpu", "n1", 0.45, 0.9, "x", "y")
    assert Bottleneck("none", "", None, "", [low]).short == "none (cpu n1 45%)"
    assert Bottleneck("unknown", "", None, "", []).short == "unknown"
    # CPUs: two decimals without trailing zeros below 10, whole numbers from 10
    assert [_cores(x) for x in (0.5, 1.0, 1.25, 9.999, 10.0, 12.4)] == ["0.5", "1", "1.25", "10", "10", "12"]
    # the measured seconds (start, end], and the last half second
    pts = [(1.0, 1.0), (1.5, 2.0), (3.0, 3.0), (3.5, 4.0), (3.6, 5.0)]
    assert in_window(pts, 1.0, 3.0) == [2.0, 3.0, 4.0]
    # who kept a shared machine busy: nodes, balancers, load clients, the rest
    series = {("n1", "cpu_cores"): [(1.0, 0.5)], ("lb1", "cpu_cores"): [(1.0, 0.25)],
              ("host", "cpu_cores"): [(1.0, 9.0)], ("n1/x", "cpu_cores"): [(1.0, 9.0)]}  # fmt: skip
    clients = [ClientFacts(0, "local", (), 0.3, cores=0.75), ClientFacts(1, "local", (), 0.3)]
    assert _shares(series, 0.0, 2.0, clients, 2.0) == (
        "nodes 0.50, balancers 0.25, load clients 0.75, everything else 0.50 CPUs"
    )
    assert _shares({("n2", "cpu_cores"): [(9.0, 1.0)]}, 0.0, 2.0, [], 0.1) == (
        "nodes 0.00, balancers 0.00, load clients 0.00, everything else 0.10 CPUs"
    )


def test_every_candidate_with_its_figures() -> None:
    two = lambda a, b: [(1.0, a), (2.0, b)]  # noqa: E731  (two seconds of a metric)
    series = {
        ("n1", "cpu_util"): two(0.5, 0.7), ("n1", "cpu_cores"): two(0.25, 0.35),
        ("n1", "cpu_limit_cores"): two(2.0, 2.0), ("n1", "cpu_quota_cores"): two(0.5, 0.5),
        ("n1", "cpu_throttled"): two(0.1, 0.3),
        ("n1", "net_util"): two(0.2, 0.4), ("n1", "net_rx_mbit"): two(10.0, 20.0),
        ("n1", "net_tx_mbit"): two(1.0, 2.0), ("n1", "net_limit_mbit"): two(100.0, 100.0),
        ("n2", "cpu_util"): [(1.0, 0.8)], ("n2", "recv_queue"): two(2.0, 4.0),
        ("host/vda", "disk_util"): two(0.5, 0.5), ("host/vda", "disk_read_iops"): two(10.0, 20.0),
        ("host/vda", "disk_write_iops"): two(5.0, 5.0),
        ("host", "host_cpu_busy"): two(0.5, 0.5), ("host", "host_cpus"): two(2.0, 2.0),
        ("n3", "flow_control_paused"): two(0.4, 0.6),
    }  # fmt: skip
    clients = [ClientFacts(0, "local", ("rate",), None), ClientFacts(1, "h2", (), 0.4, ("slow",))]
    got = candidates(series, 0.0, 2.0, clients, ["host"])
    shares = "nodes 0.30, balancers 0.00, load clients 0.00, everything else 0.70 CPUs"
    shared = "this machine's CPUs (shared by the nodes, balancer and clients)"
    behind = "the member furthest behind: n2 (applier queue 3.0 on average, up to 4, CPU at 80% of its limit)"
    assert got == [
        Candidate("host_cpu", "host", 0.5, 0.9, shared, f"2 CPU(s) busy 50%: {shares}"),
        Candidate("disk", "host/vda", 0.5, 0.9, "disk host/vda",
                  "busy 50% of the time, 15 reads/s, 5 writes/s"),
        Candidate("cpu", "n1", pytest.approx(0.6), 0.9, "CPU of n1",  # type: ignore[arg-type]
                  "0.3 of its 0.5-CPU quota, throttled in 20% of periods"),
        Candidate("link", "n1", pytest.approx(0.3), 0.9, "link of n1",  # type: ignore[arg-type]
                  "sent 1.5, received 15.0 of 100 Mbit/s"),
        Candidate("cpu", "n2", 0.8, 0.9, "CPU of n2", "0 of the 0 CPU(s) it may use"),
        Candidate("flow_control", "n3", 0.5, 0.25, "flow control at n3",
                  f"writes held back by flow control 50% of the time; {behind}", "n2"),
        Candidate("client", "client 0", 1.0, 0.9, "load client 0 on local", "sysbench on local"),
        Candidate("client", "client 1", 0.4, 0.9, "load client 1 on h2", "slow"),
    ]  # fmt: skip
    v = decide(got)
    assert (v.resource, v.source, v.cause) == ("client", "client 0", "")
    assert v.summary == (
        "the load client limited the load (load client 0 on local, 100%): its tps is a floor for the "
        "cluster's capacity; also near their limit: flow control at n3 at 50% (writes held back by flow "
        f"control 50% of the time; {behind})"
    )
    assert v.to_json()["short"] == "client 0 100%" and v.to_json()["cause"] == ""
