"""Pieces of coevo.recipes.vgopd.casa.consequences by hand: the chi-square of homogeneity, the format
and length strata of the first challenge's heterogeneity tests."""
import math

import pytest

from coevo.recipes.vgopd.casa.consequences import chi2_homogeneity, length_bin, part_format


def test_chi2_homogeneity_by_hand():
    # [[10, 90], [30, 70]]: chi2 = N (ad - bc)^2 / (r1 r2 c1 c2) = 200 * 2000^2 / (100 * 100 * 40 * 160) = 12.5
    t = chi2_homogeneity({"a": (10, 100), "b": (30, 100)})
    assert t["chi2"] == pytest.approx(12.5) and t["df"] == 1
    assert t["p"] == pytest.approx(math.erfc(math.sqrt(12.5 / 2)))  # chi2(1) survival = erfc(sqrt(x / 2))
    assert chi2_homogeneity({"a": (5, 50), "b": (5, 50)})["chi2"] == pytest.approx(0.0)
    assert math.isnan(chi2_homogeneity({"a": (0, 50), "b": (0, 40)})["p"])  # no event
    assert math.isnan(chi2_homogeneity({"a": (3, 50), "b": (0, 0)})["p"])  # one stratum with checks


def test_strata():
    assert part_format("56 h") == part_format("56min") == "time unit"
    assert part_format("56 km") == part_format("5600cm") == "length unit"
    assert part_format("7*8") == part_format("") == part_format(None) == "other"
    assert length_bin(30, 40) == "short (< 0.95 ref)"
    assert length_bin(40, 40) == "as long as the reference"
    assert length_bin(43, 40) == "long (> 1.05 ref)"
