"""What a run did, as data: each host's event log, the run's event table and its files,
and the checkpoint, task and memory measurements made from them.
"""
