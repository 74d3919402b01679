"""`scripts/screenshots.py` as a module for the tests that read the demo's page (it is a script, not a
package module): loaded once per process, as `screenshots`."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "screenshots.py"


def load() -> ModuleType:
    if "screenshots" in sys.modules:
        return sys.modules["screenshots"]
    spec = importlib.util.spec_from_file_location("screenshots", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["screenshots"] = module
    spec.loader.exec_module(module)
    return module
