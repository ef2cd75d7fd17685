"""The decimals a protected value is released with (issue 34: "integer-valued keys never receive
fractional values"; a continuous key carries no more precision than the protection leaves meaningful):
the decimals it is published with (mu-Argus's <DECIMALS>), never more than the second significant
digit of the protection's change (JCGM 100:2008, GUM 7.2.6)."""

from pathlib import Path

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from sdc_dagster.numerics.decimals import (MAX_RELEASED_DECIMALS, meaningful_decimals, original_decimals,
                                           released_decimals)
from sdc_dagster.protect.microaggregation import microaggregation
from sdc_dagster.protect.noise import add_noise
from sdc_dagster.protect.plan import apply_plan

DATA = Path(__file__).parent / "data" / "decimals"


def test_meaningful_decimals_by_hand():
    # changes +0.5 and -0.5 (the 2.0 unchanged): u = 0.5, second significant digit at 10^-2
    assert meaningful_decimals(np.array([1.0, 2.0, 3.0]), np.array([1.5, 2.0, 2.5])) == 2
    # changes 30 and -40: u = sqrt((900 + 1600) / 2) = 35.36; its second significant digit is the units
    assert meaningful_decimals(np.array([100.0, 200.0]), np.array([130.0, 160.0])) == 0
    # u = 354: the tens would be its second digit, but a rounding back never goes coarser than units
    assert meaningful_decimals(np.array([1000.0, 2000.0]), np.array([1300.0, 1600.0])) == 0
    # nothing changed (a missing value is no change; 1e-16 relative is a float's error, not a change)
    assert meaningful_decimals(np.array([1.0, np.nan, 0.1 + 0.2]), np.array([1.0, 5.0, 0.3])) is None


def test_released_decimals_are_the_coded_ones_else_the_fewer_of_the_recorded_and_the_meaningful():
    before = np.array([1.25, 2.5, 3.75])  # coded with 2 decimals: kept, whatever the change
    assert released_decimals(before, before + 0.001) == 2
    assert released_decimals(before, before + np.array([200.0, -200.0, 0.0])) == 2
    measured = np.array([0.1234567, 2.0, 3.5])  # recorded with 7 decimals
    assert released_decimals(measured, measured + np.array([2.0, -2.0, 0.0])) == 1  # u = 2 -> 1 decimal
    assert released_decimals(measured, measured + np.array([2e-6, 0.0, 0.0])) == 7  # u = 2e-6 -> 7 of 7
    assert released_decimals(measured, measured) == 7  # unchanged: as recorded
    assert released_decimals(np.array([np.pi]), np.array([np.pi])) == 11  # 12 significant digits (1e-12)
    tiny = np.array([np.pi * 1e-6])  # 3.14159265359e-06 needs 17 decimals: more than RECORDED_DECIMALS
    assert released_decimals(tiny, tiny) is None
    assert original_decimals(np.array([0.1234567])) is None  # more than a coded precision (4) ...
    assert original_decimals(np.array([0.1234567]), 15) == 7  # ... but recorded with 7


def test_log_income_and_age_in_years_and_months_are_not_released_at_full_precision():
    """Issue 34's open defect: Ecdat's Participation (log non-labour income, 6 decimals) and AER's
    CreditCard (age in years and months, 37.66667: up to 7 decimals) were released as MDAV group means
    at full precision (10.718007666666665). From the first 60 records: the MDAV (k = 3) changes of the
    log income have u = 0.0637 (second significant digit: 10^-3), those of the age u = 0.640 (10^-2)."""
    income = pd.read_csv(DATA / "participation_lnnlinc.csv")
    age = pd.read_csv(DATA / "creditcard_age_income.csv")
    assert original_decimals(income["lnnlinc"].to_numpy(), 15) == 6
    assert original_decimals(age["age"].to_numpy(), 15) == 5
    for data, column, decimals in ((income, "lnnlinc", 3), (age, "age", 2)):
        result = apply_plan(data, [{"method": "microaggregation", "columns": [column], "k": 3}], keys=[])
        assert result.steps[0]["rounded_to_decimals"] == {column: decimals}
        released = result.data[column].to_numpy()
        assert (np.round(released, decimals) == released).all()
        means = microaggregation(data, [column], k=3)[column].to_numpy()  # the method's own group means
        np.testing.assert_array_equal(released, np.round(means, decimals))
    assert result.data["age"].iloc[0] == 37.47  # the group mean 37.47222333333334


@settings(max_examples=60, deadline=None)
@given(values=st.lists(st.integers(-10**6, 10**6), min_size=6, max_size=40, unique=True),
       decimals=st.integers(0, 7), amount=st.floats(0.5, 200), seed=st.integers(0, 2**31))
def test_noise_is_released_at_no_more_decimals_than_published_or_meaningful(values, decimals, amount, seed):
    """Invariant over noise of every size on values published with 0 to 7 decimals: the released
    values are the noisy values rounded to d decimals; d is the published decimals when at most 4
    (a coded precision); beyond, d is at most the published decimals and, below them, keeps the second
    significant digit of the noise's change u and no more: u/100 < 10^-d <= u/10 (GUM 7.2.6), whole
    units (d = 0) being the coarsest."""
    before = np.array(values, dtype=float) / 10.0**decimals
    published = original_decimals(before, 15)
    frame = pd.DataFrame({"x": before})
    result = apply_plan(frame, [{"method": "noise", "columns": ["x"], "amount": amount}], keys=[],
                        random_state=seed)
    step = result.steps[0]
    noisy = add_noise(frame, columns=["x"], amount=amount, random_state=step["random_state"])["x"].to_numpy()
    released = result.data["x"].to_numpy(dtype=float)
    used = 0 if "rounded_to_whole_numbers" in step else step["rounded_to_decimals"]["x"]
    assert used == published if published <= MAX_RELEASED_DECIMALS else used <= published
    np.testing.assert_array_equal(released, np.round(noisy, used))
    change = noisy - before
    u = float(np.sqrt(np.mean(np.square(change[~np.isclose(noisy, before, rtol=1e-12, atol=0)]))))
    if used < published:  # bound by the change: its second significant digit is the last decimal ...
        assert 10.0**-used <= u / 10
        if used > 0:  # ... unless that lies in the tens or coarser (whole units are the coarsest)
            assert u / 100 < 10.0**-used
