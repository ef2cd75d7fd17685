"""Issue 38: results kept for inputs met again in one process (sdc_dagster.numerics.kept), and the
computations that use them: the combined risk's set-up of a variant (asked for by the residual risk
and the residual contributions) and the wave file ``sdc run`` reads before landing it (read again by
the ingest stage). A kept result is found only for equal content, and equals a fresh computation."""

import hashlib
import threading

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdc_dagster.numerics.kept import KeptResults, content_digest
from sdc_dagster.risk import combined
from sdc_dagster.spec import parse_spec
from sdc_dagster.spec import sources
from sdc_dagster.spec.schemas import SchemaViolation


def test_equal_content_has_one_digest_whatever_holds_it():
    frame = pd.DataFrame({"a": [1.0, 2.0, np.nan], "b": pd.array([1, None, 3], dtype="Int64"),
                          "c": ["x", None, "z"], "d": pd.Categorical(["u", "v", "u"])}, index=[7, 8, 9])
    copy = frame.copy().reset_index(drop=True)  # another object, another index: the same values
    assert content_digest(frame) == content_digest(copy)
    assert content_digest(*(frame[c] for c in frame)) == content_digest(*(copy[c] for c in copy))


def test_the_digest_is_sha256_cut_to_128_bits():
    """The digest of bytes is SHA-256 (FIPS 180-4) of the part's type name, its bytes and the
    separator, its first 32 hex digits; the published test vector of "abc" checks hashlib's."""
    assert hashlib.sha256(b"abc").hexdigest() == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert content_digest(b"abc") == hashlib.sha256(b"bytesabc|").hexdigest()[:32]
    assert len(content_digest(np.arange(3))) == 32


@pytest.mark.parametrize("change", [
    lambda f: f.assign(a=[1.0, 2.0, 3.0]),                                       # a missing value filled
    lambda f: f.assign(b=pd.array([1, 2, 3], dtype="Int64")),                    # a masked value filled
    lambda f: f.assign(b=pd.array([1, None, 4], dtype="Int64")),                 # one number
    lambda f: f.assign(c=["x", None, "y"]),                                      # one text
    lambda f: f.assign(c=["x", None, 1]),                                        # a text and a number
    lambda f: f.assign(d=pd.Categorical(["u", "v", "u"], categories=["v", "u"])),  # the codes' categories
    lambda f: f.assign(a=f["a"].astype("float32")),                              # the dtype
    lambda f: f.rename(columns={"a": "e"}),                                      # a name
    lambda f: f[["b", "a", "c", "d"]],                                           # the order of the columns
])
def test_any_change_of_a_value_dtype_or_name_changes_the_digest(change):
    frame = pd.DataFrame({"a": [1.0, 2.0, np.nan], "b": pd.array([1, None, 3], dtype="Int64"),
                          "c": ["x", None, "z"], "d": pd.Categorical(["u", "v", "u"])})
    assert content_digest(change(frame)) != content_digest(frame)


@settings(max_examples=60, deadline=None)
@given(a=st.lists(st.floats(allow_nan=True, allow_infinity=False, width=64), min_size=1, max_size=30),
       b=st.lists(st.floats(allow_nan=True, allow_infinity=False, width=64), min_size=1, max_size=30))
def test_digests_are_equal_exactly_when_the_bytes_are(a, b):
    """Invariant: two float columns share a digest iff their values are equal bit for bit (NaN equal
    to NaN, 0.0 apart from -0.0: a miss costs a computation, a false hit would give a wrong result)."""
    x, y = np.array(a), np.array(b)
    same = x.shape == y.shape and x.tobytes() == y.tobytes()
    assert (content_digest(pd.Series(x, name="v")) == content_digest(pd.Series(y, name="v"))) == same


def test_kept_results_keep_the_last_few_and_compute_the_others():
    kept, made = KeptResults(2), []

    def make(value):
        return lambda: made.append(value) or value * 10

    assert [kept.get(key, make(key)) for key in (1, 2, 1, 3, 2)] == [10, 20, 10, 30, 20]
    # 1 was used after 2, so 2 was the least recently used when 3 came: 2 is computed again
    assert made == [1, 2, 3, 2]
    assert len(kept) == 2 and kept.values() == [30, 20]
    assert kept.take(3) == 30 and kept.take(3) is None and len(kept) == 1


def test_kept_results_are_shared_safely_between_threads():
    kept = KeptResults(8)
    results = []
    threads = [threading.Thread(target=lambda i=i: results.append(kept.get(i % 4, lambda: i % 4 * 2)))
               for i in range(40)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == sorted(i % 4 * 2 for i in range(40)) and len(kept) == 4


def _wave(n=60, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"sex": rng.integers(1, 3, n), "region": pd.array(rng.integers(1, 4, n), dtype="Float64"),
                         "income": np.round(rng.gamma(2.0, 500.0, n), 2), "savings": np.round(rng.gamma(1.0, 50.0, n)),
                         "w": rng.uniform(5, 15, n)})


