"""Server telemetry: per-second figures of every server process, link, disk, engine and balancer
beside the load, and a bottleneck verdict per trial (docs/telemetry.md)."""
