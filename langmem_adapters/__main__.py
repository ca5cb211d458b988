"""``python -m langmem_adapters``: the ``langmem-adapters`` command."""

import sys

from langmem_adapters.cli import main

sys.exit(main())
