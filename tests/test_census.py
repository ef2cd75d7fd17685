"""Synthetic census (SPEC §11.4 shape) and grid tabulation / cell ids (SPEC §11.1)."""

import numpy as np
import pandas as pd
import pytest

from sdc_dagster.synthetic.census import (
    SEED_CELLS,
    SEED_ONE_RESIDENT_CELLS,
    SEED_TWO_RESIDENT_CELLS,
    generate_cells,
    generate_census,
    write_census_by_region,
    write_census_parquet,
)
from sdc_dagster.errors import SDCInputError
from sdc_dagster.grid.counts import format_cell_id, parse_cell_id, tabulate_grid


def test_parse_cell_ids_short_and_long_forms():
    ids = pd.Series(["1kmN3120E5012", "CRS3035RES1000mN3120000E5012000", "100mN31205E50127"], index=[7, 8, 9])
    parsed = parse_cell_id(ids)
    assert parsed.index.tolist() == [7, 8, 9]
    assert parsed["northing_km"].tolist() == [3120.0, 3120.0, 3120.5]
    assert parsed["easting_km"].tolist() == [5012.0, 5012.0, 5012.7]
    assert parsed["resolution_m"].tolist() == [1000, 1000, 100]
    assert format_cell_id(np.array([3120]), np.array([5012])).tolist() == ["1kmN3120E5012"]
    with pytest.raises(SDCInputError, match="N3120x"):
        parse_cell_id(["N3120x"])


def test_cells_keep_the_seed_shares_of_small_cells():
    cells = generate_cells(37_019_327, random_state=1)
    assert len(cells) == SEED_CELLS
    assert cells["residents"].sum() == 37_019_327
    assert (cells["residents"] == 1).sum() == SEED_ONE_RESIDENT_CELLS
    assert (cells["residents"] == 2).sum() == SEED_TWO_RESIDENT_CELLS
    assert cells["cell_id"].is_unique


@pytest.fixture(scope="module")
def census():
    return generate_census(120_000, random_state=4, region_km=10)


def test_census_shape_and_codes(census):
    resident = census[census["resident"]]
    assert len(resident) == 120_000
    assert set(census["sex"].unique()) == {1, 2}
    assert set(census["age_group"].unique()) == {1, 2, 3}
    # households live in one cell; household sizes are realistic (mean about 2.6 residents)
    assert (census.groupby("household_id", observed=True)["cell_id"].nunique() == 1).all()
    sizes = resident.groupby("household_id").size()
    assert 2.0 < sizes.mean() < 3.2 and sizes.max() <= 6
    assert (resident["household_size"].to_numpy() == sizes.loc[resident["household_id"]].to_numpy()).all()
    assert census["region"].nunique() > 1
    assert census["person_id"].is_unique
    # both population flags differ from each other for a small share only
    assert 0 < (census["resident"] != census["national"]).mean() < 0.05


def test_census_is_reproducible():
    a = generate_census(5_000, random_state=9)
    b = generate_census(5_000, random_state=np.random.default_rng(9))
    pd.testing.assert_frame_equal(a, b)


def test_tabulate_grid_matches_a_pandas_crosstab(census, tmp_path):
    counts = tabulate_grid(census, where="resident", with_coordinates=True)
    resident = census[census["resident"]].astype({"cell_id": str})
    expected_total = resident.groupby("cell_id").size()
    assert counts["total"].tolist() == expected_total.loc[counts["cell_id"]].tolist()
    sex = pd.crosstab(resident["cell_id"], resident["sex"])
    age = pd.crosstab(resident["cell_id"], resident["age_group"])
    assert counts["sex_2"].tolist() == sex[2].loc[counts["cell_id"]].tolist()
    assert counts["age_3"].tolist() == age[3].loc[counts["cell_id"]].tolist()
    assert counts["cell_id"].is_monotonic_increasing
    assert (counts["sex_1"] + counts["sex_2"] == counts["total"]).all()
    assert (counts[["age_1", "age_2", "age_3"]].sum(axis=1) == counts["total"]).all()
    n_small = len(counts)
    assert (counts["total"] == 1).sum() == round(n_small * SEED_ONE_RESIDENT_CELLS / SEED_CELLS)
    assert counts["northing_km"].between(3000, 3100).all()
    # the same table from Parquet, through DuckDB
    path = write_census_parquet(tmp_path / "census.parquet", 120_000, random_state=4, region_km=10)
    from_parquet = tabulate_grid(path, where="resident")
    pd.testing.assert_frame_equal(from_parquet, counts.drop(columns=["northing_km", "easting_km"]))


