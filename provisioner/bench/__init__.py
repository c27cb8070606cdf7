"""`python -m provisioner.bench`: scheduling throughput and plan cost against an LP lower bound."""
