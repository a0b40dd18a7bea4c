"""The list-append checker's parts: the consistency models and which anomaly rules out which
(`models`), what the history says without a graph (`observe`), the dependency graph (`graph`),
its cycles (`cycles`, `classes`) and how each edge is justified (`explain`).
`checkers.list_append` puts them together into a verdict."""
