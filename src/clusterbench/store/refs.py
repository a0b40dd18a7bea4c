"""How a command names a stored run: its id, or 'last'."""

from __future__ import annotations

from clusterbench.errors import InputError
from clusterbench.store.store import Store


def resolve_run(store: Store, ref: str) -> int:
    """A run id, 'last' for the newest run, or 'baseline' for the run marked as the baseline."""
    if ref == "baseline":
        from clusterbench.store.labels import baseline

        marked = baseline(store)
        if marked is None:
            raise InputError(
                "no run is marked as the baseline; mark one with `clusterbench results baseline RUN`"
            )
        return marked
    if ref == "last":
        runs = store.list_runs()
        if not runs:
            raise InputError("the store holds no runs yet; start one with `clusterbench run` or `suite`")
        return runs[-1].id
    if not ref.isdigit():
        raise InputError(
            f"run must be a number, 'last' or 'baseline', got {ref!r}; `clusterbench results list` lists "
            "the runs"
        )
    run_id = int(ref)
    store.get_run(run_id)
    return run_id
