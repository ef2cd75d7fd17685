"""The self-contained HTML release report comparing the protection plans of one survey wave.

One file, no external resources: inline CSS, charts embedded as SVG data URIs (each with
alt text and the table of its numbers behind it), so the report can be archived, mailed, printed
to PDF or attached to a Dagster materialisation as it is. The order is the one a methodologist
signs off in: the decision first, then the risk-utility map, the variables, every measure
explained, and the provenance of each plan.
"""

from __future__ import annotations

import html
from pathlib import Path

import numpy as np
import pandas as pd

from sdc_dagster.report.categories import category_text, normal_labels
from sdc_dagster.report.content import (
    binding_limits,
    categories_merged,
    category_shares,
    check_inputs,
    contributions_side_by_side,
    decision_table,
    distribution_panels,
    distribution_tables,
    loss_measures,
    not_released_words,
    plan_points,
    quantile_table,
    report_plots,
    risk_measures,
    risk_target,
    same_for_every_plan,
    step_sentence,
    step_sources,
    suda_summary,
    topsis_summary_table,
    worst_losses,
)
from sdc_dagster.report.decision import RECOMMENDATION_RULE, Recommendation, recommend_plan
from sdc_dagster.report.header import header_html, sign_off_html, with_contents
from sdc_dagster.report.inputs import ReportInputs
from sdc_dagster.report.markup import REPORT_CSS, Markup, html_chart, html_table
from sdc_dagster.report.measures import GROUPS, format_measure, format_value, measure_info
from sdc_dagster.report.plots import category_bars_svg, grouped_bars_svg, heatmap_svg, histograms_svg
from sdc_dagster.report.references import cite_html, cite_section, cited_keys, references_html
from sdc_dagster.report.search_words import any_releasable, search_sentence

DECISION_RISK = ("global_risk", "expected_reidentifications", "k2_violations", "k3_violations",
                  "k5_violations", "records_above_threshold", "household_risk", "combined_global_risk",
                  "linkage_risk")


def _release_note(release: dict | None) -> str:
    """Links to this release's manifest and to the release it supersedes."""
    if not release:
        return ""

    def link(folder: str, label: str) -> str:
        manifest = Path(folder) / "manifest.json"
        return f'<a href="{html.escape(manifest.as_uri())}">{html.escape(label)}</a>'

    text = f"<p class=\"release\">Release {link(release['folder'], 'run ' + str(release['run_id']))}"
    if release.get("previous_folder"):
        text += f"; supersedes {link(release['previous_folder'], 'run ' + str(release['previous_release']))}"
    return text + ".</p>"


# --- sections ------------------------------------------------------------------------------------


