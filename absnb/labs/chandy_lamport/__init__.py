"""The Chandy-Lamport lab: a student writes what a process does at a snapshot's markers
(:class:`~absnb.labs.chandy_lamport.handler.MarkerHandler`), checked against the
package's :class:`~absnb.protocols.chandy_lamport.ChandyLamportHandler` on seed 001's
bank and on small banks with concurrent snapshots started at any account."""
