"""The LP lower bound moved to provisioner.cost.lpbound (tune uses it); kept importable here."""
from provisioner.cost.lpbound import Bound, lower_bound

__all__ = ["Bound", "lower_bound"]
