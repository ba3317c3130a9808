import sys

from colo.cli import main

sys.exit(main())
