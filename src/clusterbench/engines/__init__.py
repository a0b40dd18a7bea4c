"""Database engines behind one interface (Galera, Group Replication)."""
