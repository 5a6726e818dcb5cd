"""``python -m pgflight.cli``."""

from pgflight.cli.app import main

main()
