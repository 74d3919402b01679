from __future__ import annotations

from bot.cli.main import main

raise SystemExit(main())
