"""The table spec (sdc_dagster/spec/tables.py): its keys, every problem named by key and YAML line, and
the hierarchies it describes as the parent/child frames tables.tabulate takes."""

from pathlib import Path

import pandas as pd
import pytest
import yaml

from sdc_dagster.errors import SDCInputError
from sdc_dagster.spec import SpecError
from sdc_dagster.spec.tables import dimension_hierarchy, load_table_spec, parse_table_spec

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "tables"


def _pairs(frame: pd.DataFrame) -> set[tuple[str, str]]:
    return set(zip(frame["parent"], frame["child"]))


def _spec(tmp_path, text: str, name: str = "t.yaml") -> Path:
    (tmp_path / "data.csv").write_text("geo,sector,value,company\nA,x,1,c\n")
    path = tmp_path / name
    path.write_text(text)
    return path


BASE = """\
tables: demo
source: {file: data.csv}
dimensions:
  geo: {}
  sector: {}
published:
  turnover:
    dimensions: [geo, sector]
    value: value
    holding: company
    rules: [{rule: nk, n: 1, k: 85}, {rule: p, p: 10}]
"""


def test_the_demo_specs_load_with_their_tables_and_links():
    business = load_table_spec(EXAMPLES / "business_tables.yaml")
    assert business.name == "business_tables" and business.source.file == EXAMPLES / "data" / "business.csv"
    table = business.published["turnover"]
    assert table.dimensions == ("sector4", "geo") and table.value == "value" and table.holding == "company"
    assert [r["rule"] for r in table.rules] == ["nk", "p"] and table.dominance_tie == "strict"
    assert business.dimensions["sector4"].columns == ("sector2",)
    survey = load_table_spec(EXAMPLES / "testdata_tables.yaml")
    assert survey.source.survey == "testdata"
    # both tables publish the weighted count: one linked group, protected jointly
    assert survey.linked() == [["water_by_area", "relat_by_area"]]


def test_tables_of_different_measures_are_not_linked(tmp_path):
    text = BASE + """\
  counts:
    dimensions: [geo]
    rules: [{rule: freq, n: 3}]
"""
    spec = load_table_spec(_spec(tmp_path, text))
    assert spec.linked() == [["turnover"], ["counts"]]
    assert spec.method == "optimal" and spec.cost == "value" and spec.formats == ("csv",)


def test_every_problem_is_named_with_its_key_and_line(tmp_path):
    text = BASE.replace("  sector: {}", "  sector: {hierarchy: {levels: [1]}}").replace(
        "{rule: p, p: 10}", "{rule: p, p: -1}") + "protection: {method: fastest}\n"
    with pytest.raises(SpecError) as caught:
        load_table_spec(_spec(tmp_path, text))
    messages = [str(e) for e in caught.value.errors]
    assert messages[0].startswith("t.yaml:5: dimensions.sector.hierarchy.levels: expected one of")
    assert messages[1].startswith("t.yaml:11: published.turnover.rules[1] (p): 'p': must be")
    assert messages[2].startswith("t.yaml:12: protection.method: must be one of 'optimal', 'gauss'")


def test_a_table_over_an_undeclared_dimension_and_two_sources_are_refused(tmp_path):
    text = BASE.replace("source: {file: data.csv}", "source: {file: data.csv, survey: testdata}").replace(
        "dimensions: [geo, sector]", "dimensions: [geo, region]")
    with pytest.raises(SpecError) as caught:
        load_table_spec(_spec(tmp_path, text))
    messages = " | ".join(str(e) for e in caught.value.errors)
    assert "t.yaml:2: source: expected exactly one of 'survey'" in messages
    assert "published.turnover.dimensions[1]: expected a dimension of the spec's 'dimensions' (geo, sector), " \
           "got 'region'" in messages


def test_holding_is_refused_for_aggregated_counts():
    raw = yaml.safe_load(BASE.replace("source: {file: data.csv}", "source: {survey: testdata}")
                         .replace("value: value", "freq: n"))
    with pytest.raises(SpecError, match=r"published.turnover.freq: expected no holding or request"):
        parse_table_spec(raw)


def test_parent_child_hierarchy_keeps_the_spec_codes_as_text():
    raw = yaml.safe_load(BASE.replace("source: {file: data.csv}", "source: {survey: s}").replace(
        "  geo: {}", "  geo: {hierarchy: {parents: {Total: [north, 3], north: [1, 2]}}}"))
    frame = dimension_hierarchy(parse_table_spec(raw).dimensions["geo"], pd.DataFrame())
    assert _pairs(frame) == {("Total", "north"), ("Total", "3"), ("north", "1"), ("north", "2")}


