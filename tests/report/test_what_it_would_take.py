"""The report's section "What it would take" (issue 38): when the plan search recommends no plan, the
closest plans with the checks that bind, and the cheapest changes of target or scenario that make a
plan eligible (the record of sdc_dagster.pipeline.relaxations, written here by hand)."""

import dataclasses
import html
import re

from sdc_dagster.report import render_report, report_data

ADVICE = {
    "closest": [
        {"plan": "age: 5-year bands; local suppression to 5-anonymity", "loss": 0.0412, "distance": 2.44,
         "gaps": [{"check": "linkage_risk", "value": 0.688, "threshold": 0.2, "relative": 2.44, "variable": None,
                   "text": "linkage risk 68.8 % against 20 %"}]},
        {"plan": "the keys as they are", "loss": None, "distance": None,
         "gaps": [{"check": "no_direct_identifier", "value": "id", "threshold": None, "relative": None,
                   "variable": None, "text": "no_direct_identifier: rule (found: id)"}]},
    ],
    "relaxations": [
        {"change": "k = 3 instead of 5", "kind": "target", "size": 0.4, "plan": "the keys as they are",
         "loss": 0.0, "found_by": "search"},
        {"change": "linkage-risk target 68.8 % instead of 20 %", "kind": "target", "size": 2.44,
         "plan": "age: 5-year bands; local suppression to 5-anonymity", "loss": 0.0412, "found_by": "closest plan 1"},
    ],
    "tried": ["k = 4 instead of 5: no plan passes every blocking check"],
    "not_tried": ["savings not a key"],
    "seconds": 12.5, "budget_seconds": 60.0, "loss_measure": "lambda_arctan",
}


def withheld(inputs, **changes):
    """The inputs with every plan withheld (and ``changes``): no plan passes its blocking checks."""
    plans = {name: dataclasses.replace(plan, releasable=False) for name, plan in inputs.plans.items()}
    return dataclasses.replace(inputs, plans=plans, **changes)


def section(page: str) -> str:
    start = page.index('<h2 id="what-it-would-take">')
    return page[start:page.index("<h2", start + 1)]


def test_the_report_says_what_it_would_take(report_inputs):
    page = render_report(withheld(report_inputs, what_it_would_take=ADVICE))
    text = html.unescape(section(page))
    assert text.startswith('<h2 id="what-it-would-take">What it would take</h2>')
    assert page.index('id="decision"') < page.index('id="what-it-would-take"') < page.index('id="map"')
    assert '<a href="#what-it-would-take">What it would take</a>' in page  # in the table of contents
    # the closest plans, each with its binding checks and how far
    assert re.search(r"<td>1</td><td class=\"text\">age: 5-year bands; local suppression to 5-anonymity</td>"
                     r"<td class=\"text\">linkage risk 68.8 % against 20 %</td><td>2.44</td>", text)
    assert "no_direct_identifier: rule (found: id)</td><td class=\"text\">∞</td><td>–</td>" in text
    # the changes, cheapest first, with the plan, its loss and how it was found
    assert re.search(r"<td>1</td><td class=\"text\">k = 3 instead of 5</td><td class=\"text\">target</td>"
                     r"<td>40 %</td><td class=\"text\">the keys as they are</td>"
                     r"<td class=\"text\">the search run again</td>", text)
    assert ("closest plan 1 (the search run again does not find it: name it among the spec's plans)" in text)
    assert text.index("k = 3 instead of 5") < text.index("linkage-risk target 68.8 % instead of 20 %")
    assert "Tried without an eligible plan: k = 4 instead of 5: no plan passes every blocking check." in text
    assert "The budget of 60 s for these searches ran out before savings not a key could be tried." in text
    assert "SPEC §" not in text
    assert report_data(withheld(report_inputs, what_it_would_take=ADVICE))["what_it_would_take"] == ADVICE


def test_the_search_sentence_points_to_the_section(report_inputs):
    search = {"nodes_evaluated": 12, "nodes_total": 12, "exhaustive": True, "bound": "none", "seconds": 1.5,
              "recommended": "", "recommended_loss": float("nan"), "runner_up": "", "runner_up_loss": float("nan"),
              "stricter_target": float("nan"), "stricter_loss": float("nan")}
    page = render_report(withheld(report_inputs, search=search, what_it_would_take=ADVICE))
    assert ("The plan search evaluated 12 of 12 generalisation plans in 1.5 s (every plan of the space). No searched "
            "plan passes every blocking release check. What it would take: the next section.") in page


def test_no_section_when_the_search_recommends_a_plan_or_did_not_run_or_another_plan_passes(report_inputs):
    page = render_report(withheld(report_inputs))
    assert "What it would take" not in page and report_data(report_inputs)["what_it_would_take"] is None
    # a plan of the spec passes (the fixture's "suppression"): it is released, nothing to say
    assert report_inputs.plans["suppression"].releasable
    assert "What it would take" not in render_report(dataclasses.replace(report_inputs, what_it_would_take=ADVICE))


def test_the_section_when_no_change_tried_helps(report_inputs):
    advice = {**ADVICE, "closest": [], "relaxations": [], "not_tried": []}
    text = html.unescape(section(render_report(withheld(report_inputs, what_it_would_take=advice))))
    assert "The search ran no plan through the release checks within its budget." in text
    assert "None of the changes tried makes a plan eligible." in text and "<table>" not in text
    assert "ran out" not in text


def test_the_search_sentence_says_how_the_plans_it_did_not_evaluate_were_settled(report_inputs):
    # casc1.sav: 3 of 36 plans evaluated, the search exhaustive (issue 34): "every plan of the space"
    # contradicted the 3; the other 33 were settled by predictive tagging
    search = {"nodes_evaluated": 3, "nodes_total": 36, "exhaustive": True,
              "bound": "none: every node evaluated or settled by its classes; 33 nodes tagged k-anonymous or not "
                       "without a frequency check (predictive tagging)", "seconds": 0.4,
              "recommended": "", "recommended_loss": float("nan"), "runner_up": "", "runner_up_loss": float("nan"),
              "stricter_target": float("nan"), "stricter_loss": float("nan")}
    page = render_report(withheld(report_inputs, search=search))
    assert ("The plan search evaluated 3 of 36 generalisation plans in 0.4 s; the other 33 were settled without "
            "evaluation (33 nodes tagged k-anonymous or not without a frequency check (predictive tagging)).") in page
    assert "every plan of the space" not in page


def test_the_report_says_whether_no_plan_is_proven(report_inputs):
    # ARX's census-income file with its hierarchies: the budget stopped the search at 92 of 192 plans and
    # the report said "No plan of the search meets the risk target", as if every plan had been checked
    proven = html.unescape(section(render_report(withheld(report_inputs, what_it_would_take=ADVICE))))
    assert "No plan of the search's space meets the risk target and the utility limits together (every plan settled)." in proven
    assert "not proven" not in proven
    cut = "it stopped after 92 plans evaluated, its budget 120 s CPU (search.budget_seconds), time budget: 100 nodes not evaluated: a plan it did not check may meet the targets"
    page = render_report(withheld(report_inputs, what_it_would_take={**ADVICE, "search_cut": cut}))
    text = html.unescape(section(page))
    assert ("No plan the search checked meets the risk target and the utility limits together; this is not proven: "
            + cut + ".") in text
