"""MySQL Group Replication: members chrooted into a debootstrapped MySQL, one network namespace each."""
