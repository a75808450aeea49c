"""Performance experiments: benchmarks that print tables.

Simulator speed: ``python -m absnb.experiments.sim_speed``.
The paper's evaluation on Spark (Figures 6 and 7, alignment, recovery), as DataFrames:
:mod:`absnb.experiments.paper`; printed with the targets by ``python -m absnb bench``
(:mod:`absnb.experiments.bench`); drawn in ``notebooks/06_performance.ipynb``.
"""
