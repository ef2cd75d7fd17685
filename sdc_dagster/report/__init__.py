"""The self-contained HTML release report and its plots."""

from sdc_dagster.report.html import (
    combined_risk_histogram,
    contribution_boxplots,
    contribution_change_plots,
    decision_table,
    headline_table,
    render_report,
    report_plots,
    risk_histogram,
    risk_utility_map,
    topsis_histograms,
)
from sdc_dagster.report.inputs import PlanSummary, ReportInputs
from sdc_dagster.report.plots import boxplot_png, grouped_bars_png, histogram_png, histograms_png, risk_utility_map_png