def _decision_section(inputs: ReportInputs, points: pd.DataFrame, chosen: Recommendation) -> str:
    settings = [f"{inputs.n_records:,} records"]
    if inputs.keys:
        settings.append("categorical key variables " + ", ".join(map(str, inputs.keys)))
    else:
        settings.append("no categorical key variable (continuous keys only)")
    if inputs.design:
        settings.append(inputs.design)
    if inputs.k is not None:
        settings.append(f"k = {inputs.k}")
    if inputs.risk_threshold is not None:
        settings.append(f"individual-risk threshold {format_value(inputs.risk_threshold, 'share')}")
    if inputs.max_global_risk is not None:
        settings.append(f"global-risk target at most {format_value(inputs.max_global_risk, 'share')}")
    if inputs.max_linkage_risk is not None:
        settings.append(f"record-linkage target at most {format_value(inputs.max_linkage_risk, 'share')} of the "
                        "records linked to their own original")
    parts = ["<h2 id=\"decision\">Decision</h2>", f"<p class=\"meta\">Wave {html.escape(str(inputs.wave))}: "
             f"{html.escape('; '.join(settings))}.</p>"]
    if not inputs.keys and inputs.max_linkage_risk is not None:
        parts.append("<p>The risk of this file comes from its continuous variables: an intruder who knows some of a "
                     "person's values looks for the released record nearest to them. A plan is released when the best "
                     "record linkage (Euclidean, Mahalanobis, Gower or one-to-one) links at most the target share of "
                     "the records to their own original; the combined risk's continuous part (values with fewer than "
                     "k neighbours) and interval disclosure are shown with it.</p>")
    elif inputs.not_applicable:
        reasons: dict[str, list[str]] = {}
        for check, why in inputs.not_applicable.items():
            reasons.setdefault(why, []).append(check.replace("_", " "))
        parts.append("<p>Not checked for this file: " + html.escape("; ".join(
            f"{', '.join(checks)} ({why})" for why, checks in reasons.items())) + ".</p>")
    if not inputs.plans:
        return "".join(parts) + "<p>No protection plan is configured: nothing to release.</p>" + _risk_before(inputs)
    box = "decision" + ("" if chosen.plan else " none")
    verdict = (f"Recommended plan: <strong>{html.escape(chosen.plan)}</strong>" if chosen.plan
               else "<strong>No plan is recommended</strong>")
    parts.append(f'<div class="{box}"><p>{verdict}. {html.escape(chosen.reason)}</p>'
                 + _losses_in_words(inputs, chosen)
                 + f'<p class="rule">Rule: {html.escape(RECOMMENDATION_RULE)}</p></div>')
    if inputs.search is not None:
        parts.append(f"<p>{html.escape(search_sentence(inputs))}</p>")
    parts.append(_risk_before(inputs))
    loss_label = measure_info(inputs.loss_measure)
    rows = {}
    for name, plan in inputs.plans.items():
        failed = "; ".join(f"{c}: {why}" for c, why in plan.withheld_because.items())
        rows[name] = {
            "residual risk": format_measure(inputs.risk_measure, plan.residual_risk),
            f"information loss ({loss_label.label})": format_measure(inputs.loss_measure, plan.loss),
            "utility (1 - loss)": format_value(points.loc[name, "utility"], "index"),
            "blocking checks": "passed" if plan.releasable else f"failed: {failed}",
            "warnings": "; ".join(f"{c}: {why}" for c, why in plan.warnings.items()) or "none",
            "worst losses": "; ".join(worst_losses(plan.utility)) or "none",
            "Pareto-optimal": "yes" if points.loc[name, "pareto"] else "no",
        }
    if all(plan.utility is None for plan in inputs.plans.values()):  # no utility figures (a report of
        for row in rows.values():                                     # stored values from before them)
            del row["worst losses"]
    plans = pd.DataFrame.from_dict(rows, orient="index").rename_axis("plan")
    parts.append(html_table(plans, caption=f"Each plan: residual {measure_info(inputs.risk_measure).label.lower()}, "
                                        "information loss and its blocking release checks"))
    parts += ["<h3>Release decision</h3>",
              "<p>A plan failing a blocking check is withheld: no protected file and no release manifest are "
              "published for it.</p>", html_table(decision_table(inputs)),
              html_table(_by_plan(inputs, "checks"), caption="Release checks passed", index_label="check")]
    return "".join(parts)


