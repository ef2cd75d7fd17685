"""``sdc plan SURVEY WAVE [--write]``: the search of a wave's protection plans and its front."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from sdc_dagster.cli.home import prepare_environment, spec_catalogue, unknown_survey, unsafe_names
from sdc_dagster.cli.status import EXIT_BAD_DATA, EXIT_BAD_SPEC, EXIT_OK, EXIT_USAGE, EXIT_WITHHELD
from sdc_dagster.files import atomic_path

def run_plan(survey_name: str, wave: str, *, data_file: str | None = None, write: bool = False,
             home: str | None = None, out=None) -> int:
    """Search the plans of a wave (:func:`sdc_dagster.search.wave.search_wave`, with the spec's
    ``search:`` options, whether or not the wave chain searches) and print the front, and when it
    recommends no plan what it would take (:mod:`sdc_dagster.pipeline.relaxations`); with
    ``write``, add the front's plans to the spec file as named plans ``search_<n>``
    (:func:`~sdc_dagster.search.front.front_as_yaml`) that can be edited and run like any other."""
    out = out or sys.stdout
    prepare_environment(home)
    if unsafe_names("plan", out, ("survey name", survey_name), ("wave id", wave)):
        return EXIT_USAGE
    import yaml

    from sdc_dagster.pipeline import relaxations
    from sdc_dagster.search import wave as search
    from sdc_dagster.search.outcome import optimality
    from sdc_dagster.errors import SDCInputError
    from sdc_dagster.search.front import front_as_yaml
    from sdc_dagster.resources.storage import landing_dir
    from sdc_dagster.spec.sources import file_format, locate_wave_file, read_wave_file
    from sdc_dagster.spec import SpecError, load_spec, spec_text_with_plans

    specs, broken = spec_catalogue("plan", out, survey_name)
    if survey_name not in specs:
        for error in (error for spec in broken for error in spec.error.errors):
            print(f"sdc plan: bad spec: {error}", file=out)
        return EXIT_BAD_SPEC if broken else unknown_survey("plan", survey_name, specs, out)
    spec = specs[survey_name]
    try:
        path = Path(data_file) if data_file else locate_wave_file(spec, wave, landing_dir())
        data = read_wave_file(spec, path, source=f"{spec.survey} wave {wave} ({path.name}, "
                                                 f"{file_format(path, default=spec.source.format)})")
        print(f"== {survey_name} wave {wave} ({path.name}, {len(data)} records): searching ...", file=out, flush=True)
        started = time.monotonic()
        found = search.search_wave(data, spec, progress=lambda done, total, note: print(
            f"   {time.monotonic() - started:6.1f}s  {search.progress_line(done, total, note)}", file=out, flush=True))
    except SDCInputError as exc:
        print(f"sdc plan: bad data: {exc}", file=out)
        return EXIT_BAD_DATA
    print(f"{found.nodes_evaluated} of {found.nodes_total} plans evaluated in {found.seconds:.1f} s "
          f"({'exhaustive' if found.exhaustive else found.bound})" + (
              f"; the recommended plan is {optimality(found.nodes_evaluated, found.nodes_total, found.proven, found.loss_bound)}"
              if found.recommended is not None else ""), file=out)
    # nothing recommended: the closest plans and the cheapest change that makes one eligible
    advice = relaxations.what_it_would_take(data, spec, found, note=lambda line: print(
        f"   {time.monotonic() - started:6.1f}s  {line}", file=out, flush=True))
    advice_text = "\n".join(advice.lines()) if advice is not None else ""
    if not found.front:
        print("sdc plan: no plan of the search space meets the risk target", file=out)
        print(advice_text, file=out)
        return EXIT_WITHHELD
    with pd_display():
        print(found.front_frame().set_index("plan").to_string(), file=out)
    if found.recommended is not None:
        print(f"recommended: {found.recommended.plan.description}", file=out)
    else:
        print(f"sdc plan: no plan of the front passes every blocking check\n{advice_text}", file=out)
    if not write:
        return EXIT_OK
    # a plan that changes nothing (the keys as they are meet the target) is not a plan a spec can hold
    front = [candidate for candidate in found.front if candidate.plan.steps]
    if not front:
        print("sdc plan: the front's plan changes nothing (the keys as they are meet the target): no plan added",
              file=out)
        return EXIT_OK
    plans = yaml.safe_load(front_as_yaml(front, taken=[p.name for p in spec.plans]))["plans"]
    text = spec_text_with_plans(spec.spec_path.read_text(), plans)
    try:
        with atomic_path(spec.spec_path) as candidate:
            candidate.write_text(text, encoding="utf-8")
            load_spec(candidate)  # the spec is replaced only by a spec that loads
    except SpecError as exc:
        print(f"sdc plan: the spec with the searched plans does not load: {exc}", file=out)
        return EXIT_BAD_SPEC
    print(f"sdc plan: added {', '.join(plans)} to {spec.spec_path}", file=out)
    return EXIT_OK


def pd_display():
    """Print every column of a table (pandas' option context)."""
    import pandas as pd

    return pd.option_context("display.width", 200, "display.max_columns", None, "display.max_colwidth", 80)
