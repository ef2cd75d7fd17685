"""The self-contained HTML release report, its PDF, JSON and index formats, and its plots."""

from sdc_dagster.report.decision import RECOMMENDATION_RULE, Recommendation, pareto_optimal, recommend_plan
from sdc_dagster.report.categories import category_text
from sdc_dagster.report.formats import (
    BrowserNotFound,
    export_report,
    report_data,
    wave_trend,
    write_index,
    write_pdf,
    write_report,
)
from sdc_dagster.report.content import (
    category_shares,
    combined_risk_histogram,
    contribution_boxplots,
    contribution_change_plots,
    decision_table,
    distribution_panels,
    distribution_tables,
    headline_table,
    plan_points,
    quantile_table,
    recommendation,
    report_plots,
    risk_histogram,
    risk_target,
    risk_utility_map,
    step_sentence,
    topsis_histograms,
)
from sdc_dagster.report.html import measure_notes_table, render_report
from sdc_dagster.report.inputs import MeasureNote, PlanSummary, ReportInputs, RunInfo, SignOff
from sdc_dagster.report.maps import suppression_map_png
from sdc_dagster.report.measures import Measure, format_measure, format_value, measure_info
from sdc_dagster.report.plots import (
    boxplot_svg,
    category_bars_svg,
    grouped_bars_svg,
    heatmap_svg,
    histogram_svg,
    histograms_svg,
    lines_svg,
    risk_utility_map_svg,
)