def test_write_by_region(tmp_path):
    regions = write_census_by_region(tmp_path, 20_000, random_state=2, region_km=10)
    assert sorted(p.stem for p in tmp_path.glob("*.parquet")) == sorted(regions)
    parts = [pd.read_parquet(tmp_path / f"{r}.parquet") for r in regions]
    assert all(p["region"].astype(str).nunique() == 1 for p in parts)
    everything = pd.concat(parts)
    assert everything["resident"].sum() == 20_000
    assert everything["person_id"].is_unique


def test_tabulate_rejects_bad_codes():
    persons = pd.DataFrame({"cell_id": ["1kmN1E1", "1kmN1E1"], "sex": [1, 3], "age_group": [1, 2]})
    with pytest.raises(SDCInputError, match="'sex'"):
        tabulate_grid(persons)
    with pytest.raises(SDCInputError, match="age_group"):
        tabulate_grid(persons.assign(sex=1, age_group=[0, 1]))
    with pytest.raises(SDCInputError, match="cell"):
        tabulate_grid(persons.drop(columns="cell_id"))


def test_further_grid_variables_have_plausible_shares_inside_households(census):
    from sdc_dagster.synthetic.census import BIRTH_SHARES, EMPLOYMENT_RATE, RESIDENCE_SHARES_NATIVE

    resident = census[census["resident"]]
    assert set(census["employed"].unique()) == {0, 1}
    assert set(census["birth"].unique()) == {1, 2, 3}
    assert set(census["residence"].unique()) == {1, 2, 3}
    # nobody under 15 is employed; employment rates by age near the design rates (binomial error)
    rate = resident.groupby("age_group")["employed"].mean()
    assert rate[1] == 0.0
    assert abs(rate[2] - EMPLOYMENT_RATE[1]) < 0.01 and abs(rate[3] - EMPLOYMENT_RATE[2]) < 0.01
    # whole households move: one residence a year ago per household
    assert (census.groupby("household_id")["residence"].nunique() == 1).all()
    # adults of a household share the place of birth; children of foreign-born households are
    # partly born in the country
    adults = census[census["age_group"] > 1]
    assert (adults.groupby("household_id")["birth"].nunique() == 1).all()
    households = resident.drop_duplicates("household_id")
    adult_birth = adults.drop_duplicates("household_id").set_index("household_id")["birth"]
    share_native = (adult_birth == 1).mean()
    assert abs(share_native - BIRTH_SHARES[0]) < 0.01
    native_households = households[households["household_id"].map(adult_birth) == 1]
    moved_within = (native_households["residence"] == 2).mean()
    assert abs(moved_within - RESIDENCE_SHARES_NATIVE[1]) < 0.015
    # movers from abroad are far more frequent among households born abroad
    foreign = households[households["household_id"].map(adult_birth) > 1]
    assert (foreign["residence"] == 3).mean() > 5 * (native_households["residence"] == 3).mean()


def test_tabulate_grid_all_13_figures_match_pandas(census):
    counts = tabulate_grid(census, where="resident")
    assert list(counts.columns) == ["cell_id", "total", "sex_1", "sex_2", "age_1", "age_2", "age_3", "employed",
                                    "birth_1", "birth_2", "birth_3", "residence_1", "residence_2", "residence_3"]
    resident = census[census["resident"]].astype({"cell_id": str})
    cells = counts["cell_id"]
    employed = resident.groupby("cell_id")["employed"].sum()
    assert counts["employed"].tolist() == employed.loc[cells].tolist()
    for name in ("birth", "residence"):
        table = pd.crosstab(resident["cell_id"], resident[name]).reindex(columns=[1, 2, 3], fill_value=0)
        for code in (1, 2, 3):
            assert counts[f"{name}_{code}"].tolist() == table[code].loc[cells].tolist()
    # only the 2011 subset when asked
    small = tabulate_grid(census, variables=["sex", "age_group"])
    assert list(small.columns) == ["cell_id", "total", "sex_1", "sex_2", "age_1", "age_2", "age_3"]


def test_tabulate_grid_names_the_bad_variable():
    persons = pd.DataFrame({"cell_id": ["1kmN1E1"] * 2, "sex": [1, 2], "age_group": [1, 2], "birth": [1, 7]})
    with pytest.raises(SDCInputError, match="'birth'.*1, 2, 3"):
        tabulate_grid(persons)
    with pytest.raises(SDCInputError, match="'religion'"):
        tabulate_grid(persons, variables=["religion"])
