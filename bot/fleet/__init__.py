"""The fleet from the vCluster Platform: its instances read, its clients derived, every read through it."""