def test_nested_columns_give_each_code_its_coarser_code():
    raw = yaml.safe_load(BASE.replace("source: {file: data.csv}", "source: {survey: s}").replace(
        "  geo: {}", "  geo: {hierarchy: {columns: [country]}}"))
    dimension = parse_table_spec(raw).dimensions["geo"]
    data = pd.DataFrame({"country": ["PT", "PT", "ES", "ES"], "geo": ["Lisboa", "Porto", "Madrid", "Lisboa"]})
    # Lisboa in two countries: a code must have one parent
    with pytest.raises(SDCInputError, match=r"dimension 'geo': .*'Lisboa'"):
        dimension_hierarchy(dimension, data)
    frame = dimension_hierarchy(dimension, data.iloc[:3])
    assert _pairs(frame) == {("Total", "PT"), ("Total", "ES"), ("PT", "Lisboa"), ("PT", "Porto"), ("ES", "Madrid")}


def test_code_prefixes_make_the_levels():
    raw = yaml.safe_load(BASE.replace("source: {file: data.csv}", "source: {survey: s}").replace(
        "  geo: {}", "  geo: {hierarchy: {prefixes: [1, 2, 3]}}"))
    dimension = parse_table_spec(raw).dimensions["geo"]
    assert dimension.prefixes == (1, 2, 3)
    data = pd.DataFrame({"geo": [111, 112, 121, 211]})
    # 111, 112 below 11; 121 below 12; 11, 12 below 1; 211 below 21 below 2
    assert _pairs(dimension_hierarchy(dimension, data)) == {
        ("Total", "1"), ("Total", "2"), ("1", "11"), ("1", "12"), ("2", "21"), ("11", "111"), ("11", "112"),
        ("12", "121"), ("21", "211")}
    # a code of no level's length is named
    with pytest.raises(SDCInputError, match=r"dimension 'geo': codes: '1111' has 4 characters"):
        dimension_hierarchy(dimension, pd.DataFrame({"geo": [111, 1111]}))


def test_prefix_lengths_must_increase():
    raw = yaml.safe_load(BASE.replace("source: {file: data.csv}", "source: {survey: s}").replace(
        "  geo: {}", "  geo: {hierarchy: {prefixes: [2, 1]}}"))
    with pytest.raises(SpecError, match=r"dimensions.geo.hierarchy.prefixes: expected increasing positive code lengths"):
        parse_table_spec(raw)


def test_an_hrc_file_is_read_below_the_total(tmp_path):
    (tmp_path / "geo.hrc").write_text("north\n@1\n@2\nsouth\n@3\n@@31\n@@32\n")
    text = BASE.replace("  geo: {}", "  geo: {hierarchy: {file: geo.hrc}}")
    spec = load_table_spec(_spec(tmp_path, text))
    frame = dimension_hierarchy(spec.dimensions["geo"], pd.DataFrame())
    assert _pairs(frame) == {("Total", "north"), ("Total", "south"), ("north", "1"), ("north", "2"),
                             ("south", "3"), ("3", "31"), ("3", "32")}


def test_a_missing_hrc_file_is_named(tmp_path):
    text = BASE.replace("  geo: {}", "  geo: {hierarchy: {file: nowhere.hrc}}")
    with pytest.raises(SpecError, match=r"t.yaml:4: dimensions.geo.hierarchy.file: expected an existing .hrc file"):
        load_table_spec(_spec(tmp_path, text))


def test_rounding_takes_its_parameters_and_names_every_misuse(tmp_path):
    counts = BASE.replace("    value: value\n    holding: company\n", "").replace(
        "[{rule: nk, n: 1, k: 85}, {rule: p, p: 10}]", "[{rule: freq, n: 3}]")
    spec = load_table_spec(_spec(tmp_path, counts + "protection: {method: rounding, round_base: 5, seed: 7}\n"))
    assert spec.method == "rounding"
    # SmallCountRounding's defaults for what is not given (max_round: round_base - 1 in the rounding)
    assert spec.rounding == {"round_base": 5, "max_round": None, "zero_candidates": False, "identify_new": True,
                             "random_state": 7}
    text = BASE + "protection: {method: rounding, round_base: 1, max_round: 4, seed: -1, cost: count}\n"
    with pytest.raises(SpecError) as caught:
        load_table_spec(_spec(tmp_path, text))
    messages = [str(e) for e in caught.value.errors]
    assert any(m.startswith("t.yaml:12: protection.round_base: must be an integer") for m in messages)
    assert any(m.startswith("t.yaml:12: protection.seed: must be an integer") for m in messages)
    assert any("published.turnover: expected a frequency table of unweighted counts with method: rounding" in m
               for m in messages)
    assert any("protection.cost: expected only with a suppression method" in m for m in messages)
    with pytest.raises(SpecError, match=r"protection.round_base: expected only with method: rounding"):
        load_table_spec(_spec(tmp_path, BASE + "protection: {method: optimal, round_base: 3}\n"))
    frozen = counts.replace("rules: [{rule: freq, n: 3}]", "rules: [{rule: freq, n: 3}]\n    frozen: {published: [{geo: A, sector: x}]}")
    with pytest.raises(SpecError, match=r"published.turnover.frozen: expected no frozen cells with method: rounding"):
        load_table_spec(_spec(tmp_path, frozen + "protection: {method: rounding}\n"))
    with pytest.raises(SpecError, match=r"protection.max_round: must be an integer in \[0, 2\]"):
        load_table_spec(_spec(tmp_path, counts + "protection: {method: rounding, max_round: 3}\n"))


