from __future__ import annotations

from pathlib import Path

import pytest

from clusterbench.faults.delayline_plan import (
    Impairment,
    counters_argv,
    delayline_argv,
    duration_ms,
    impairment,
    loss_counts,
    netem_argv,
    netem_usable,
    rules,
    unrules,
)

IPT = ["iptables", "-w"]


@pytest.mark.parametrize(
    ("text", "ms"), [("50ms", 50.0), ("1.5ms", 1.5), ("200us", 0.2), ("1s", 1000.0), ("0ms", 0.0)]
)
def test_durations_read_as_milliseconds(text: str, ms: float) -> None:
    assert duration_ms(text) == ms


@pytest.mark.parametrize("text", ["50", "fast", "5 minutes", "1e3ms", ""])
def test_a_duration_without_a_unit_is_refused_in_one_line(text: str) -> None:
    with pytest.raises(ValueError, match="not a duration like '50ms'") as e:
        duration_ms(text)
    assert "\n" not in str(e.value)


def test_bad_input_is_an_input_error_the_cli_exits_2_on() -> None:
    from clusterbench.errors import InputError

    with pytest.raises(InputError) as e:
        impairment(delay="-5ms")
    assert e.value.exit_code == 2
    assert isinstance(e.value, ValueError)  # what pydantic validators may raise


def test_a_negative_delay_is_refused() -> None:
    with pytest.raises(ValueError, match="delay must not be negative"):
        impairment(delay="-5ms")
    with pytest.raises(ValueError, match="must not be negative"):
        Impairment(delay_ms=-1)


@pytest.mark.parametrize("loss", [-1, 100.5, 250])
def test_loss_is_a_percentage(loss: float) -> None:
    with pytest.raises(ValueError, match="loss is a percentage, 0-100"):
        Impairment(loss_pct=loss)


def test_jitter_needs_a_delay_and_a_fault_needs_something_to_do() -> None:
    with pytest.raises(ValueError, match="jitter needs a delay"):
        impairment(jitter="5ms", loss=1)
    with pytest.raises(ValueError, match="nothing to do"):
        Impairment()
    with pytest.raises(ValueError, match="distribution is one of uniform, normal"):
        Impairment(delay_ms=5, distribution="pareto")


def test_describe_says_what_was_asked() -> None:
    assert impairment("10ms", "5ms").describe() == "10 ms +- 5 ms (uniform) added round trip"
    assert impairment(loss=1).describe() == "1 % loss each way"
    assert impairment("50ms", loss=10).describe() == "50 ms added round trip, 10 % loss each way"


def test_rules_to_one_peer_count_drop_and_queue_each_direction_in_chains_of_our_own() -> None:
    cmds = rules(["198.18.0.12"], impairment("50ms", loss=30), queue=7711)
    q = ["-j", "NFQUEUE", "--queue-num", "7711", "--queue-bypass"]
    stat = ["-m", "statistic", "--mode", "random", "--probability", "0.300000"]
    gone = ["-j", "NFQUEUE", "--queue-num", "65535"]  # unbound, no bypass: the sender is not told
    assert cmds == [
        [*IPT, "-N", "CBDL-OUT"],
        [*IPT, "-N", "CBDL-IN"],
        [*IPT, "-A", "CBDL-OUT", "-d", "198.18.0.12"],
        [*IPT, "-A", "CBDL-OUT", "-d", "198.18.0.12", *stat, *gone],
        [*IPT, "-A", "CBDL-OUT", "-d", "198.18.0.12", *q],
        [*IPT, "-A", "CBDL-IN", "-s", "198.18.0.12"],
        [*IPT, "-A", "CBDL-IN", "-s", "198.18.0.12", *stat, "-j", "DROP"],
        [*IPT, "-A", "CBDL-IN", "-s", "198.18.0.12", *q],
        [*IPT, "-I", "OUTPUT", "1", "-o", "eth0", "-j", "CBDL-OUT"],
        [*IPT, "-I", "INPUT", "1", "-i", "eth0", "-j", "CBDL-IN"],
    ]


def test_rules_for_the_whole_link_match_the_interface_only() -> None:
    cmds = rules(None, impairment("5ms"), dev="veth7", queue=9)
    assert [*IPT, "-A", "CBDL-OUT", "-j", "NFQUEUE", "--queue-num", "9", "--queue-bypass"] in cmds
    assert cmds[-2:] == [
        [*IPT, "-I", "OUTPUT", "1", "-o", "veth7", "-j", "CBDL-OUT"],
        [*IPT, "-I", "INPUT", "1", "-i", "veth7", "-j", "CBDL-IN"],
    ]


