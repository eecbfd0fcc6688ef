import sys

from inertia.cli import main

sys.exit(main())
