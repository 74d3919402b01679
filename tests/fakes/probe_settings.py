"""One client cluster with one target and its probe, as the probe tests configure it."""

from __future__ import annotations

from config.settings import Settings

TARGET = "platform/crd-store"
GV = "example.com/v1"
PROBE = "/apis/example.com/v1/namespaces/default/widgets"


def _settings() -> Settings:
    return Settings.model_validate(
        {
            "slack": {"default_channel": "#ops"},
            "clusters": [
                {
                    "name": "team-a",
                    "kubeconfig": "/nonexistent/team-a.yaml",
                    "match": {"cluster": "team-a"},
                    "targets": [
                        {
                            "name": TARGET,
                            "group_versions": [GV, "data.example.com/v1alpha1"],
                            "probe": {"group_version": GV, "resource": "widgets"},
                        }
                    ],
                }
            ],
        }
    )


SETTINGS = _settings()
