"""Values only: ids, messages, effects, graphs and snapshots. No I/O, no clock, no randomness."""
