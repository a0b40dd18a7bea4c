"""Pure models: topology, endpoints, workloads. No I/O beyond reading the user's file."""
