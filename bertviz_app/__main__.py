"""`python -m bertviz_app` is `bertviz-app`."""

import sys

from .cli import main

sys.exit(main())
