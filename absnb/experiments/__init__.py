"""Performance experiments: benchmarks that print tables.

Simulator speed: ``python -m absnb.experiments.sim_speed``.
"""
