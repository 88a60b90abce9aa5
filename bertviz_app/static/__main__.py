"""`python -m bertviz_app.static [--force]`: fetch onnxruntime-web into the package (`make setup` runs it). A module
of the package rather than `-m bertviz_app.static.runtime`, which the package has imported already: runpy warned
that it may run twice."""

import sys

from .runtime import PACKAGE, VERSION, fetch

where = fetch(force="--force" in sys.argv[1:])
print(f"{PACKAGE} {VERSION} in {where}")
