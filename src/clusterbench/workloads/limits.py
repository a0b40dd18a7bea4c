"""TPC-C's scale, as the command line's option limits need it (no imports: the options of every
command are built at start-up)."""

TPCC = "tpcc"
TPCC_CUSTOMERS = 3000  # per district, TPC-C's scale
TPCC_ITEMS = 100_000  # rows in ITEM, and in STOCK per warehouse