def _what_it_would_take_section(inputs: ReportInputs) -> str:
    """When the plan search recommends no plan: the closest plans with the checks that bind and by
    how much, and the cheapest changes of target or scenario under which a new search recommends one
    (:mod:`sdc_dagster.pipeline.relaxations`, its record in ``inputs.what_it_would_take``). Empty
    otherwise, and when another plan (one of the spec's) passes its blocking checks."""
    advice = inputs.what_it_would_take
    if advice is None or any_releasable(inputs):
        return ""
    label = measure_info(advice["loss_measure"])
    parts = ["<h2 id=\"what-it-would-take\">What it would take</h2>",
             "<p>" + ("No plan of the search's space meets the risk target and the utility limits together (every "
                      "plan settled). " if not advice.get("search_cut") else
                      f"No plan the search checked meets the risk target and the utility limits together; this is "
                      f"not proven: {html.escape(advice['search_cut'])}. ")
             + "Below: the plans that "
             "come closest, each with the blocking checks it fails and how far it is from them (the value's excess "
             "over its threshold relative to the threshold; for a count, the share of the records), and the changes "
             "of target or scenario under which the search, run again, recommends a plan.</p>"]
    if advice["closest"]:
        closest = pd.DataFrame({
            "plan": [plan["plan"] for plan in advice["closest"]],
            "binding checks": ["; ".join(g["text"] for g in plan["gaps"]) for plan in advice["closest"]],
            # a check no change of target passes (a direct identifier released) is infinitely far
            "distance (sum of relative gaps)": ["∞" if plan["distance"] is None else f"{plan['distance']:.3g}"
                                                for plan in advice["closest"]],
            f"information loss ({label.label})": [format_value(plan["loss"], label.kind) for plan in advice["closest"]],
        }, index=pd.RangeIndex(1, len(advice["closest"]) + 1, name="closest"))
        parts.append(html_table(closest, caption="The closest plans and the checks that bind"))
    else:
        parts.append("<p>The search ran no plan through the release checks within its budget.</p>")
    if advice["relaxations"]:
        changes = pd.DataFrame({
            "change": [r["change"] for r in advice["relaxations"]],
            "what changes": [r["kind"] for r in advice["relaxations"]],
            "loosening": ["–" if r["size"] is None else format_value(r["size"], "share")
                          for r in advice["relaxations"]],
            "plan eligible": [r["plan"] for r in advice["relaxations"]],
            "found by": ["the search run again" if r["found_by"] == "search" else
                         f"{r['found_by']} (the search run again does not find it: name it among the spec's plans)"
                         for r in advice["relaxations"]],
            f"information loss ({label.label})": [format_value(r["loss"], label.kind) for r in advice["relaxations"]],
        }, index=pd.RangeIndex(1, len(advice["relaxations"]) + 1, name="cheapest"))
        parts += ["<p>The cheapest changes that make a plan eligible, cheapest first. Each was tried by searching the "
                  "plans again under the changed target or scenario, not estimated; where that search finds no plan "
                  "but one of the closest plans passes every check under the change, that plan is named. A change's "
                  "loosening is how much it "
                  "loosens the one figure it changes (k 5 to 3: 40 %; a limit of 10 % raised to 12.4 %: 24 %); a key "
                  "that is no longer a key, or l-diversity no longer asked, counts 100 %.</p>",
                  html_table(changes, caption="Changes of target or scenario that make a plan eligible")]
    else:
        parts.append("<p>None of the changes tried makes a plan eligible.</p>")
    notes = []
    if advice["tried"]:
        notes.append("Tried without an eligible plan: " + "; ".join(advice["tried"]) + ".")
    if advice["not_tried"]:
        notes.append(f"The budget of {advice['budget_seconds']:.3g} s for these searches ran out before "
                     + ", ".join(advice["not_tried"]) + " could be tried.")
    if notes:
        parts.append(f"<p>{html.escape(' '.join(notes))}</p>")
    return "".join(parts)


def _losses_in_words(inputs: ReportInputs, chosen: Recommendation) -> str:
    """The decision box's losses in words: the keys the recommended plan does not release (one
    category, withheld: :func:`~sdc_dagster.report.content.not_released_words`), the keys it releases in
    fewer categories (:func:`~sdc_dagster.report.content.categories_merged`) and its worst per-variable losses against
    the utility limits (:func:`~sdc_dagster.report.content.worst_losses`); with no plan to recommend,
    each limit that every plan exceeds and by how much (:func:`~sdc_dagster.report.content.binding_limits`)."""
    if chosen.plan is not None:
        plan = inputs.plans[chosen.plan]
        worst = worst_losses(plan.utility)
        lost = not_released_words(plan.keys_not_released)
        merged = categories_merged(inputs, chosen.plan)
        return ((f"<p>Not released by {html.escape(chosen.plan)}: {html.escape(lost)}.</p>" if lost else "")
                + (f"<p>Categories merged by {html.escape(chosen.plan)}: {html.escape('; '.join(merged))}.</p>"
                   if merged else "")
                + (f"<p>Largest losses of {html.escape(chosen.plan)} (against the utility limits): "
                   f"{html.escape('; '.join(worst))}.</p>" if worst else ""))
    binding = binding_limits(inputs)
    if not binding:
        return ""
    return "<p>Utility limits no plan meets: " + html.escape("; ".join(binding)) + ".</p>"


