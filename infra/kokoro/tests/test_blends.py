"""Voice blends read as the gateway and Kokoro-FastAPI's users write them, and made from the packs."""

from __future__ import annotations

import numpy as np
import pytest

from kokoro_server import blends


def test_a_blend_is_read_in_either_writing_with_shares_that_sum_to_one() -> None:
    assert blends.parse("af_bella+af_sky") == [("af_bella", 0.5), ("af_sky", 0.5)]
    weighted = dict(blends.parse("af_bella(2)+af_sky(1)"))
    assert weighted == pytest.approx({"af_bella": 2 / 3, "af_sky": 1 / 3})
    # The gateway's canonical name reads back to the same shares.
    assert dict(blends.parse("af_bella(0.667)+af_sky(0.333)")) == pytest.approx({"af_bella": 0.667, "af_sky": 0.333})
    assert blends.parse("af_heart") is None


@pytest.mark.parametrize("written", ["a(0)+b", "a(-1)+b", "a(x)+b", "a+b+c+d+e", "+b", "a b+c", "a(1e9)+b"])
def test_what_is_not_a_blend_is_none(written: str) -> None:
    assert blends.parse(written) is None


def test_a_blend_is_the_weighted_mean_of_its_packs_and_is_kept() -> None:
    packs = {"a": np.zeros((3, 4), dtype=np.float32), "b": np.ones((3, 4), dtype=np.float32)}
    made = blends.Blends(packs)
    assert made.offers("a(3)+b(1)") and not made.offers("a+c")
    style = made.style("a(3)+b(1)")
    assert np.allclose(style, 0.25)
    assert made.style("a(3)+b(1)") is style, "kept for the next sentence"
    assert made.style("a") is packs["a"]
    with pytest.raises(KeyError):
        made.style("c")
