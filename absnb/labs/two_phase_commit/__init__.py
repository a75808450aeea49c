"""The two-phase-commit lab: a student writes the checkpoint glue of an exactly-once sink
(:class:`~absnb.labs.two_phase_commit.handler.TransactionalSink`), checked against the
package's :class:`~absnb.sinks.MemorySink` (Flink's ``TwoPhaseCommitSinkFunction``, seed
004) on scripted cases at one sink, random runs with crashes and every interleaving of a
small word count whose sink writes to the simulator's
:class:`~absnb.sinks.TransactionStore`; and, where Java is, on one run on Spark whose sinks
write to a :class:`~absnb.sinks.file_store.FileTransactionStore`
(:mod:`~absnb.labs.two_phase_commit.on_spark`)."""
