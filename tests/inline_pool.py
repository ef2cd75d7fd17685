"""The walk's worker pool run in this process (the interface of :class:`sdc_dagster.search.parallel.NodePool`):
a walk with several workers (its checks made ahead of it, its records of them, the evaluations past
its stop discarded) without starting processes, so no worker spends CPU seconds of its own."""

from concurrent.futures import Future

from sdc_dagster.search.nodes import evaluate_node


class InlinePool:
    """Evaluates each node at its submission, in this process; ``submitted`` lists the nodes in the
    order the walk sent them. Each result reports 0 CPU seconds of a worker."""

    def __init__(self, workers, data, spec, plain_spec, lattice, space):
        self.workers, self.args = workers, (data, spec, plain_spec, lattice, space)
        self.submitted = []

    def submit(self, node, may_suppress, is_anonymous, recode_loss):
        data, spec, plain_spec, lattice, space = self.args
        self.submitted.append(node)
        future = Future()
        future.set_result((evaluate_node(data, spec if may_suppress else plain_spec, lattice, space, node,
                                         is_anonymous, recode_loss), 0.0))
        return future

    def close(self):
        pass
