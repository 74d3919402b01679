from __future__ import annotations

from bot.cli import main

raise SystemExit(main())
