"""The ABS lab's extension, Algorithm 2: a student writes what a task of a cyclic graph does
at a checkpoint's barriers, aligning its regular inputs and logging its loop inputs
(:class:`~absnb.labs.cyclic.handler.CyclicAbsHandler`), checked against the package's
:class:`~absnb.protocols.cyclic.CyclicBarrierHandler` on the Collatz loop of notebook 03."""
