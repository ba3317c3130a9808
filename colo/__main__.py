import sys

from colo.cli import console

sys.exit(console())
