"""proxybot: Slack chat-ops for the vCluster Platform resource proxy."""
