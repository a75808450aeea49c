#!/bin/sh
# absnb against Bytewax and PyFlink on the same word count: see run.py.
exec python3 "$(dirname "$0")/run.py" "$@"
