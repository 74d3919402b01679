"""Thin typed wrappers around every external system; the only place that does I/O."""
