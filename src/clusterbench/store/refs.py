"""How a command names a stored run: its id, or 'last'."""

from __future__ import annotations

from clusterbench.errors import InputError
from clusterbench.store.store import Store


def resolve_run(store: Store, ref: str) -> int:
    """A run id, or 'last' for the newest run."""
    if ref == "last":
        runs = store.list_runs()
        if not runs:
            raise InputError("the store holds no runs yet; start one with `clusterbench run` or `suite`")
        return runs[-1].id
    if not ref.isdigit():
        raise InputError(
            f"run must be a number or 'last', got {ref!r}; `clusterbench results list` lists the runs"
        )
    run_id = int(ref)
    store.get_run(run_id)
    return run_id
