"""Real Prometheus and Alertmanager, started by tests on free loopback ports in a temporary directory."""
