"""Everything an operator configures: settings models, example config, rules, manifests."""