def test_cell_key_takes_the_grid_p_table_and_the_magnitude_parameters(tmp_path):
    text = BASE + ("protection:\n  method: cell_key\n  cell_key: {max_deviation: 3, variance: 2, threshold: 1, seed: 9}\n"
                   "  delta: 0.2\n  top_k: 2\n  epsilon: [1, 0.5]\nrelease: {formats: [csv, xlsx]}\n")
    spec = load_table_spec(_spec(tmp_path, text))
    assert spec.method == "cell_key"
    assert spec.cell_key == {"max_deviation": 3, "variance": 2.0, "threshold": 1, "seed": 9, "delta": 0.2,
                             "top_k": 2, "epsilon": [1.0, 0.5]}
    # the grid spec's defaults (SPEC §8.11: D 2, V 1.05, js 1, seed 2021) and cellKey's (delta 0.1, top_k 1)
    default = load_table_spec(_spec(tmp_path, BASE + "protection: {method: cell_key}\n"))
    assert default.cell_key == {"max_deviation": 2, "variance": 1.05, "threshold": 1, "seed": 2021, "delta": 0.1,
                                "top_k": 1, "epsilon": [1.0]}


def test_cell_key_names_every_misuse_by_its_key(tmp_path):
    text = BASE + ("    weight: value\nprotection:\n  method: cell_key\n  cell_key: {variance: high}\n"
                   "  delta: 2\n  top_k: 7\n  cost: count\nrelease: {formats: [tau_argus]}\n")
    with pytest.raises(SpecError) as caught:
        load_table_spec(_spec(tmp_path, text))
    messages = [str(e) for e in caught.value.errors]
    assert any("protection, key 'cell_key.variance': must be a number, got 'high'" in m for m in messages)
    assert any(m.startswith("t.yaml:16: protection.delta: must be a number in (0, 1]") for m in messages)
    assert any("protection.top_k: must be an integer in [1, 6]" in m for m in messages)
    assert any("protection.cost: expected only with a suppression method" in m for m in messages)
    assert any("published.turnover: expected an unweighted table with method: cell_key" in m for m in messages)
    assert any("release.formats[0]: expected csv or xlsx with method: cell_key" in m for m in messages)
    with pytest.raises(SpecError, match=r"protection, key 'cell_key': unknown parameter 'colour'"):
        load_table_spec(_spec(tmp_path, BASE + "protection: {method: cell_key, cell_key: {colour: red}}\n"))
    # the p-table's own rule: js below D
    with pytest.raises(SpecError, match=r"protection.cell_key: threshold \(js, below D = 2\): must be an integer"):
        load_table_spec(_spec(tmp_path, BASE + "protection: {method: cell_key, cell_key: {threshold: 2}}\n"))
    # epsilon: one weight per top contribution, from 1 down (cellKey)
    with pytest.raises(SpecError, match=r"protection.epsilon: must start at 1 and decrease"):
        load_table_spec(_spec(tmp_path, BASE + "protection: {method: cell_key, top_k: 2, epsilon: [1, 2]}\n"))
    with pytest.raises(SpecError, match=r"protection.epsilon: needs one weight per top contribution \(2\), got 1"):
        load_table_spec(_spec(tmp_path, BASE + "protection: {method: cell_key, top_k: 2}\n"))
    with pytest.raises(SpecError, match=r"protection.delta: expected only with method: cell_key"):
        load_table_spec(_spec(tmp_path, BASE + "protection: {method: optimal, delta: 0.1}\n"))
    frozen = BASE.replace("p: 10}]", "p: 10}]\n    frozen: {published: [{geo: A, sector: x}]}")
    with pytest.raises(SpecError, match=r"published.turnover.frozen: expected no frozen cells with method: cell_key"):
        load_table_spec(_spec(tmp_path, frozen + "protection: {method: cell_key}\n"))


