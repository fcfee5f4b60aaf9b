"""The time per output token of plain decoding, priced by a deployment's own
whole-model step: the step every speculative prediction divides by.

One step of ``B`` sequences at context ``S`` produces one token per
sequence, so its time is the time per output token; a serving benchmark's
closed loop also runs the prefill of the requests that arrive while it
decodes (:data:`speclib.formulas.workload.prefill_share_roofline_expr`), which
``workload=`` adds. The step is the deployment's
(:meth:`speclib.core.deployment.Deployment.pricing`): dense, mixture of
experts, MLA or hybrid, on one GPU or split over ``tp`` by its layout, at the
roofline or calibrated. There is no other path to a TPOT.
"""
from __future__ import annotations

import numpy as np

from .._checks import checked_array, scalar_or_array
from . import calibrated as _cal
from .deployment import deployment_of, refuse_unheld

#: Serving workloads by name: (input, output) tokens per request.
WORKLOADS = {"1k1k": (1024, 1024), "1k8k": (1024, 8192), "8k1k": (8192, 1024)}


def check_workload(workload) -> tuple:
    """``workload`` as (input, output) token counts: a name of
    :data:`WORKLOADS` or a pair of positive lengths."""
    if isinstance(workload, str):
        if workload not in WORKLOADS:
            raise ValueError(f"workload must be one of {', '.join(map(repr, WORKLOADS))} or an (input, output) pair "
                             f"of lengths; got {workload!r}")
        return WORKLOADS[workload]
    try:
        prompt, output = workload
    except (TypeError, ValueError):
        raise ValueError(f"workload must be a workload's name ({', '.join(map(repr, WORKLOADS))}) or an (input, "
                         f"output) pair of lengths; got {workload!r}") from None
    return (float(checked_array("workload input", prompt, lo=0, lo_open=True)),
            float(checked_array("workload output", output, lo=1)))


def tpot(batch, context, *, workload=None, model=None, hardware=None, deployment=None):
    """Seconds per output token of plain decoding ``batch`` sequences at
    ``context`` cached tokens each, by ``deployment``'s whole-model step
    (``model=``/``hardware=``: the default deployment of that model and
    chip). With ``workload`` (a name of :data:`WORKLOADS` or an (input,
    output) pair) the prefill of arriving requests in a closed loop is added:
    at its roofline on the deployment's layout, at the calibration's
    efficiency for a calibrated step. Broadcasts over batch and context.

    What memory holds: ``batch`` is a closed loop's concurrency. With the
    deployment's memory check (a ``reserve``) it decodes the sequences
    memory holds (:meth:`~speclib.core.deployment.Deployment.running`), and
    the rest wait in the queue, where their wait is time to a first token:
    above :meth:`~speclib.core.deployment.Deployment.max_batch` the time per
    output token is that of the batch memory holds. Where not one sequence
    fits, an array's result is NaN and one point is a ``ValueError`` naming
    ``context``. ``reserve=None`` prices every sequence asked for at once."""
    dep = deployment_of(deployment, model, hardware)
    B = checked_array("batch", batch, lo=0, lo_open=True)
    S = checked_array("context", context, lo=0)
    priced = dep.pricing(whole_step=True)
    refuse_unheld(dep, priced, B, S)
    running, out = priced.plain_at(B, S)
    if workload is not None:
        prompt, output = check_workload(workload)
        calibration = _cal.calibration_of(dep.step_time)
        factor = 1.0 if calibration is None else calibration.prefill_factor
        out = out + factor * dep.parallel_step().prefill_share(running, prompt, output)
    return scalar_or_array(np.where(running > 0, out, np.nan) if priced.holds is not None else out)