def _by_plan(inputs: ReportInputs, attribute: str) -> pd.DataFrame:
    """Rows = entries of a per-plan dict attribute (union over plans), columns = plans."""
    return pd.DataFrame({name: pd.Series(getattr(plan, attribute), dtype=object)
                         for name, plan in inputs.plans.items()})


def _risk_before(inputs: ReportInputs) -> str:
    names = [n for n in DECISION_RISK if n in inputs.risk_before]
    if not names:
        return ""
    rows = {measure_info(n).label: [format_measure(n, inputs.risk_before), measure_info(n).meaning] for n in names}
    table = pd.DataFrame.from_dict(rows, orient="index", columns=["before protection", "meaning"])
    return html_table(table.rename_axis("risk of the unprotected wave"), caption="Risk before protection")


def _map_section(inputs: ReportInputs, points: pd.DataFrame, chosen: Recommendation, plots: dict[str, bytes]) -> str:
    if not inputs.plans:
        return ""
    risk_kind, loss_kind = measure_info(inputs.risk_measure).kind, measure_info(inputs.loss_measure).kind
    data = points.assign(risk=[format_value(v, risk_kind) for v in points["risk"]],
                         loss=[format_value(v, loss_kind) for v in points["loss"]],
                         utility=[format_value(v, loss_kind) for v in points["utility"]],
                         recommended=[name == chosen.plan for name in points.index])
    alt = ("Scatter plot of the plans, residual risk on the horizontal axis and information loss on the vertical "
           "axis: " + "; ".join(f"{name} risk {format_value(r.risk, risk_kind)}, "
                                 f"loss {format_value(r.loss, loss_kind)}, "
                                 f"{'passes' if r.releasable else 'fails'} its checks"
                                 for name, r in points.iterrows())
           + (f"; recommended: {chosen.plan}" if chosen.plan else "; no plan recommended"))
    return ("<h2 id=\"map\">Risk-utility map</h2>"
            "<p>Lower left is better. Circles pass their blocking checks, crosses fail them; the dashed line is "
            "the Pareto front of the passing plans; the ring marks the recommendation"
            + ("; the dotted vertical line is the risk target" if risk_target(inputs)[0] is not None else "")
            + ("; the solid step line is the front of the plan search" if inputs.search_front is not None else "")
            + ".</p>"
            + html_chart(plots["risk_utility_map"], alt, "Residual risk against information loss per plan",
                     html_table(data, index_label="plan") + _front_table(inputs)))


def _front_table(inputs: ReportInputs) -> str:
    """The front of the plan search (``inputs.search_front``) as the tables write its figures."""
    if inputs.search_front is None or not len(inputs.search_front):
        return ""
    loss_kind = measure_info(inputs.loss_measure).kind
    front = pd.DataFrame({"global risk": [format_value(v, "share") for v in inputs.search_front["global_risk"]],
                          "information loss": [format_value(v, loss_kind) for v in inputs.search_front["loss"]]},
                         index=pd.RangeIndex(1, len(inputs.search_front) + 1, name="candidate"))
    return html_table(front, caption="Front of the plan search")


