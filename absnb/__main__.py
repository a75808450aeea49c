"""`python -m absnb`: the command line (see :mod:`absnb.cli`)."""

from absnb.cli import main

raise SystemExit(main())
