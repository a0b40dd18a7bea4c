"""Link delay, jitter and loss as data (pure): what a delay-link or loss-link fault asks for, and
the iptables, tc and cb-delayline command lines that do it inside one node's namespace.

Semantics, the same whatever the mechanism:
- delay: added to the round trip between the node and each target peer (a TCP connect, a ping,
  a request and its answer take `delay` longer). The NFQUEUE delay line holds packets in both
  directions for half of it each; netem holds the node's outgoing packets for all of it.
- jitter: the added round trip varies within delay +- jitter. Uniform by default, as netem's
  default is; with the delay line each direction varies within +- jitter/2, so the round trip's
  spread is the sum of two flat ones (a triangle over the same range).
- loss: every packet between the node and a target peer is dropped with this probability, in
  each direction (a request and its answer both cross the link: an exchange is lost with
  1 - (1 - p)^2). Always iptables' `statistic` match, on any kernel: incoming packets are
  dropped in INPUT, outgoing ones are sent to a queue nobody binds (BLACKHOLE_QUEUE), so that
  the sender does not learn of the loss (netem hides it the same way).
- reorder: with jitter a packet may overtake one sent before it (as with netem); reorder=False
  keeps each direction in order (a packet waits for the ones ahead of it).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from pathlib import Path

from clusterbench.errors import InputError

# Where scripts/build-tools.sh puts the program, and the version it must report (`version`).
DELAYLINE_BIN = Path("/var/lib/clusterbench/bin/cb-delayline")
DELAYLINE_VERSION = "cb-delayline 1"
# Our chains in the node's namespace, one per direction, so that heal removes exactly our rules
# and the counters tell each direction's loss apart. Distinct from the partition chain (CBPART).
CHAIN_OUT = "CBDL-OUT"
CHAIN_IN = "CBDL-IN"
QUEUE = 7711
# A queue nobody binds: a packet sent to it without --queue-bypass is freed by the kernel, and the
# sender is told it left. That is how a lost packet looks on a real link. A DROP in OUTPUT
# instead returns EPERM to the sending socket, and TCP then just sends the segment again with
# the next ACK, without the timeout and the smaller window that real loss brings.
BLACKHOLE_QUEUE = 65535
# A port nobody listens on: a TCP connect to it comes back as a RST after one round trip, and a
# database's port would count every probe as a failed client (MySQL blocks a host after
# max_connect_errors of them).
PROBE_PORT = 9
DISTRIBUTIONS = ("uniform", "normal")


class ImpairmentError(InputError, ValueError):
    """Bad delay/jitter/loss: one line. An InputError, so the CLI exits 2 before anything starts,
    and a ValueError, so pydantic validators can raise it as it is."""


_DURATION = re.compile(r"^\s*(-?[0-9]+(?:\.[0-9]+)?)\s*(us|ms|s)\s*$")
_UNIT_MS = {"us": 0.001, "ms": 1.0, "s": 1000.0}


def duration_ms(text: str, what: str = "delay") -> float:
    """'50ms', '1.5ms', '200us', '1s' as milliseconds; a one-line ImpairmentError otherwise."""
    m = _DURATION.match(text)
    if not m:
        raise ImpairmentError(f"{what} '{text}' is not a duration like '50ms', '1.5ms', '200us' or '1s'")
    ms = float(m.group(1)) * _UNIT_MS[m.group(2)]
    if ms < 0:
        raise ImpairmentError(f"{what} must not be negative (got '{text}')")
    return ms


@dataclass(frozen=True)
class Impairment:
    """What a link fault asks for; ImpairmentError (one line) when it makes no sense."""

    delay_ms: float = 0.0
    jitter_ms: float = 0.0
    loss_pct: float = 0.0
    distribution: str = "uniform"
    reorder: bool = True

    def __post_init__(self) -> None:
        if self.delay_ms < 0 or self.jitter_ms < 0:
            raise ImpairmentError(
                f"delay and jitter must not be negative (got {self.delay_ms:g} ms, {self.jitter_ms:g} ms)"
            )
        if self.delay_ms > 60_000 or self.jitter_ms > 60_000:
            raise ImpairmentError("delay and jitter are at most 60 s")
        if not 0 <= self.loss_pct <= 100:
            raise ImpairmentError(f"loss is a percentage, 0-100 (got {self.loss_pct:g})")
        if self.jitter_ms > 0 and self.delay_ms == 0:
            raise ImpairmentError("jitter needs a delay to vary around (e.g. delay 10ms, jitter 5ms)")
        if self.distribution not in DISTRIBUTIONS:
            raise ImpairmentError(
                f"distribution is one of {', '.join(DISTRIBUTIONS)} (got '{self.distribution}')"
            )
        if self.delay_ms == 0 and self.loss_pct == 0:
            raise ImpairmentError("nothing to do: give a delay, a loss, or both")

    @property
    def delays(self) -> bool:
        return self.delay_ms > 0

    def describe(self) -> str:
        parts = []
        if self.delays:
            jitter = f" +- {self.jitter_ms:g} ms ({self.distribution})" if self.jitter_ms else ""
            parts.append(f"{self.delay_ms:g} ms{jitter} added round trip")
        if self.loss_pct:
            parts.append(f"{self.loss_pct:g} % loss each way")
        return ", ".join(parts)

    def to_json(self) -> dict[str, object]:
        return asdict(self)


def impairment(
    delay: str | None = None,
    jitter: str | None = None,
    loss: float | None = None,
    *,
    distribution: str = "uniform",
    reorder: bool = True,
) -> Impairment:
    """An Impairment from a fault's parameters as written ('50ms', '5ms', 1.0 for 1 %)."""
    return Impairment(
        delay_ms=duration_ms(delay, "delay") if delay else 0.0,
        jitter_ms=duration_ms(jitter, "jitter") if jitter else 0.0,
        loss_pct=float(loss or 0.0),
        distribution=distribution,
        reorder=reorder,
    )