def test_workers_is_a_hitas_key_of_whole_processes(tmp_path):
    """``protection.workers``: the processes of method hitas (default DEFAULT_WORKERS), refused with
    another method and when not a whole number >= 1, each problem named by its key."""
    from sdc_dagster.spec.tables import DEFAULT_WORKERS

    assert load_table_spec(_spec(tmp_path, BASE + "protection: {method: hitas, workers: 2}\n")).workers == 2
    assert load_table_spec(_spec(tmp_path, BASE + "protection: {method: hitas}\n")).workers == DEFAULT_WORKERS
    with pytest.raises(SpecError, match=r"t.yaml:12: protection.workers: expected only with method: hitas"):
        load_table_spec(_spec(tmp_path, BASE + "protection: {method: gauss, workers: 2}\n"))
    for bad in ("0", "1.5", "true"):
        with pytest.raises(SpecError, match=r"protection.workers: must be an integer >= 1"):
            load_table_spec(_spec(tmp_path, BASE + f"protection: {{method: hitas, workers: {bad}}}\n"))


def test_tau_argus_input_is_read_with_the_measures_its_rda_declares(tmp_path):
    """A .tab line is an inner cell: a table of tau-Argus input must read the .rda's <FREQUENCY> count
    (and its <NUMERIC> value). Found with EIA's utilities written as tau-Argus input: the spec with
    ``value:`` alone took each line as one contributor holding 100 % of its cell, and 208 of 280
    cells were primaries where the microdata gave 119."""
    (tmp_path / "t.rda").write_text('<SEPARATOR> ","\r\ngeo\r\n  <RECODEABLE>\r\n  <TOTCODE> "Total"\r\n'
                                    "value\r\n  <NUMERIC>\r\nfreq\r\n  <FREQUENCY>\r\n")
    (tmp_path / "t.tab").write_text("A,100,3\r\nB,50,2\r\n")
    head = "tables: argus\nsource: {tau_argus: t.rda}\ndimensions: {geo: {}}\npublished:\n  t: {dimensions: [geo], "
    rules = "rules: [{rule: nk, n: 1, k: 85}]}\n"
    (tmp_path / "ok.yaml").write_text(head + "value: value, freq: freq, " + rules)
    assert load_table_spec(tmp_path / "ok.yaml").published["t"].freq == "freq"
    for given, message in (
            ("value: value, ", "published.t.freq: expected freq: freq (tau-Argus input is one line per inner cell: "
                               "its count is the column t.rda declares <FREQUENCY>), got None"),
            ("value: freq, freq: value, ", "published.t.freq: expected freq: freq"),
            ("freq: freq, ", "published.t.value: expected value: value (the <NUMERIC> column of t.rda), got None")):
        (tmp_path / "bad.yaml").write_text(head + given + rules)
        with pytest.raises(SpecError, match=rf"bad.yaml:5: {message}".replace("(", r"\(").replace(")", r"\)")):
            load_table_spec(tmp_path / "bad.yaml")
    # a frequency table (sdcTable's style: one <NUMERIC> count, no <FREQUENCY>) has no value
    (tmp_path / "f.rda").write_text('<SEPARATOR> ","\r\ngeo\r\n  <RECODEABLE>\r\n  <TOTCODE> "Total"\r\n'
                                    "n\r\n  <NUMERIC>\r\n")
    (tmp_path / "f.tab").write_text("A,3\r\nB,2\r\n")
    (tmp_path / "f.yaml").write_text(head.replace("t.rda", "f.rda") + "value: n, freq: n, rules: [{rule: freq, n: 2}]}\n")
    with pytest.raises(SpecError, match=r"published.t.value: expected no value \(f.rda declares no <FREQUENCY> "
                                        r"column: a frequency table\), got 'n'"):
        load_table_spec(tmp_path / "f.yaml")


def test_an_apriori_file_belongs_to_tau_argus_input_and_must_exist(tmp_path):
    with pytest.raises(SpecError, match=r"t.yaml:2: source.apriori: expected only with tau_argus"):
        load_table_spec(_spec(tmp_path, BASE.replace("{file: data.csv}", "{file: data.csv, apriori: a.hst}")))
    (tmp_path / "t.rda").write_text('<SEPARATOR> ","\r\ngeo\r\n  <RECODEABLE>\r\nn\r\n  <NUMERIC>\r\n')
    (tmp_path / "t.tab").write_text("A,3\r\n")
    text = ("tables: a\nsource: {tau_argus: t.rda, apriori: gone.hst}\ndimensions: {geo: {}}\npublished:\n"
            "  t: {dimensions: [geo], freq: n, rules: [{rule: freq, n: 2}]}\n")
    with pytest.raises(SpecError, match=r"source.apriori: expected an existing .hst file, .*gone.hst is not one"):
        load_table_spec(_spec(tmp_path, text, "a.yaml"))