def _variables_section(inputs: ReportInputs, plots: dict[str, bytes], tables: dict[str, pd.DataFrame]) -> str:
    parts = ["<h2 id=\"variables\">Per variable</h2>"]
    if inputs.suppressions is not None and not inputs.suppressions.empty:
        parts += ["<h3>Suppressions per key and plan</h3>",
                  f"<p>Values observed in the original record and missing after the plan {cite_section('8.3')}.</p>",
                  html_chart(grouped_bars_svg(inputs.suppressions, "Values suppressed per key variable",
                                          ylabel="values suppressed"),
                         "Bar chart of the values suppressed per key variable and plan",
                         "Values suppressed per key variable and plan", html_table(inputs.suppressions))]
    side = contributions_side_by_side(inputs)
    if inputs.contributions_global is not None or side is not None:
        parts += ["<h3>Contributions to the risk: Shapley and solidarity values</h3>",
                  "<p>Share of the risk each variable carries (sums to 1 over the variables while some record is "
                  f"unsafe, 0 when none is), before protection and after each plan {cite_section('6')}.</p>"]
        if side is not None:
            parts.append(html_table(side, caption="Global contributions before and after each plan"))
        elif inputs.contributions_global is not None:
            parts.append(html_table(inputs.contributions_global, index_label="variable"))
        if any(plan.contributions is not None for plan in inputs.plans.values()):
            parts.append("<h3>Contributions to the residual risk after each plan</h3>")
            parts.append('<div class="grid">' + "".join(
                html_chart(plots[f"contributions_{name}"], f"Bar chart of each variable's Shapley and solidarity contribution before and "
                                    f"after {name}", f"Contributions before and after {name}",
                       html_table(plan.contributions, index_label="variable"))
                for name, plan in inputs.plans.items() if plan.contributions is not None) + "</div>")
        boxes = {value: plots[f"{value}_boxplot"] for value in inputs.contributions_per_record or {}}
        if boxes:
            parts.append('<div class="grid">' + "".join(
                html_chart(chart, f"Box plots of the per-record {value} values of each variable",
                       f"{value.capitalize()} values per record and variable, before protection",
                       html_table(inputs.contributions_per_record[value].describe().rename_axis("statistic")))
                for value, chart in boxes.items()) + "</div>")
    if inputs.unsafe_by_variable is not None:
        parts += [f"<h3>Unsafe combinations (k = {inputs.k})</h3>",
                  "<p>Value combinations of 1, 2, 3 key variables shared by fewer than k records in the unprotected "
                  "wave, counted for each variable and category involved, as μ-Argus tabulates them "
                  f"{cite_section('3.10')}.</p>",
                  html_table(inputs.unsafe_by_variable, caption="By variable and dimension", index_label="variable")]
        if inputs.unsafe_by_category is not None:
            by_category = inputs.unsafe_by_category.set_index(["variable", "category"])
            by_category.index = [f"{v} = {category_text(c, normal_labels(inputs.value_labels.get(v)))}"
                                 for v, c in by_category.index]
            parts.append(html_table(by_category, caption="By category and dimension", index_label="variable = category"))
    matrices = [(name, variable, _labelled_matrix(matrix, inputs.value_labels.get(variable)))
                for name, plan in inputs.plans.items() for variable, matrix in plan.pram_matrices.items()]
    if matrices:
        parts += ["<h3>PRAM transition matrices</h3>",
                  "<p>Probability that a record with the original category (row) is released with the category of "
                  f"the column {cite_section('8.8')}.</p>", '<div class="grid">']
        parts += [html_chart(heatmap_svg(matrix, f"PRAM of {variable}, plan {name}"),
                         f"Heat map of the PRAM transition matrix of {variable} in plan {name}; diagonal "
                         f"(retention) from {format_value(np.nanmin(np.diag(matrix.to_numpy(float))), 'index')} to "
                         f"{format_value(np.nanmax(np.diag(matrix.to_numpy(float))), 'index')}",
                         f"PRAM transition matrix of {variable}, plan {name}",
                         html_table(matrix.rename_axis(index=None, columns=None), index_label="from \\ to"))
                  for name, variable, matrix in matrices]
        parts.append("</div>")
    if inputs.distributions:
        parts += ["<h3>Distributions before and after</h3>",
                  "<p>Every quasi-identifier a plan changed or suppressed: categories as shares of the records, "
                  "continuous variables as histograms and quantiles. A plan that recoded a variable into bands is "
                  "drawn on its own categories, next to the original recoded into the same bands where that is "
                  "possible.</p>", '<div class="grid">']
        for variable in inputs.distributions:
            for title, values, continuous in distribution_panels(inputs, variable):
                # the chart of the original and every plan: the variable's table of the JSON report
                whole = list(values) == list(inputs.distributions[variable])
                if continuous:
                    chart = histograms_svg(values, f"{title}: before and after", xlabel=variable)
                    parts.append(html_chart(chart, f"Overlaid histograms of {title} before protection and after "
                                             + ", ".join(n for n in values if n != "original"),
                                        f"{title} before and after",
                                        html_table(tables[variable] if whole else quantile_table(values))))
                    continue
                shares = tables[variable] if whole else category_shares(values, inputs.value_labels.get(variable))
                chart = category_bars_svg(100 * shares, f"{title}: share of records per category")
                parts.append(html_chart(chart, f"Bar chart of the share of records in each category of {title}: "
                                         + ", ".join(values), f"{title} before and after",
                                    html_table((100 * shares).round(2), caption="% of records")))
        parts.append("</div>")
    return "".join(parts) if len(parts) > 1 else ""


