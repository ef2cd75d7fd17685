"""The executor of the per-region grid job on Dask (``dagster-dask``), for regions past one machine;
``sdc_dagster/definitions.py`` assembles the job (``grid_region_dask_job``) with the rest.

dagster-dask 0.29 cannot submit runs of dynamically partitioned jobs: Dask's task parser walks
tuples (a ``DagsterRun`` is one) and fails on the ``KeyRangesPartitionsSubset`` record of such
runs. :func:`region_dask_executor` is dagster-dask's executor with the run passed serialised
(Dagster's public ``serialize_value`` / ``deserialize_value``); everything else is dagster-dask's.
"""

from __future__ import annotations

import contextlib
from dagster import DagsterRun, deserialize_value, executor, multiple_process_executor_requirements, serialize_value

from sdc_dagster.validation import check_option


class _SerializedRun:
    """A DagsterRun as serdes text, opaque to Dask's task parser."""

    def __init__(self, text: str):
        self.text = text


def _run_step_on_dask(dependencies, recon_job, run: _SerializedRun, run_config, step_keys, instance_ref, known_state):
    """Worker side: the dagster-dask step function, with the run deserialised first."""
    from dagster_dask.executor import query_on_dask_worker

    dagster_run = deserialize_value(run.text, DagsterRun)
    return query_on_dask_worker(dependencies, recon_job, dagster_run, run_config, step_keys, instance_ref, known_state)


def region_dask_executor():
    """dagster-dask's executor (same config: ``cluster: {existing: {address}}`` or ``{local: {...}}``) for
    the region jobs: steps are submitted exactly as dagster-dask does, with the run passed serialised."""
    import dask.distributed
    from dagster_dask.executor import DaskExecutor, dask_executor, get_dask_resource_requirements

    class RegionDaskExecutor(DaskExecutor):
        def execute(self, plan_context, execution_plan):
            check_option(self.cluster_type, "region Dask executor: cluster", ("existing", "local"))
            run = _SerializedRun(serialize_value(plan_context.dagster_run))
            with contextlib.ExitStack() as stack:
                if self.cluster_type == "existing":
                    cluster = self.cluster_configuration["address"]
                else:  # a local cluster lives for this run only
                    cluster = stack.enter_context(dask.distributed.LocalCluster(**self.build_dict(plan_context.job_name)))
                client = stack.enter_context(dask.distributed.Client(cluster))
                futures = {}
                for level in execution_plan.get_steps_to_execute_by_level():
                    for step in level:
                        needs = [futures[key] for inp in step.step_inputs for key in inp.dependency_keys]
                        futures[step.key] = client.submit(
                            _run_step_on_dask, needs, plan_context.reconstructable_job, run, plan_context.run_config,
                            [step.key], plan_context.instance.get_ref(), execution_plan.known_state,
                            key=f"{plan_context.job_name}.{step.key}", resources=get_dask_resource_requirements(step.tags),
                        )
                for _, events in dask.distributed.as_completed(list(futures.values()), with_results=True):
                    yield from events

    @executor(name="dask", config_schema=dask_executor.config_schema,
              requirements=multiple_process_executor_requirements())
    def region_dask(init_context):
        ((cluster_type, configuration),) = init_context.executor_config["cluster"].items()
        return RegionDaskExecutor(cluster_type, configuration)

    return region_dask
