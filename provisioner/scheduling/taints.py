"""Taints, tolerations and host ports (pkg/scheduling/taints.go, hostportusage.go)."""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kubefacts.labels import NO_SCHEDULE, PREFER_NO_SCHEDULE


@dataclass(frozen=True)
class Taint:
    key: str
    value: str = ""
    effect: str = NO_SCHEDULE

    def __str__(self) -> str:
        return f"{self.key}={self.value}:{self.effect}" if self.value else f"{self.key}:{self.effect}"


@dataclass(frozen=True)
class Toleration:
    key: str = ""
    operator: str = ""
    value: str = ""
    effect: str = ""

    def tolerates(self, taint: Taint) -> bool:
        """corev1.Toleration.ToleratesTaint: empty effect/key act as wildcards."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        return self.value == taint.value


# Relaxation adds this when a NodePool carries a PreferNoSchedule taint (preferences.go).
TOLERATE_PREFER_NO_SCHEDULE = Toleration(operator="Exists", effect=PREFER_NO_SCHEDULE)


def untolerated(taints: Iterable[Taint], tolerations: Iterable[Toleration]) -> Taint | None:
    """The first taint none of the tolerations matches, or None when all are tolerated."""
    for taint in taints:
        if not any(t.tolerates(taint) for t in tolerations):
            return taint
    return None


@dataclass(frozen=True)
class HostPort:
    ip: str
    port: int
    protocol: str

    def conflicts(self, other: "HostPort") -> bool:
        if self.protocol != other.protocol or self.port != other.port:
            return False
        unspecified = ("0.0.0.0", "::")
        return self.ip == other.ip or self.ip in unspecified or other.ip in unspecified


def ports_conflict(ports: Iterable[HostPort], used: Iterable[HostPort]) -> HostPort | None:
    for port in ports:
        for existing in used:
            if port.conflicts(existing):
                return port
    return None
