"""What clients did and saw, shared by the workloads that record it (clusterbench.verify) and the
checkers that judge it (clusterbench.checkers): operations with a three-valued outcome, the
history they are kept in, its time base, and transactions of micro-operations."""
