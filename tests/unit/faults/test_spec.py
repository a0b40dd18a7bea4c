from __future__ import annotations

import pytest

from clusterbench.faults.spec import FaultSpec, PlannedFault, plan, resolve_nodes


def spec(**kw: object) -> FaultSpec:
    return FaultSpec.model_validate(kw)


def test_kill_node_plan_is_resolved_and_timed() -> None:
    [f] = plan([spec(kind="kill-node", target="node:2", at=20, **{"for": 15})], 3, 1, 60)
    assert f == PlannedFault(1, "kill-node", (2,), None, 20.0, 35.0, {})
    assert f.label() == "kill-node n2"


def test_targets_resolve_reproducibly_with_the_seed() -> None:
    import random

    a = resolve_nodes("majority", 5, random.Random(7))
    b = resolve_nodes("majority", 5, random.Random(7))
    assert a == b and len(a[0]) == 3 and a[1] is None
    assert resolve_nodes("all", 3, random.Random(0)) == ((1, 2, 3), None)
    assert resolve_nodes("minority", 5, random.Random(0))[0].__len__() == 2
    assert resolve_nodes("minority", 1, random.Random(0)) == (
        (),
        "target minority: a 1-node cluster has no minority to fail",
    )
    assert resolve_nodes("node:4", 3, random.Random(0)) == (
        (),
        "target node:4: node 4 does not exist (nodes 1-3)",
    )


def test_partition_groups_become_pairs() -> None:
    [f] = plan([spec(kind="partition", groups=[[1], [2, 3]], at=5, **{"for": 5})], 3, 1, 30)
    assert f.params["pairs"] == [(1, 2), (1, 3)]
    assert f.nodes == (1, 2, 3)
    [g] = plan([spec(kind="partition", cuts=[[3, 1]], at=5, **{"for": 5})], 3, 1, 30)
    assert g.params["pairs"] == [(1, 3)] and g.nodes == (1, 3)


def test_two_two_split_on_four_nodes() -> None:
    [f] = plan([spec(kind="partition", groups=[[1, 2], [3, 4]], at=1, **{"for": 5})], 4, 1, 30)
    assert f.params["pairs"] == [(1, 3), (1, 4), (2, 3), (2, 4)]


def test_every_problem_is_listed_exactly() -> None:
    specs = [
        spec(kind="kill-node", target="node:3", at=70, **{"for": 10}),
        spec(kind="throttle-link", target="node:1", at=1, **{"for": 5}),
        spec(kind="kill-balancer", target="lb:2", at=1, **{"for": 5}),
        spec(kind="pause-node", target="node:2", at=1),
    ]
    with pytest.raises(ValueError) as exc:
        plan(specs, 3, 1, 60)
    assert str(exc.value).splitlines() == [
        "fault 1 (kill-node): at=70 is not before the end of the load (60 s)",
        "fault 1 (kill-node): it would heal at 80 s, after the load ends (60 s)",
        'fault 2 (throttle-link): rate is required, e.g. rate = "1mbit"',
        "fault 3 (kill-balancer): lb:2 does not exist (this cluster has 1)",
        "fault 4 (pause-node): `for` (duration in seconds) is required",
    ]


def test_overlapping_faults_on_one_node_are_refused() -> None:
    specs = [
        spec(kind="kill-node", target="node:2", at=10, **{"for": 10}),
        spec(kind="throttle-link", target="node:2", rate="1mbit", at=15, **{"for": 10}),
    ]
    with pytest.raises(ValueError, match="fault 1 and fault 2 act on the same node at overlapping times"):
        plan(specs, 3, 1, 60)
    # The same two faults one after the other are fine, and come out ordered by time.
    ok = plan([specs[1].model_copy(update={"at": 25.0}), specs[0]], 3, 1, 60)
    assert [f.kind for f in ok] == ["kill-node", "throttle-link"]


def test_rolling_restart_needs_no_duration_and_covers_all_nodes() -> None:
    [f] = plan([spec(kind="rolling-restart", at=5)], 3, 1, 60)
    assert (f.nodes, f.until) == ((1, 2, 3), None)


