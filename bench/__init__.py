"""`python -m bench`: scheduling throughput and plan cost against an LP lower bound."""