def _attribute_disclosure_section(inputs: ReportInputs, plots: dict[str, bytes]) -> str:
    """Special uniques and l-diversity: SUDA2's scores of the unprotected wave (the DIS-SUDA
    intervals of sdcMicro's ``print.suda2`` and their histogram) and, per plan, the records whose key
    group is not l-diverse in a sensitive variable (distinct and entropy l-diversity). Empty when
    the wave has neither."""
    parts = []
    suda = suda_summary(inputs.risk_per_record)
    if suda is not None:
        chart = plots.get("suda_histogram")
        parts += ["<h3>Special uniques (SUDA2)</h3>",
                  "<p>SUDA2 (Elliot, Manning &amp; Ford 2002; sdcMicro's suda2) finds each record's minimal sample "
                  "uniques: the smallest sets of key values no other record shares. Its score grows with the number "
                  "of such sets and the fewer values they take; DIS-SUDA scales it to the probability that a match "
                  "on the keys is a correct one. Records of the unprotected wave, per interval of the DIS-SUDA "
                  "score.</p>",
                  html_table(suda.round(4), caption="DIS-SUDA scores of the unprotected wave")]
        if chart is not None:
            parts.append(html_chart(chart, "Histogram of the DIS-SUDA scores of the records with a minimal sample "
                                    "unique", "DIS-SUDA scores before protection", html_table(suda.round(4))))
    names = [n for n in risk_measures(inputs) if n.endswith("_records_below_l") or n.endswith("_records_below_entropy_l")]
    if names:
        table = pd.DataFrame({column: [format_measure(n, values) for n in names] for column, values in
                              {"original": inputs.risk_before,
                               **{p: plan.residual_risk for p, plan in inputs.plans.items()}}.items()},
                             index=pd.Index([measure_info(n).label for n in names], name="l-diversity"))
        parts += ["<h3>l-diversity of the sensitive variables</h3>",
                  "<p>Records whose key group (records sharing their released key values) holds fewer than l distinct "
                  "values of a sensitive variable, or an entropy below log(l): whoever finds the group learns the "
                  "sensitive value (SPEC §3.6; sdcMicro's ldiversity). With the spec's risk.l the distinct count is a "
                  "blocking release check.</p>", html_table(table)]
    if not parts:
        return ""
    return "<h2 id=\"attribute-disclosure\">Special uniques and attribute disclosure</h2>" + "".join(parts)


def _labelled_matrix(matrix: pd.DataFrame, labels: dict | None) -> pd.DataFrame:
    """A PRAM matrix with its categories written as the report writes categories (``1``, not
    ``1.0``; with their value labels)."""
    labels = normal_labels(labels)
    return matrix.rename(index=lambda c: category_text(c, labels), columns=lambda c: category_text(c, labels))