def _setup_figures(setup):
    return (setup.key_frequency.tolist(), setup.key_weight.tolist(), setup.unsafe_continuous.tolist(),
            setup.keys.record_key.tolist())


def test_a_variant_set_up_twice_is_set_up_once_with_the_figures_of_a_fresh_one():
    data = _wave()
    data.loc[[3, 4], "region"] = pd.NA  # suppressed values: SPEC §5.8's wildcards
    combined._SETUPS.clear()
    args = (["sex", "region"], ["income", "savings"], {"income": 0.05, "savings": 0.1})
    first = combined.prepare_combined(data, *args, k=3, weight="w")
    again = combined.prepare_combined(data.copy(), *args, k=3, weight="w")  # another copy of the variant
    assert again is first
    combined._SETUPS.clear()
    fresh = combined.prepare_combined(data, *args, k=3, weight="w")
    assert fresh is not first and _setup_figures(fresh) == _setup_figures(first)


@pytest.mark.parametrize("change", [
    lambda d: d.assign(income=d["income"].where(d.index != 5, d["income"] + 0.01)),  # one amount
    lambda d: d.assign(region=d["region"].where(d.index != 5, pd.NA)),                # one suppression
    lambda d: d.assign(w=d["w"] * 2),                                                 # the weights
])
def test_a_variant_that_differs_in_one_value_gets_its_own_set_up(change):
    data = _wave(seed=1)
    combined._SETUPS.clear()
    args = (["sex", "region"], ["income", "savings"], 0.05)
    first = combined.prepare_combined(data, *args, k=3, weight="w")
    other = combined.prepare_combined(change(data), *args, k=3, weight="w")
    assert other is not first
    combined._SETUPS.clear()
    assert _setup_figures(other) == _setup_figures(combined.prepare_combined(change(data), *args, k=3, weight="w"))


def test_the_arguments_are_part_of_the_key():
    data = _wave(seed=2)
    combined._SETUPS.clear()
    base = combined.prepare_combined(data, ["sex", "region"], ["income"], 0.05, k=3)
    assert combined.prepare_combined(data, ["sex", "region"], ["income"], 0.05, k=2) is not base
    assert combined.prepare_combined(data, ["sex", "region"], ["income"], 0.1, k=3) is not base
    assert combined.prepare_combined(data, ["region", "sex"], ["income"], 0.05, k=3) is not base
    assert combined.prepare_combined(data, ["sex", "region"], ["income"], 0.05, k=3, weight="w") is not base


SPEC = parse_spec({
    "survey": "kept",
    "missing": [-999],
    "variables": {"sex": {"role": "categorical_key", "categories": [1, 2]}, "region": {"role": "categorical_key"},
                  "income": {"role": "continuous_key", "precision": 0.05}, "w": {"role": "weight"}},
})


def test_the_wave_read_before_landing_is_taken_by_the_next_read_of_the_same_content(tmp_path, monkeypatch):
    wave = _wave()[["sex", "region", "income", "w"]]
    wave.loc[2, "income"] = -999  # a missing code: NA once read
    given, landed = tmp_path / "given.csv", tmp_path / "landing" / "2024.csv"
    wave.to_csv(given, index=False)
    landed.parent.mkdir()
    landed.write_bytes(given.read_bytes())
    sources._LANDED.clear()
    first = sources.read_wave_file(SPEC, given, keep=True)
    assert len(sources._LANDED) == 1
    reads = []
    monkeypatch.setattr(sources, "read_with_metadata", lambda *a, **k: reads.append(a) or None)
    assert sources.read_wave_file(SPEC, landed) is first  # not read again
    assert reads == [] and len(sources._LANDED) == 0  # and no longer kept
    monkeypatch.undo()
    fresh = sources.read_wave_file(SPEC, landed)
    pd.testing.assert_frame_equal(fresh, first)
    assert pd.isna(fresh.loc[2, "income"])


def test_a_file_of_other_content_is_read_and_validated(tmp_path):
    wave = _wave()[["sex", "region", "income", "w"]]
    given, other = tmp_path / "given.csv", tmp_path / "other.csv"
    wave.to_csv(given, index=False)
    wave.assign(sex=7).to_csv(other, index=False)  # a category the spec does not know
    sources._LANDED.clear()
    sources.read_wave_file(SPEC, given, keep=True)
    with pytest.raises(SchemaViolation, match="sex"):
        sources.read_wave_file(SPEC, other)
    sources._LANDED.clear()


def test_a_text_and_the_number_it_spells_digest_apart():
    assert content_digest(pd.Series(["x", None, "1"])) != content_digest(pd.Series(["x", None, 1]))
    assert content_digest(pd.Series(["x", None, "1"])) == content_digest(pd.Series(["x", None, "1"]).copy())
