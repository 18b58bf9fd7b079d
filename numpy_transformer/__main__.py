"""`python -m numpy_transformer ...`: see cli.py."""

from .cli import main

raise SystemExit(main())
