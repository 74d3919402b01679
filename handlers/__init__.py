"""What happens on each input: alerts, commands, actions, digests."""