def _ms(x: float) -> str:
    """A duration for a command line, in whole microseconds so nothing is rounded away."""
    return f"{round(x * 1000)}us"


def _lose(outgoing: bool) -> list[str]:
    """The target of a lost packet: silently gone for an outgoing one (see BLACKHOLE_QUEUE)."""
    return ["-j", "NFQUEUE", "--queue-num", str(BLACKHOLE_QUEUE)] if outgoing else ["-j", "DROP"]


def rules(
    peers: list[str] | None,
    imp: Impairment,
    *,
    dev: str = "eth0",
    queue: int | None = QUEUE,
    chains: tuple[str, str] = (CHAIN_OUT, CHAIN_IN),
) -> list[list[str]]:
    """iptables argv lists, in order, that send the node's packets to and from `peers` (or, with
    None, every packet on `dev`) through loss and the delay line's queue (None: no delay here,
    netem does it or there is none). Each direction: a rule without a target that only counts,
    the `statistic` loss, the NFQUEUE rule with --queue-bypass (packets pass while no program
    listens). Run inside the node's namespace."""
    ipt = ["iptables", "-w"]
    out_chain, in_chain = chains
    cmds: list[list[str]] = [[*ipt, "-N", out_chain], [*ipt, "-N", in_chain]]
    for chain, addr_flag in ((out_chain, "-d"), (in_chain, "-s")):
        matches = [[addr_flag, p] for p in peers] if peers is not None else [[]]
        for m in matches:
            cmds.append([*ipt, "-A", chain, *m])
            if imp.loss_pct:
                sample = ["-m", "statistic", "--mode", "random", "--probability", f"{imp.loss_pct / 100:.6f}"]
                cmds.append([*ipt, "-A", chain, *m, *sample, *_lose(chain == out_chain)])
            if imp.delays and queue is not None:
                cmds.append(
                    [*ipt, "-A", chain, *m, "-j", "NFQUEUE", "--queue-num", str(queue), "--queue-bypass"]
                )
    # The jumps last: until they are there the chains see no packet.
    cmds += [
        [*ipt, "-I", "OUTPUT", "1", "-o", dev, "-j", out_chain],
        [*ipt, "-I", "INPUT", "1", "-i", dev, "-j", in_chain],
    ]
    return cmds


def unrules(*, dev: str = "eth0", chains: tuple[str, str] = (CHAIN_OUT, CHAIN_IN)) -> list[list[str]]:
    """Exactly what `rules` added, removed (run with check=False: each step may already be gone)."""
    ipt = ["iptables", "-w"]
    out_chain, in_chain = chains
    return [
        [*ipt, "-D", "OUTPUT", "-o", dev, "-j", out_chain],
        [*ipt, "-D", "INPUT", "-i", dev, "-j", in_chain],
        [*ipt, "-F", out_chain],
        [*ipt, "-X", out_chain],
        [*ipt, "-F", in_chain],
        [*ipt, "-X", in_chain],
    ]


def counters_argv(chain: str) -> list[str]:
    """Our chain's rules with their counters, as `-A CHAIN ... -c PKTS BYTES [-j TARGET]`."""
    return ["iptables", "-w", "-S", chain, "-v"]


def loss_counts(listing: str) -> tuple[int, int]:
    """(packets seen, packets dropped) from `counters_argv` of one of our chains: the counting
    rules have no target, the drops are the `statistic` rules."""
    seen = dropped = 0
    for line in listing.splitlines():
        words = line.split()
        if not words or words[0] != "-A" or "-c" not in words:
            continue
        i = words.index("-c")
        pkts = int(words[i + 1])
        target = words[words.index("-j") + 1] if "-j" in words else None
        if target is None:
            seen += pkts
        elif "statistic" in words:
            dropped += pkts
    return seen, dropped


def delayline_argv(
    imp: Impairment,
    *,
    queue: int = QUEUE,
    status: Path,
    binary: Path = DELAYLINE_BIN,
    seed: int | None = None,
) -> list[str]:
    """The delay line for an impairment: half the round trip's delay and jitter each way (both
    directions go through the one queue). Loss is not its job (iptables drops)."""
    argv = [
        str(binary),
        "run",
        "--queue",
        str(queue),
        "--delay",
        _ms(imp.delay_ms / 2),
        "--jitter",
        _ms(imp.jitter_ms / 2),
        "--dist",
        imp.distribution,
        "--status",
        str(status),
    ]
    if not imp.reorder:
        argv.append("--no-reorder")
    if seed is not None:
        argv += ["--seed", str(seed)]
    return argv


def netem_argv(imp: Impairment, dev: str = "eth0") -> list[str]:
    """netem on the node's egress: the whole added round trip one way, jitter as asked. Loss stays
    with iptables, so it is the same on every kernel."""
    jitter = [_ms(imp.jitter_ms)] if imp.jitter_ms else []
    return ["tc", "qdisc", "replace", "dev", dev, "root", "netem", "delay", _ms(imp.delay_ms), *jitter]


def netem_del_argv(dev: str = "eth0") -> list[str]:
    return ["tc", "qdisc", "del", "dev", dev, "root"]


def netem_usable(imp: Impairment, peers: list[str] | None) -> bool:
    """Whether netem can do this delay where the kernel has it: the whole link (a root qdisc has
    no notion of peers), and in order only when there is no jitter (netem reorders with it)."""
    return imp.delays and peers is None and (imp.reorder or imp.jitter_ms == 0)
