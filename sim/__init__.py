"""Simulated client/target tenant clusters speaking the Kubernetes HTTP API (demo, tests, benchmarks)."""
