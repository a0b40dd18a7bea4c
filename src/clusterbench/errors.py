"""One exception hierarchy. The CLI is the only place these become exit codes.

Every message is one line that names the field or the problem and says what to do next.
"""

from __future__ import annotations


class ClusterbenchError(Exception):
    """Base class. `exit_code` is what the CLI returns for it."""

    exit_code = 2


class InputError(ClusterbenchError):
    """Bad input from the user: a file, a flag, a value."""


class PreflightError(ClusterbenchError):
    """The machine is not ready: not root, a package missing, a port in use, a subnet taken."""


class ClusterStateError(ClusterbenchError):
    """The cluster is not in a state that allows the request (already up, not up, leftovers)."""


class ComponentError(ClusterbenchError):
    """A real component failed: a node did not join, HAProxy did not start."""


class WorkloadError(ClusterbenchError):
    """A load generator failed in a way that makes its result meaningless."""
