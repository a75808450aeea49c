"""The control plane: the checkpoint coordinator as a server on the driver, the hosts'
client of it, the messages between them, and what the coordinator decides from them
(pending checkpoints, the final checkpoint, termination, why an attempt failed).
"""