def test_bad_values_are_rejected_by_the_model() -> None:
    with pytest.raises(ValueError, match="is not a target"):
        spec(kind="kill-node", target="node:0", at=1, **{"for": 1})
    with pytest.raises(ValueError, match="is not a rate"):
        spec(kind="throttle-link", rate="fast", at=1, **{"for": 1})
    with pytest.raises(ValueError):
        spec(kind="nuke-node", at=1, **{"for": 1})
    with pytest.raises(ValueError):
        spec(kind="kill-node", at=-1, **{"for": 1})


def test_netem_faults_need_their_value_and_nothing_else() -> None:
    [f] = plan([FaultSpec.model_validate({"kind": "delay-link", "target": "node:2", "at": 1, "for": 2,
                                          "delay": "40ms", "jitter": "5ms"})], 3, 1, 10)  # fmt: skip
    assert (f.nodes, f.params) == ((2,), {"delay": "40ms", "jitter": "5ms"})
    [f] = plan([spec(kind="loss-link", target="node:1", at=1, loss=3, **{"for": 2})], 3, 1, 10)
    assert f.params == {"loss": 3.0}
    with pytest.raises(ValueError) as info:
        plan(
            [
                FaultSpec.model_validate({"kind": "delay-link", "target": "node:1", "at": 1, "for": 2}),
                spec(kind="kill-node", target="node:2", at=1, loss=1, **{"for": 2}),
            ],
            3, 1, 10,
        )  # fmt: skip
    assert str(info.value).splitlines() == [
        'fault 1 (delay-link): delay is required, e.g. delay = "50ms"',
        "fault 2 (kill-node): loss only applies to loss-link",
    ]
    with pytest.raises(ValueError, match="is not a delay like"):
        FaultSpec.model_validate({"kind": "delay-link", "at": 1, "for": 2, "delay": "fast"})


def test_target_primary_resolves_to_the_writer_and_is_refused_without_one() -> None:
    import random

    assert resolve_nodes("primary", 3, random.Random(0), primary=2) == ((2,), None)
    nodes, err = resolve_nodes("primary", 3, random.Random(0))
    assert nodes == () and err is not None and err.startswith("target primary: this cluster's engine has no")
    spec = FaultSpec.model_validate({"kind": "kill-node", "target": "primary", "at": 5, "for": 5})
    (f,) = plan([spec], 3, 1, 30.0, primary=3)
    assert f.nodes == (3,) and f.label() == "kill-node n3"


def test_throttle_disk_takes_a_disk_rate_and_optional_iops() -> None:
    one = spec(kind="throttle-disk", target="node:2", at=1, rate="1MB/s", iops=50, **{"for": 2})
    [f] = plan([one], 3, 1, 10)
    assert (f.nodes, f.params) == ((2,), {"rate": "1MB/s", "iops": 50, "bytes_per_s": 1_000_000})
    [f] = plan([spec(kind="throttle-disk", target="node:1", at=1, rate="512KiB/s", **{"for": 2})], 3, 1, 10)
    assert f.params["bytes_per_s"] == 524288
    with pytest.raises(ValueError, match="is not a disk rate like '1MB/s'"):
        spec(kind="throttle-disk", rate="1mbit", at=1, **{"for": 1})
    with pytest.raises(ValueError, match="is not a disk rate"):
        spec(kind="throttle-disk", rate="0MB/s", at=1, **{"for": 1})
    with pytest.raises(ValueError, match="is not a rate like '1mbit'"):
        spec(kind="throttle-link", rate="1MB/s", at=1, **{"for": 1})
    with pytest.raises(ValueError) as info:
        plan([spec(kind="throttle-disk", target="node:1", at=1, iops=10, **{"for": 2}),
              spec(kind="kill-node", target="node:2", at=1, iops=10, **{"for": 2})], 3, 1, 10)  # fmt: skip
    assert str(info.value).splitlines() == [
        'fault 1 (throttle-disk): rate is required, e.g. rate = "1MB/s" (iops = N limits operations too)',
        "fault 2 (kill-node): iops only applies to throttle-disk",
    ]
