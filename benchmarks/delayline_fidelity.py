"""Fidelity of delay-link and loss-link without netem, measured on this machine with no database.

Two scratch namespaces (cbdl-a, cbdl-b, 198.18.250.0/24) on a bridge of their own. For each
condition (none, 50 ms, 10 ms +- 5 ms, 1 % and 10 % loss) the fault is applied to a's link towards
b by the NFQUEUE delay line (clusterbench.faults.delayline), and a client in a measures TCP
request/response round trips on one connection while a second connection carries a steady load of
small messages echoed back (like Galera's replication traffic at a few thousand writes/s).
Printed: requested vs achieved added RTT (median, p5, p95, max), the load's achieved rate, the
line's CPU, and the achieved loss per direction. Then the delay line's throughput: UDP floods at
rising packet rates through a 10 ms line, packets it held vs packets sent (the rest passed
undelayed: fail-open) and its CPU. With --toxiproxy PATH the same RTT measures through toxiproxy
(a TCP proxy in a, the client connects to it) for comparison.

Usage (root): python benchmarks/delayline_fidelity.py [--seconds 4] [--load 2000]
              [--rates 5000,10000,20000,40000] [--toxiproxy /path/to/toxiproxy-server]
toxiproxy's server, if wanted (about 2 min to build; only this exact version resolves here):
  GOBIN=/tmp/toxi go install github.com/Shopify/toxiproxy/v2/cmd/server@v2.12.0
Everything it creates is removed at the end, also on failure.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from clusterbench.faults.delayline import LinkImpairment, preflight, require
from clusterbench.faults.delayline_lab import ScratchLink, scratch_link
from clusterbench.faults.delayline_plan import DELAYLINE_BIN, Impairment, impairment

ECHO_PORT, SINK_PORT, PROXY_PORT = 7000, 7001, 7100

# b: a TCP echo server (fixed 64-byte messages) and a UDP sink.
SERVER = (
    f"SINK_PORT, ECHO_PORT = {SINK_PORT}, {ECHO_PORT}"
    + """
import socket, threading
def serve(c):
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    while True:
        d = c.recv(65536)
        if not d: return
        c.sendall(d)
def sink():
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind(("0.0.0.0", SINK_PORT))
    while True: u.recv(2048)
threading.Thread(target=sink, daemon=True).start()
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", ECHO_PORT)); s.listen(16); print("ready", flush=True)
while True:
    c, _ = s.accept(); threading.Thread(target=serve, args=(c,), daemon=True).start()
"""
)

# a: round trips on one connection while another carries `load` messages/s echoed back.
CLIENT = """
import json, socket, sys, threading, time
host, port, secs, load = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
MSG = b"m" * 64
def conn():
    c = socket.create_connection((host, port), timeout=10)
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1); return c
stop = time.monotonic() + secs
sent = [0]; echoed = [0]
def loader():
    c = conn()
    def reader():
        while True:
            try: d = c.recv(65536)
            except OSError: return
            if not d: return
            echoed[0] += len(d)
    threading.Thread(target=reader, daemon=True).start()
    t0 = time.monotonic()
    while time.monotonic() < stop:
        due = int((time.monotonic() - t0) * load)
        while sent[0] < due:
            c.sendall(MSG); sent[0] += 1
        time.sleep(0.001)
if load: threading.Thread(target=loader, daemon=True).start()
c = conn(); rtts = []
while time.monotonic() < stop:
    t = time.monotonic(); c.sendall(MSG); got = 0
    while got < len(MSG): got += len(c.recv(len(MSG) - got))
    rtts.append((time.monotonic() - t) * 1000); time.sleep(0.01)
