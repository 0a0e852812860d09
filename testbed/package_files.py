"""Where testbed's own files are, installed from a wheel or run from a checkout alike.

Every file testbed needs at run time (image recipes, Java sources, templates, the instrumentation's
sitecustomize) ships inside the ``testbed`` package, so its paths are taken from the package's own folder and never
from the folders around it: in site-packages the folder beside ``testbed`` is other packages' (``docker`` there is
the Docker SDK). The import root that gives child interpreters this package is made in the cache
(``testbed.cache.import_root``).
"""

from __future__ import annotations

from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
RECIPES_DIR = PACKAGE_DIR / "brokers" / "recipes"  # the image recipes; `docker/` in a checkout links here