def _measures_section(inputs: ReportInputs, plots: dict[str, bytes], topsis: pd.DataFrame | None) -> str:
    risk_names, loss_names = risk_measures(inputs), loss_measures(inputs)
    columns = ["original", *inputs.plans]
    parts = ["<h2 id=\"measures\">All measures, explained</h2>",
             "<p>Each measure with its meaning, the direction in which it is better, its range and the published "
             "sources that define it (full entries under References). Counts are integers, shares percentages; a "
             "scale-dependent measure is followed by its relative form. The risk measures and protection methods "
             "are those of the handbook and of sdcMicro "
             + cite_html(("Hundepool et al. 2012", "ch. 3"), ("Templ, Kowarik & Meindl 2015", ""),
                         ("sdcMicro reference manual", ""))
             + ".</p>"]
    for group in GROUPS:
        names = [n for n in risk_names + loss_names if measure_info(n).group == group]
        if not names:
            continue
        rows = {}
        for name in names:
            info = measure_info(name)
            values = {"original": inputs.risk_before if name in risk_names else {},
                      **{p: (plan.residual_risk if name in risk_names else plan.loss) for p, plan in inputs.plans.items()}}
            # a loss measure that cannot tell the plans apart (a risk of 0 for every plan meets a target)
            flat = (" (same for every plan: does not discriminate between them)"
                    if name in loss_names and same_for_every_plan(inputs, name, values) else "")
            rows[name] = {"measure": f"<strong>{html.escape(info.label)}</strong><br><code>{html.escape(name)}</code>",
                          "what it says": html.escape(f"{info.meaning}; {info.direction}; range {info.range}{flat}"),
                          "source": cite_section(info.spec) or "–",
                          **{c: html.escape(format_measure(name, values[c])) for c in columns}}
        table = pd.DataFrame.from_dict(rows, orient="index").set_index("measure")
        table.index = table.index.map(Markup)
        parts += [f"<h3>{html.escape(group)}</h3>", html_table(table, raw=True)]
        if group == GROUPS[0]:
            figures = [html_chart(plots["risk_histogram"], "Histogram of the individual re-identification risk of the "
                              "unprotected records", "Individual re-identification risk before protection",
                              html_table(inputs.risk_per_record["risk"].describe().to_frame("risk").rename_axis("statistic")))
                       ] if inputs.keys else []  # without categorical keys every record shares the empty key
            combined = plots.get("combined_risk_histogram")
            if combined is not None:
                figures.append(html_chart(combined, "Histogram of the combined categorical and continuous record risk",
                                      "Combined categorical and continuous risk before protection",
                                      html_table(inputs.risk_per_record["combined_risk"].describe().to_frame("combined risk")
                                             .rename_axis("statistic"))))
            parts.append('<div class="grid">' + "".join(figures) + "</div>")
    if inputs.measure_notes:
        parts += ["<h3 id=\"not-applicable\">Measures not computed, or computed with a limit</h3>",
                  "<p>A measure undefined on this wave's data is left out and the wave goes on; the release "
                  "decision rests on the blocking checks alone.</p>",
                  html_table(measure_notes_table(inputs), index_label="measure")]
    if inputs.plans:
        parts += ["<h3>TOPSIS information loss per record</h3>",
                  "<p>Per-record loss relative to the best and worst record of the same plan (0 = least, 1 = most): "
                  f"compare distributions within a plan, not levels across plans {cite_section('10')}.</p>",
                  html_chart(plots["topsis_histograms"], "Histograms of the per-record TOPSIS loss of each plan",
                         "TOPSIS information loss per record",
                         html_table(topsis, index_label="statistic"))]
    return "".join(parts)


def measure_notes_table(inputs: ReportInputs) -> pd.DataFrame:
    """The measures left out as not applicable or computed with a limit: one row per note, indexed
    by measure, with the data it concerns ("original" or a plan), its status and the reason."""
    rows = [{"measure": n.measure, "data": n.variant, "status": n.status, "reason": n.reason} for n in inputs.measure_notes]
    return pd.DataFrame(rows, columns=["measure", "data", "status", "reason"]).set_index("measure")


def _provenance_section(inputs: ReportInputs) -> str:
    if not inputs.plans:
        return ""
    parts = ["<h2 id=\"provenance\">Protection steps and provenance</h2>"]
    versions: dict[str, dict] = {}
    for name, plan in inputs.plans.items():
        steps = plan.steps or [{"method": "none"}]
        parts += [f"<h3>{html.escape(name)}</h3>",
                  "<ol>" + "".join(f"<li>{html.escape(step_sentence(s))}"
                                   + (f" {cite_html(*step_sources(s))}" if step_sources(s) else "") + "</li>"
                                   for s in steps) + "</ol>"]
        origin = plan.provenance
        if origin:
            facts = [("random_state (the plan's random seed)", origin.get("seed")), ("run", origin.get("run_id")),
                     ("spec SHA-256", origin.get("spec_sha256")), ("input data SHA-256", origin.get("input_sha256")),
                     ("output SHA-256", origin.get("output_sha256") or "none (withheld)")]
            record = origin.get("record")
            items = "".join(f'<li>{html.escape(label)}: <span class="hash">{html.escape(str(value))}</span></li>'
                            for label, value in facts)
            if record:
                items += (f'<li>{"manifest" if plan.releasable else "withheld record"}: '
                          f'<a class="hash" href="{html.escape(Path(record).as_uri())}">{html.escape(record)}</a></li>')
            if origin.get("audit_command"):
                items += f"<li>replay and verify: <code>{html.escape(origin['audit_command'])}</code></li>"
            parts.append(f"<ul>{items}</ul>")
            versions[name] = origin.get("packages", {})
        parts.append(_release_note(plan.release))
    if versions:
        table = pd.DataFrame(versions).fillna("").rename_axis("package")
        parts += ["<h3>Versions</h3>", html_table(table)]
    return "".join(parts)