def test_loss_alone_queues_nothing_and_delay_alone_drops_nothing() -> None:
    loss_only = rules(["10.0.0.2", "10.0.0.3"], impairment(loss=1))
    assert not any("--queue-bypass" in c or "7711" in c for c in loss_only)
    assert sum("statistic" in c for c in loss_only) == 4  # two peers, two directions
    sample = ["-m", "statistic", "--mode", "random", "--probability", "0.010000"]
    assert [
        *IPT,
        "-A",
        "CBDL-OUT",
        "-d",
        "10.0.0.3",
        *sample,
        "-j",
        "NFQUEUE",
        "--queue-num",
        "65535",
    ] in loss_only
    assert [*IPT, "-A", "CBDL-IN", "-s", "10.0.0.3", *sample, "-j", "DROP"] in loss_only
    delay_only = rules(["10.0.0.2"], impairment("5ms"))
    assert not any("statistic" in c for c in delay_only)
    # With netem doing the delay, the rules only count.
    assert not any("NFQUEUE" in c for c in rules(None, impairment("5ms"), queue=None))


def test_unrules_remove_exactly_what_rules_added() -> None:
    assert unrules(dev="eth0") == [
        [*IPT, "-D", "OUTPUT", "-o", "eth0", "-j", "CBDL-OUT"],
        [*IPT, "-D", "INPUT", "-i", "eth0", "-j", "CBDL-IN"],
        [*IPT, "-F", "CBDL-OUT"],
        [*IPT, "-X", "CBDL-OUT"],
        [*IPT, "-F", "CBDL-IN"],
        [*IPT, "-X", "CBDL-IN"],
    ]
    added = rules(["10.0.0.2"], impairment("5ms", loss=2))
    # Each jump added at position 1 is deleted by the same match; each chain made is flushed and removed.
    jumps = [[w for w in c if w not in ("-I", "1")] for c in added if "-I" in c]
    assert jumps == [[w for w in c if w != "-D"] for c in unrules() if "-D" in c]
    made = {c[-1] for c in added if "-N" in c}
    assert made == {c[-1] for c in unrules() if "-X" in c}


LISTING = """-N CBDL-OUT
-A CBDL-OUT -d 198.18.250.2/32 -c 20 1200
-A CBDL-OUT -d 198.18.250.2/32 -m statistic --mode random --probability 0.29999999981 -c 4 240 -j DROP
-A CBDL-OUT -d 198.18.250.2/32 -c 16 960 -j NFQUEUE --queue-num 7711 --queue-bypass
"""


def test_loss_counts_read_the_counting_and_the_drop_rules() -> None:
    assert counters_argv("CBDL-OUT") == ["iptables", "-w", "-S", "CBDL-OUT", "-v"]
    assert loss_counts(LISTING) == (20, 4)
    assert loss_counts("") == (0, 0)


def test_the_delay_line_gets_half_the_round_trip_each_way() -> None:
    argv = delayline_argv(impairment("50ms", "5ms"), queue=12, status=Path("/w/s.json"), binary=Path("/b/dl"))
    assert argv == [
        "/b/dl",
        "run",
        "--queue",
        "12",
        "--delay",
        "25000us",
        "--jitter",
        "2500us",
        "--dist",
        "uniform",
        "--status",
        "/w/s.json",
    ]
    ordered = delayline_argv(
        impairment("1.5ms", distribution="normal", reorder=False), status=Path("/s"), seed=7
    )
    assert ordered[ordered.index("--delay") + 1] == "750us"
    assert ordered[-3:] == ["--no-reorder", "--seed", "7"]
    assert ordered[ordered.index("--dist") + 1] == "normal"


def test_netem_takes_the_whole_round_trip_on_egress() -> None:
    assert netem_argv(impairment("50ms", "5ms"), "eth0") == [
        "tc",
        "qdisc",
        "replace",
        "dev",
        "eth0",
        "root",
        "netem",
        "delay",
        "50000us",
        "5000us",
    ]
    assert netem_argv(impairment("50ms"))[-2:] == ["delay", "50000us"]


def test_netem_only_for_the_whole_link_and_in_order_only_without_jitter() -> None:
    assert netem_usable(impairment("50ms"), None)
    assert not netem_usable(impairment("50ms"), ["10.0.0.2"])
    assert not netem_usable(impairment("50ms", "5ms", reorder=False), None)
    assert netem_usable(impairment("50ms", reorder=False), None)
    assert not netem_usable(impairment(loss=5), None)
