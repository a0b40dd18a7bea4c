"""clusterbench: a lab for MySQL-compatible database clusters."""

__version__ = "0.1.0"
