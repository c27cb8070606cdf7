"""TopologyGroup choices in isolation (topologygroup.go nextDomainTopologySpread, nextDomainMinDomains,
nextDomainAffinity/AntiAffinity): the domain picked, counts recorded per placement and node filters.
Written against the mutants `make mutation` left alive in provisioner/scheduling/topology.py."""
from __future__ import annotations

from provisioner.scheduling.requirements import Requirement, Requirements
from provisioner.scheduling.topology import ANTI, SPREAD, NodeFilter, Topology, TopologyGroup

ZONE, HOST = "topology.kubernetes.io/zone", "kubernetes.io/hostname"
ANY = Requirement(ZONE, True)


def counted(group: TopologyGroup, counts: dict) -> TopologyGroup:
    """`group` with every domain of `counts` registered and its count of pods recorded."""
    for domain, count in counts.items():
        group.register(domain)
        if count:
            group.record(domain, count)
    return group


def spread_group(counts: dict, max_skew=1, min_domains=None, key=ZONE, node_filter=None) -> TopologyGroup:
    return counted(TopologyGroup(SPREAD, key, None, None, max_skew=max_skew, min_domains=min_domains,
                                 node_filter=node_filter), counts)


def test_record_adds_n_and_counts_nonempty_domains_once():
    group = spread_group({"a": 0, "b": 0})
    group.record("a", 3)
    group.record("a", 2)
    assert group.counts == {"a": 5, "b": 0} and group.nonempty == 1
    group.record("b")
    assert group.counts["b"] == 1 and group.nonempty == 2


def test_spread_picks_the_emptiest_allowed_zone_not_the_fullest():
    group = spread_group({"a": 3, "b": 1, "c": 2}, max_skew=5)
    assert group.next_domains(ANY, ANY, True) == Requirement.in_(ZONE, "b")
    only_ac = Requirement.in_(ZONE, "a", "c")
    assert group.next_domains(ANY, only_ac, True) == Requirement.in_(ZONE, "c")


def test_spread_refuses_a_zone_that_would_exceed_max_skew():
    group = spread_group({"a": 2, "b": 0})
    assert group.next_domains(ANY, Requirement.in_(ZONE, "a"), True) == Requirement(ZONE, False)
    assert group.next_domains(ANY, Requirement.in_(ZONE, "a"), False) == Requirement(ZONE, False)
    assert group.next_domains(ANY, Requirement.in_(ZONE, "b"), True) == Requirement.in_(ZONE, "b")
    loose = spread_group({"a": 1, "b": 0})
    assert loose.next_domains(ANY, Requirement.in_(ZONE, "a"), False) == Requirement.in_(ZONE, "a")
    assert loose.next_domains(ANY, Requirement.in_(ZONE, "a"), True) == Requirement(ZONE, False)


def test_min_count_is_the_smallest_count_of_the_pods_domains_and_zero_below_min_domains():
    group = spread_group({"a": 4, "b": 2, "c": 3})
    assert group._min_count(ANY) == 2
    assert group._min_count(Requirement.in_(ZONE, "a", "c")) == 3
    assert group._min_count(Requirement.in_(ZONE, "z")) == 2**31 - 1
    assert spread_group({"a": 4, "b": 2}, min_domains=3)._min_count(ANY) == 0
    assert spread_group({"a": 4, "b": 2}, min_domains=2)._min_count(ANY) == 2
    assert spread_group({"h1": 5}, key=HOST)._min_count(Requirement(HOST, True)) == 0


def test_hostname_spread_allows_a_node_until_max_skew():
    group = spread_group({"h1": 1}, max_skew=2, key=HOST)
    host = Requirement.in_(HOST, "h1")
    assert group.next_domains(Requirement(HOST, True), host, True) == host
    group.record("h1")
    assert group.next_domains(Requirement(HOST, True), host, True) == Requirement(HOST, False)
    assert group.next_domains(Requirement(HOST, True), host, False) == host


def test_topology_record_counts_n_pods_on_the_single_domain_and_blocks_every_anti_domain():
    spread = spread_group({"a": 0, "b": 0})
    anti = TopologyGroup(ANTI, ZONE, None, None)
    for domain in ("a", "b"):
        anti.register(domain)
    topology = Topology.__new__(Topology)
    topology.record([spread, anti], [], (), Requirements([Requirement.in_(ZONE, "a", "b")]), 4)
    assert spread.counts == {"a": 0, "b": 0}  # two possible zones: not counted yet
    assert anti.counts == {"a": 4, "b": 4}
    topology.record([spread], [], (), Requirements([Requirement.in_(ZONE, "a")]), 4)
    assert spread.counts == {"a": 4, "b": 0}
    topology.record([spread], [], (), Requirements([Requirement(ZONE, True)]), 4)
    assert spread.counts == {"a": 4, "b": 0}


def test_topology_record_skips_nodes_the_spread_node_filter_excludes():
    only_gpu = NodeFilter({"gpu": "true"}, (), (), "Ignore", "Honor")
    spread = spread_group({"a": 0}, node_filter=only_gpu)
    topology = Topology.__new__(Topology)
    cpu_node = Requirements([Requirement.in_(ZONE, "a"), Requirement.in_("gpu", "false")])
    gpu_node = Requirements([Requirement.in_(ZONE, "a"), Requirement.in_("gpu", "true")])
    topology.record([spread], [], (), cpu_node, 2)
    assert spread.counts == {"a": 0}
    topology.record([spread], [], (), gpu_node, 2)
    assert spread.counts == {"a": 2}


