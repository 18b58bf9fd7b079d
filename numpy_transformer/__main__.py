"""`python -m numpy_transformer ...`: see cli/__init__.py."""

from .cli import main

raise SystemExit(main())
