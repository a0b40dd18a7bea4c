"""Checkers read histories and cluster state after heal and return a Verdict."""

from clusterbench.checkers.verdict import Result, Verdict, combine

__all__ = ["Result", "Verdict", "combine"]
