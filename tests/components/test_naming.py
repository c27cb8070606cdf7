"""Physical names derived from the cluster name stay within AWS limits and stay distinct."""

import pytest

from components.naming import scoped, shorten

LONG_A = "a" * 90 + "-cluster-1"
LONG_B = "a" * 90 + "-cluster-2"


def test_shorten_keeps_a_name_that_fits_verbatim():
    assert shorten("acme-dev", 64) == "acme-dev"
    assert shorten("x" * 64, 64) == "x" * 64


def test_shorten_cuts_a_long_name_to_the_limit_with_a_stable_hash():
    short = shorten(LONG_A, 64)
    assert len(short) == 64
    assert short.startswith("a" * 55 + "-")
    assert short == shorten(LONG_A, 64)  # the same cluster always gets the same name


def test_shorten_keeps_names_sharing_a_long_prefix_distinct():
    assert shorten(LONG_A, 64) != shorten(LONG_B, 64)


def test_shorten_refuses_a_room_too_small_for_head_and_hash():
    with pytest.raises(ValueError, match="no room"):
        shorten(LONG_A, 9)


def test_scoped_shortens_only_the_cluster_part():
    name = scoped(LONG_A, 64, prefix="KarpenterNodeRole-")
    assert len(name) == 64
    assert name.startswith("KarpenterNodeRole-aaaa")
    assert scoped(LONG_A, 64, suffix="-spot-interruption").endswith("-spot-interruption")
    assert scoped("acme-dev", 64, suffix="-karpenter") == "acme-dev-karpenter"
