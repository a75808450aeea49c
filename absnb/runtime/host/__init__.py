"""A host: one process of the real runtime (one Spark task) running some tasks of the job,
with what it keeps beside them (pacing, its inbox, alignment, announced barriers, the
asynchronous part of a snapshot).
"""