def affinity_group(counts: dict, key=ZONE, kind=None) -> TopologyGroup:
    from provisioner.scheduling.topology import AFFINITY

    return counted(TopologyGroup(kind or AFFINITY, key, None, None), counts)


def test_affinity_goes_where_matching_pods_are_and_the_node_allows():
    group = affinity_group({"a": 0, "b": 2, "c": 1})
    assert group.next_domains(ANY, ANY, False) == Requirement(ZONE, False, frozenset({"b", "c"}))
    assert group.next_domains(ANY, Requirement.in_(ZONE, "a", "c"), False) == Requirement(ZONE, False, frozenset({"c"}))
    assert group.next_domains(Requirement.in_(ZONE, "a"), ANY, False) == Requirement(ZONE, False)


def test_self_affinity_bootstraps_in_the_first_domain_the_node_allows():
    group = affinity_group({"a": 0, "b": 0, "c": 0})
    assert group.next_domains(ANY, ANY, True) == Requirement.in_(ZONE, "a")
    assert group.next_domains(ANY, Requirement.in_(ZONE, "b", "c"), True) == Requirement.in_(ZONE, "b")
    assert group.next_domains(Requirement.in_(ZONE, "c"), Requirement.in_(ZONE, "b"), True) == Requirement.in_(ZONE, "c")
    assert group.next_domains(ANY, ANY, False) == Requirement(ZONE, False)


def test_hostname_affinity_takes_the_node_with_matching_pods_or_bootstraps():
    group = affinity_group({"h1": 1, "h2": 0}, key=HOST)
    any_host = Requirement(HOST, True)
    assert group.next_domains(any_host, Requirement.in_(HOST, "h1"), False) == Requirement.in_(HOST, "h1")
    assert group.next_domains(any_host, Requirement.in_(HOST, "h2"), True) == Requirement(HOST, False)
    assert group.next_domains(Requirement.in_(HOST, "h2"), Requirement.in_(HOST, "h1"), False) == Requirement(HOST, False)
    empty = affinity_group({"h1": 0}, key=HOST)
    assert empty.next_domains(any_host, Requirement.in_(HOST, "h1"), True) == Requirement.in_(HOST, "h1")
    assert empty.next_domains(any_host, Requirement.in_(HOST, "h1"), False) == Requirement(HOST, False)


def test_anti_affinity_avoids_domains_with_matching_pods():
    group = affinity_group({"a": 1, "b": 0, "c": 0}, kind=ANTI)
    assert group.next_domains(ANY, ANY, False) == Requirement(ZONE, False, frozenset({"b", "c"}))
    assert group.next_domains(Requirement.in_(ZONE, "c"), Requirement.in_(ZONE, "a", "b", "c"), False) == \
        Requirement(ZONE, False, frozenset({"c"}))
    hosts = affinity_group({"h1": 1, "h2": 0}, key=HOST, kind=ANTI)
    assert hosts.next_domains(Requirement(HOST, True), Requirement.in_(HOST, "h1"), False) == Requirement(HOST, False)
    assert hosts.next_domains(Requirement(HOST, True), Requirement.in_(HOST, "h2"), False) == Requirement.in_(HOST, "h2")


def test_spread_ties_go_to_the_first_zone_in_name_order():
    group = spread_group({"a": 1, "b": 1, "c": 1})
    assert group.next_domains(ANY, ANY, True) == Requirement.in_(ZONE, "a")
    assert group.next_domains(ANY, Requirement.in_(ZONE, "b", "c"), True) == Requirement.in_(ZONE, "b")


def test_affinity_with_no_matching_pod_anywhere_lets_a_self_selecting_pod_start_a_domain():
    empty = affinity_group({"a": 0})
    assert not empty._any_compatible(ANY)
    assert not empty._any_compatible(Requirement.in_(ZONE, "a"))
    assert affinity_group({"a": 1})._any_compatible(ANY)
    assert not affinity_group({"a": 1})._any_compatible(Requirement.in_(ZONE, "b"))


def test_affinity_honours_excluded_pod_domains():
    group = affinity_group({"b": 2, "c": 1})
    not_b = Requirement.of(ZONE, "NotIn", ["b"])
    assert group.next_domains(not_b, ANY, False) == Requirement(ZONE, False, frozenset({"c"}))


def test_node_filter_is_trivial_only_when_neither_policy_honours_anything():
    assert NodeFilter({}, (), (), "Ignore", "Honor").trivial
    assert NodeFilter({"gpu": "true"}, (), (), "Ignore", "Ignore").trivial
    assert not NodeFilter({"gpu": "true"}, (), (), "Ignore", "Honor").trivial
    assert not NodeFilter({}, (), (), "Honor", "Ignore").trivial
    terms = (Requirements([Requirement.in_("gpu", "true")]),)
    honours_terms = NodeFilter({}, terms, (), "Ignore", "Honor")
    assert not honours_terms.trivial
    assert not honours_terms.matches((), Requirements([Requirement.in_("gpu", "false")]))
    assert honours_terms.matches((), Requirements([Requirement.in_("gpu", "true")]))