def render_report(inputs: ReportInputs, plots: dict[str, bytes] | None = None,
                  topsis: pd.DataFrame | None = None, distributions: dict[str, pd.DataFrame] | None = None) -> str:
    """The release report as one self-contained HTML document.

    Sections, in order: the decision (wave, keys, k and thresholds, risk before protection, one
    line per plan with its residual risk, loss, utility and blocking checks, the recommended plan
    with its reason and the rule of :mod:`~sdc_dagster.report.decision`, the release decision of
    each plan); when the plan search recommends no plan, what it would take (the closest plans and
    the cheapest changes of target or scenario that make one eligible); the risk-utility map with
    the Pareto front; per variable (suppressions per key and plan, Shapley and solidarity contributions before and after each plan, the unsafe
    combinations, PRAM matrices as heat maps, distributions before and after);
    every measure explained and grouped (meaning, direction, range, published sources), formatted by
    kind, and the measures left out as not applicable or limited, with the reason; the plans' steps as sentences with seeds, hashes, versions, manifest links and the
    ``sdc audit`` command; the sign-off block; the references (full entries of every source cited,
    :mod:`~sdc_dagster.report.references`). Above them, the header (the run's date and time, data file
    and SHA-256, spec SHA-256, software versions, run id: :mod:`~sdc_dagster.report.header`) and the table
    of contents linked to every section. Every chart has alt text and its numbers in a table behind it.

    ``plots``: the summary plots of :func:`~sdc_dagster.report.content.report_plots` when the caller
    has drawn them already (the report asset shows them as metadata too); drawn here otherwise.
    ``topsis``: the plans' TOPSIS summary (:func:`~sdc_dagster.report.content.topsis_summary_table`)
    when the caller has it (:func:`~sdc_dagster.report.formats.write_report` computes it once for
    the HTML and the JSON report); computed here otherwise. ``distributions``: likewise, the
    :func:`~sdc_dagster.report.content.distribution_tables`.

    Returns
    -------
    str
        HTML5 with inline CSS and SVG images as data URIs; it references no external URL.
    """
    check_inputs(inputs)
    title = f"Disclosure control report: {inputs.survey}, wave {inputs.wave}"
    points = plan_points(inputs)
    chosen = recommend_plan(points)
    plots = report_plots(inputs) if plots is None else plots
    if topsis is None and inputs.plans:
        topsis = topsis_summary_table(inputs)
    sections = [
        _decision_section(inputs, points, chosen),
        _what_it_would_take_section(inputs),
        _map_section(inputs, points, chosen, plots),
        _variables_section(inputs, plots, distribution_tables(inputs) if distributions is None else distributions),
        _attribute_disclosure_section(inputs, plots),
        _measures_section(inputs, plots, topsis),
        _provenance_section(inputs),
        sign_off_html(inputs),
    ]
    body = "\n".join(s for s in sections if s)
    body += "\n" + references_html(cited_keys(body))
    contents, body = with_contents(body)
    body = "\n".join([f"<h1>{html.escape(title)}</h1>", header_html(inputs), contents, body])
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{html.escape(title)}</title><style>{REPORT_CSS}</style></head>\n<body>\n<main>\n{body}\n</main>\n"
            "</body></html>\n")
