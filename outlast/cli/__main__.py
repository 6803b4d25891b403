"""``python -m outlast.cli``: the same commands as ``outlast``."""

import sys

from outlast.cli import main

sys.exit(main())
