"""``python -m app``: the command line (see :mod:`app.cli`)."""

from app.cli import main

raise SystemExit(main())
