"""The spec's pandera schema of a raw wave, and its effect in the asset graph: a wave that breaks a rule
is rejected at raw_microdata and leaves nothing behind for its partition."""

import pickle

import numpy as np
import pandas as pd
import pytest
from dagster import AssetKey, instance_for_test, materialize
from hypothesis import given, settings
from hypothesis import strategies as st

from sdc_dagster.spec.schemas import SchemaViolation, microdata_schema, validate
from sdc_dagster.spec.sources import spec_column_order
from sdc_dagster.spec import parse_spec

SPEC = parse_spec(
    {
        "survey": "wave_rules",
        "missing": [-999],
        "variables": {
            "id": {"role": "record_id"},
            "sex": {"role": "categorical_key", "categories": [1, 2]},
            "region": {"role": "categorical_key"},
            "edu": {"role": "categorical_key", "scale": "ordinal", "order": ["low", "mid", "high"]},
            "w": {"role": "weight"},
        },
        "plans": {"k2": {"k": 2, "steps": [{"method": "local_suppression", "k": 2}]}},
    }
)


def wave(n=8) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "id": np.arange(1, n + 1),
            "sex": [1, 2] * (n // 2),
            "region": [1, 1, 2, 2] * (n // 4),
            "edu": ["low", "mid", "high", "mid"] * (n // 4),
            "w": np.full(n, 5.0),
        }
    )


def test_rules_of_a_raw_wave():
    assert validate(wave(), microdata_schema(SPEC)) is not None
    with pytest.raises(SchemaViolation, match=r"^wave: column 'region' breaks rule 'not entirely missing'$"):
        validate(wave().assign(region=np.nan), microdata_schema(SPEC), source="wave")
    with pytest.raises(SchemaViolation, match=r"column 'edu' breaks rule \"categories must be one of \['low', 'mid', 'high'\]\".*rows \(1-based\): 2; values: 'medium'"):
        validate(wave().assign(edu=["low", "medium"] + ["low"] * 6), microdata_schema(SPEC))
    # Listed categories may be absent; codes of a variable without categories may be new.
    validate(wave().assign(edu="low", sex=1, region=[7, 8] * 4), microdata_schema(SPEC))
    # A protected variant may have a key suppressed entirely.
    validate(wave().assign(region=np.nan), microdata_schema(SPEC, protected=True))


def test_every_broken_rule_is_one_problem_of_the_violation():
    bad = wave().assign(region=np.nan, edu=["low", "medium"] + ["low"] * 6).drop(columns="w")
    with pytest.raises(SchemaViolation) as err:
        validate(bad, microdata_schema(SPEC), source="wave")
    assert sorted(err.value.problems) == sorted([
        "column 'w' named in the spec is missing from the data",
        "column 'region' breaks rule 'not entirely missing'",
        "column 'edu' breaks rule \"categories must be one of ['low', 'mid', 'high']\"; first offending rows "
        "(1-based): 2; values: 'medium'",
    ])
    assert err.value.source == "wave" and str(err.value) == "wave: " + "; ".join(err.value.problems)
    # Picklable (e.g. across processes) with its problems.
    copy = pickle.loads(pickle.dumps(err.value))
    assert (type(copy), str(copy), copy.problems) == (SchemaViolation, str(err.value), err.value.problems)


def test_original_text_is_only_read_when_validation_fails():
    calls = []

    def text():
        calls.append(1)
        return wave().astype(str).assign(w=["5", "n/a"] + ["5"] * 6)

    validate(wave(), microdata_schema(SPEC), original_text=text)
    assert calls == []
    with pytest.raises(SchemaViolation, match=r"column 'w' breaks rule 'not_nullable'; first offending rows \(1-based\): 2; values: nan \(file text 'n/a'\)"):
        validate(wave().assign(w=[5.0, np.nan] + [5.0] * 6), microdata_schema(SPEC), original_text=text)
    assert calls == [1]


@settings(max_examples=40, deadline=None)
@given(order=st.permutations(["id", "sex", "region", "edu", "w", "note", "extra"]))
def test_column_order_does_not_depend_on_the_delivery(order):
    frame = wave().assign(note="x", extra=1)
    delivered = frame[order]
    before = delivered.copy()
    ordered = spec_column_order(delivered, SPEC)
    pd.testing.assert_frame_equal(delivered, before)
    assert list(ordered.columns) == ["id", "sex", "region", "edu", "w", "extra", "note"]
    pd.testing.assert_frame_equal(ordered, frame[list(ordered.columns)])


@settings(max_examples=40, deadline=None)
@given(codes=st.lists(st.sampled_from([1, 2, 3, 9]), min_size=8, max_size=8))
def test_categories_rule_flags_exactly_the_unlisted_codes(codes):
    frame = wave().assign(sex=codes)
    bad = [i + 1 for i, c in enumerate(codes) if c not in (1, 2)]
    if not bad:
        validate(frame, microdata_schema(SPEC))
        return
    with pytest.raises(SchemaViolation) as err:
        validate(frame, microdata_schema(SPEC), max_rows=8)
    assert f"first offending rows (1-based): {', '.join(map(str, bad))};" in str(err.value)


# --- In the asset graph -----------------------------------------------------------------------------------


def _materialize(home, monkeypatch, frame, wave_name, *, only_raw=False):
    from sdc_dagster.assets.survey import build_survey_assets
    from sdc_dagster.resources import configured_resources

    monkeypatch.setenv("SDC_HOME", str(home))
    folder = home / "landing" / SPEC.survey
    folder.mkdir(parents=True, exist_ok=True)
    frame.to_csv(folder / f"{wave_name}.csv", index=False)
    with instance_for_test() as instance:
        instance.add_dynamic_partitions(f"{SPEC.survey}_waves", [wave_name])
        return materialize(
            build_survey_assets(SPEC).assets,
            partition_key=wave_name,
            selection=[AssetKey([SPEC.survey, "raw_microdata"])] if only_raw else None,
            instance=instance,
            resources=configured_resources(),
            raise_on_error=False,
        )


def _stored(home):
    return sorted(str(p.relative_to(home)) for p in home.rglob("*") if p.is_file() and "landing" not in p.parts)


@pytest.mark.slow
def test_wave_with_an_entirely_missing_key_fails_at_raw_microdata_and_stores_nothing(tmp_path, monkeypatch):
    home = tmp_path / "home"
    result = _materialize(home, monkeypatch, wave().assign(region=-999), "w1")
    assert not result.success
    failed = [e for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
    assert [e.step_key for e in failed] == ["wave_rules__raw_microdata"]
    assert "column 'region' breaks rule 'not entirely missing'" in failed[0].step_failure_data.error.cause.message
    assert result.get_asset_materialization_events() == []
    assert [p for p in _stored(home) if p != "sdc.duckdb"] == []


def test_valid_wave_is_stored_in_spec_column_order(tmp_path, monkeypatch):
    home = tmp_path / "home"
    delivered = wave().assign(note="x")[["w", "note", "edu", "region", "sex", "id"]]
    result = _materialize(home, monkeypatch, delivered, "w2", only_raw=True)
    assert result.success
    raw = pd.read_parquet(home / "storage" / SPEC.survey / "raw_microdata" / "w2.parquet")
    assert list(raw.columns) == ["id", "sex", "region", "edu", "w", "note"]
    materialization = result.asset_materializations_for_node("wave_rules__raw_microdata")[0]
    assert materialization.metadata["source_format"].value == "csv"


def test_a_valid_wave_is_checked_in_place_and_a_coercing_schema_gets_a_copy():
    """Issue 38: a schema that coerces nothing checks the wave itself (no copy of it) and leaves it as
    it was; one that coerces a dtype works on a copy, the caller's frame unchanged."""
    import pandera as pa

    data = wave()
    before = data.copy()
    assert validate(data, microdata_schema(SPEC)) is data
    pd.testing.assert_frame_equal(data, before)
    coercing = pa.DataFrameSchema({"w": pa.Column(int, coerce=True)}, strict=False)
    checked = validate(data, coercing)
    assert checked is not data and checked["w"].dtype == np.int64
    pd.testing.assert_frame_equal(data, before)
