"""Pieces of the system under test: Galera nodes, HAProxy. Each renders config (pure), parses
status (pure) and drives real processes on a Host."""
