"""Checkpoint storage: each task's snapshot of a checkpoint, the manifest that completes it,
incremental chains, and the filesystems they are kept on (local, fsspec, slowed down).
"""
