# The notebooks here are browser fixtures driven by test_lab.py, not notebooks to check with
# nbval (which the repository's addopts switch on for every .ipynb pytest meets).
collect_ignore_glob = ["*.ipynb"]
