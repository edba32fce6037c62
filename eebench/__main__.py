"""`python -m eebench`: the command line, as the `eebench` script runs it."""

from eebench.cli import run

run()