time.sleep(0.3)
print(json.dumps({"rtt_ms": rtts, "sent": sent[0], "echoed": echoed[0] // len(MSG), "secs": secs}))
"""

# a: UDP at a steady packet rate for a while.
FLOOD = """
import socket, sys, time
host, port, rate, secs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); n = 0; t0 = time.monotonic()
while True:
    el = time.monotonic() - t0
    if el >= secs: break
    due = int(el * rate)
    while n < due:
        s.sendto(b"u" * 64, (host, port)); n += 1
    time.sleep(0.0005)
print(n, round(time.monotonic() - t0, 3))
"""


def q(xs: list[float], p: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, int(p * len(s) + 0.999999) - 1))]


def run_client(lk: ScratchLink, secs: float, load: int, host: str, port: int) -> dict[str, Any]:
    out = lk.a.run(
        ["nice", "python3", "-c", CLIENT, host, str(port), str(secs), str(load)], timeout=secs + 60
    )
    return json.loads(out.stdout)


def condition(
    lk: ScratchLink, imp: Impairment | None, args: argparse.Namespace, work: Path
) -> dict[str, Any]:
    """One condition: the client's measures, the line's final report and what heal said."""
    if imp is None:
        return {**run_client(lk, args.seconds, args.load, lk.addr_b, ECHO_PORT), "line": None, "healed": {}}
    mech = require(preflight(lk.a, imp, [lk.addr_b]))
    fault = LinkImpairment(lk.a, imp, [lk.addr_b], workdir=work, mechanism=mech, seed=42)
    fault.apply()
    try:
        res = run_client(lk, args.seconds, args.load, lk.addr_b, ECHO_PORT)
    finally:
        healed = fault.heal()
    # The line writes its final report when it stops.
    return {**res, "line": fault.status() if mech.delay == "nfqueue" else None, "healed": healed}


def added(res: dict[str, Any], base_median: float) -> dict[str, float]:
    xs = [x - base_median for x in res["rtt_ms"]]
    return {"p5": q(xs, 0.05), "p50": q(xs, 0.5), "p95": q(xs, 0.95), "max": max(xs)}


def fmt_row(name: str, req: str, a: dict[str, float], res: dict[str, Any], extra: str) -> str:
    rate = res["echoed"] / res["secs"]
    return (
        f"| {name} | {req} | {a['p50']:.2f} | {a['p5']:.2f} | {a['p95']:.2f} | {a['max']:.2f} | "
        f"{len(res['rtt_ms'])} | {rate:.0f}/{res['sent'] / res['secs']:.0f} | {extra} |"
    )


def line_extra(res: dict[str, Any]) -> str:
    line = res.get("line") or {}
    parts = []
    if line:
        cpu = 100 * line["cpu_s"] / max(line["uptime_s"], 0.1)
        parts.append(f"line CPU {cpu:.1f} % for {line['received'] / max(line['uptime_s'], 0.1):.0f} pkt/s")
    loss = res["healed"].get("achieved_loss")
    if loss:
        o, i = loss["out"], loss["in"]
        parts.append(
            f"loss out {o['loss_pct']} % of {o['packets']} pkts, in {i['loss_pct']} % of {i['packets']}"
        )
    return "; ".join(parts)


COLS = ["condition", "requested added RTT ms", "achieved p50", "p5", "p95", "max", "samples"]
CONDITIONS: list[tuple[str, dict[str, Any] | None, str]] = [
    ("none", None, "0"),
    ("50 ms", {"delay": "50ms"}, "50"),
    ("10 ms +- 5 ms", {"delay": "10ms", "jitter": "5ms"}, "10 (5..15)"),
    ("1 % loss", {"loss": 1.0}, "0"),
    ("10 % loss", {"loss": 10.0}, "0"),
]


def fidelity(lk: ScratchLink, args: argparse.Namespace, work: Path) -> float:
    print(f"\n## RTT through the delay line ({args.seconds:g} s each, load {args.load} msgs/s echoed)\n")
    print("| " + " | ".join([*COLS, "load echoed/sent per s", "notes"]) + " |")
    print("|---|---|---|---|---|---|---|---|---|")
    base = None
    for name, spec, req in CONDITIONS:
        res = condition(lk, impairment(**spec) if spec else None, args, work)
        if base is None:
            base = statistics.median(res["rtt_ms"])
        print(fmt_row(name, req, added(res, base), res, line_extra(res)), flush=True)
    assert base is not None
    print(f"\nbase RTT median {base:.3f} ms (TCP, 64-byte messages, Python client and server)")
    return base


def throughput(lk: ScratchLink, rates: list[int], work: Path) -> None:
    print("\n## Packet rate through a 10 ms line (UDP, 64 bytes, 3 s each, cb-delayline flood)\n")
    print("| sent pkt/s | held by the line | passed undelayed | hold p50 ms | p95 | max | line CPU % |")
    print("|---|---|---|---|---|---|---|")
    imp = impairment("20ms")  # 10 ms each way; the flood is one-way
    for rate in rates:
        mech = require(preflight(lk.a, imp, [lk.addr_b]))
        fault = LinkImpairment(lk.a, imp, [lk.addr_b], workdir=work, mechanism=mech, seed=1)
        fault.apply()
        try:
            argv = [str(DELAYLINE_BIN), "flood", "--addr", f"{lk.addr_b}:{SINK_PORT}", "--rate", str(rate)]
            out = json.loads(lk.a.run([*argv, "--for", "3s"], timeout=60).stdout)
            time.sleep(0.2)
            total = sum(
                _counted(lk.a.run(["iptables", "-w", "-S", c, "-v"]).stdout) for c in ("CBDL-OUT", "CBDL-IN")
            )
        finally:
            healed = fault.heal()
        line = healed.get("achieved_hold_ms", {})
        st = fault.status() or {}
        held = int(st.get("received", 0))
        cpu = 100 * st.get("cpu_s", 0) / max(out["seconds"], 0.1)
        print(
            f"| {out['sent'] / out['seconds']:.0f} | {held} of {total} | {max(0, total - held)} | "
            f"{line.get('p50', 0):.2f} | {line.get('p95', 0):.2f} | {line.get('max', 0):.2f} | {cpu:.0f} |",
            flush=True,
        )


def _counted(listing: str) -> int:
    return sum(
        int(w.split()[w.split().index("-c") + 1])
        for w in listing.splitlines()
        if "-c" in w.split() and "-j" not in w.split()
    )


# a: toxiproxy's HTTP API, from inside a (it listens on a's loopback).
TOXI_API = """
import json, sys, urllib.request
def call(method, path, body=None):
    req = urllib.request.Request("http://127.0.0.1:8474" + path, method=method,
                                 data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Content-Type": "application/json"})
    return urllib.request.urlopen(req, timeout=5).read()
for step in json.loads(sys.argv[1]):
    call(*step)
"""


def _proc_cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _toxics(lk: ScratchLink, steps: list[list[Any]]) -> None:
    lk.a.run(["python3", "-c", TOXI_API, json.dumps(steps)])


def toxiproxy(lk: ScratchLink, args: argparse.Namespace, server: Path) -> None:
    """The same RTT measures through toxiproxy: a proxy in a (198.18.250.1:7100) to b's echo
    server, half the delay on each stream, as the delay line does. No loss: it has no toxic for it."""
    print(f"\n## RTT through toxiproxy ({args.seconds:g} s each, load {args.load} msgs/s echoed)\n")
    print("| " + " | ".join([*COLS, "load echoed/sent per s", "toxiproxy CPU %"]) + " |")
    print("|---|---|---|---|---|---|---|---|---|")
    proc = subprocess.Popen(
        ["ip", "netns", "exec", lk.a.netns, str(server), "-host", "127.0.0.1", "-port", "8474"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        time.sleep(1.0)
        proxy = {"name": "b", "listen": f"{lk.addr_a}:{PROXY_PORT}", "upstream": f"{lk.addr_b}:{ECHO_PORT}"}
        _toxics(lk, [["POST", "/proxies", proxy]])
        base = None
        # (latency, jitter) per stream in whole ms (toxiproxy takes no fractions): the jitter on
        # one stream only, so the round trip varies over the asked range.
        plans: list[tuple[str, list[tuple[int, int]] | None, str]] = [
            ("none", None, "0"),
            ("50 ms", [(25, 0), (25, 0)], "50"),
            ("10 ms +- 5 ms", [(5, 5), (5, 0)], "10 (5..15)"),
        ]
        for name, per_stream, req in plans:
            if per_stream is not None:
                steps = []
                for stream, (lat, jit) in zip(("upstream", "downstream"), per_stream, strict=True):
                    attrs = {"latency": lat, "jitter": jit}
                    steps.append(
                        [
                            "POST",
                            "/proxies/b/toxics",
                            {"name": stream, "type": "latency", "stream": stream, "attributes": attrs},
                        ]
                    )
                _toxics(lk, steps)
            cpu0 = _proc_cpu_s(proc.pid)
            res = run_client(lk, args.seconds, args.load, lk.addr_a, PROXY_PORT)
            cpu = 100 * (_proc_cpu_s(proc.pid) - cpu0) / args.seconds
            if per_stream is not None:
                _toxics(lk, [["DELETE", f"/proxies/b/toxics/{s}"] for s in ("upstream", "downstream")])
            if base is None:
                base = statistics.median(res["rtt_ms"])
            print(fmt_row(name, req, added(res, base), res, f"{cpu:.1f}"), flush=True)
        print(f"\nbase RTT median through the proxy {base:.3f} ms")
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--load", type=int, default=2000)
    ap.add_argument("--rates", default="5000,10000,20000,40000")
    ap.add_argument("--toxiproxy", type=Path, default=None)
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("error: needs root (network namespaces, iptables)", file=sys.stderr)
        return 2
    if not DELAYLINE_BIN.exists():
        print(f"error: {DELAYLINE_BIN} is not built; run scripts/build-tools.sh", file=sys.stderr)
        return 2
    os.nice(5)
    work = Path(f"/tmp/cbdl-bench-{os.getpid()}")
    work.mkdir(exist_ok=True)
    with scratch_link("cbdl", "198.18.250") as lk:
        server = subprocess.Popen(
            ["ip", "netns", "exec", lk.b.netns, "python3", "-c", SERVER], stdout=subprocess.PIPE, text=True
        )
        try:
            assert server.stdout is not None and server.stdout.readline().strip() == "ready"
            fidelity(lk, args, work)
            throughput(lk, [int(r) for r in args.rates.split(",")], work)
            if args.toxiproxy:
                toxiproxy(lk, args, args.toxiproxy)
        finally:
            server.kill()
            server.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
