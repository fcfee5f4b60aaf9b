"""What an operator chooses a deployment on: output tokens per second per GPU
(what a token costs) against tokens per second per user (how fast each user
is served), with and without speculation, over a closed loop's concurrency.

A serving benchmark keeps C users in a closed loop: each sends its next
request when the last one finishes. At each concurrency C the deployment
decodes the sequences memory holds (:meth:`~speclib.core.deployment.Deployment.max_batch`
at the workload's mean decode context, with the draft's slots when it
speculates), and every step also carries the prefill of the requests that
arrive meanwhile (:func:`speclib.tpot` with ``workload=``). A plain step of
``B`` sequences takes ``tau_0 = C_0 + p`` per output token; a speculative
step of draft length gamma takes ``C_gamma`` and commits ``N`` tokens per
sequence, so ``tau = C_gamma / N + p``
(:data:`speclib.formulas.workload.speculative_tpot_expr`). A user then sees
``B_r / (C tau)`` tokens per second, ``B_r`` the sequences decoding at once
(:data:`~speclib.formulas.workload.user_speed_expr`), and the deployment
makes ``B_r / (tau n)`` output tokens per second per GPU over its ``n = tp``
GPUs (:data:`~speclib.formulas.workload.throughput_per_gpu_expr`); a GPU-hour
price turns that into the price of a million output tokens
(:data:`~speclib.formulas.workload.cost_per_million_tokens_expr`).

Both arms price the deployment's whole step (:meth:`Deployment.pricing`);
with speculation, the drafter is the deployment's own, else the model's MTP
preset where it has one, else the paper's constant drafter cost. ``gamma``
None takes, at each concurrency, the draft length of at least one that gives
the most throughput (the speculative frontier is speculation switched on, so
that where it stops paying shows as a crossing, not as gamma* = 0). A
calibrated step gives each speculative point its 80 % cross-conformal
interval by model family (:func:`speclib.core.calibrated.interval_name`: the
stored hold-out's, acceptance's range included), a speed-up's over the plain
arm, at the draft length and batch the fit chose there.

What the time spent waiting for a first token does is left out: every user
counted decodes. Measured runs spend a few per cent of a request there, so
the model's throughput at a concurrency reads high by about that much.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from .._checks import checked_array, checked_int
from ..formulas import numpy_functions as nf
from ..presets import drafter_for
from . import acceptance as _acc
from . import calibrated as _cal
from . import drafters as _draft
from .decode import check_workload, tpot
from .deployment import Deployment, deployment_of

#: Concurrencies a frontier is drawn at unless given: 20 from 1 to 1,024, about evenly in log.
DEFAULT_CONCURRENCIES = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024)
#: The longest draft searched where ``gamma`` is None (MTP chains rarely pay past a few).
DEFAULT_GAMMA_MAX = 8
#: Where a frontier's cheapest point is searched: every whole concurrency up to this many, or up to what memory holds.
MAX_SEARCH = 1 << 14


def queued(concurrency, max_batch):
    """The sequences decoding at once when ``concurrency`` users share a
    deployment that holds ``max_batch`` of them: all of them, or what memory
    holds while the rest wait their turn (each user then decodes a share
    ``max_batch / concurrency`` of the time, :data:`~speclib.formulas.workload.user_speed_expr`).
    The one place a frontier bounds a batch by memory, by the rule
    :meth:`speclib.Deployment.running` bounds every priced batch with
    (:data:`~speclib.formulas.workload.running_batch_expr`)."""
    return nf.running_batch(concurrency, max_batch)


@dataclass(frozen=True)
class Arm:
    """One frontier, a point per concurrency: the sequences decoding at once
    (``running``), the draft length (0: plain decoding), the time per output
    token of a decoding sequence (s), the tokens per second a user sees and
    the output tokens per second per GPU; ``*_lo``/``*_hi`` their 80 %
    cross-conformal interval by model family (None without one; the plain
    arm's at its value, see :func:`frontier`); ``max_batch`` what memory holds (per draft
    length where it speculates; inf without a memory check)."""

    concurrency: np.ndarray
    running: np.ndarray
    gamma: np.ndarray
    tpot: np.ndarray
    speed_per_user: np.ndarray
    throughput_per_gpu: np.ndarray
    max_batch: np.ndarray
    speed_lo: np.ndarray = None
    speed_hi: np.ndarray = None
    throughput_lo: np.ndarray = None
    throughput_hi: np.ndarray = None

    def cost_per_million(self, price_per_gpu_hour):
        """The price of a million output tokens at each point (the unit of ``price_per_gpu_hour``)."""
        return nf.cost_per_million_tokens(check_price(price_per_gpu_hour), self.throughput_per_gpu)

    @property
    def queueing(self) -> np.ndarray:
        """Where users wait for a place in the batch."""
        return self.running < self.concurrency

    def point(self, i: int, price=None) -> dict:
        out = {"concurrency": int(self.concurrency[i]), "running": int(self.running[i]), "gamma": int(self.gamma[i]),
               "tpot_s": float(self.tpot[i]), "tokens_per_user": float(self.speed_per_user[i]),
               "tokens_per_gpu": float(self.throughput_per_gpu[i])}
        if self.speed_lo is not None:
            out["tokens_per_user_80"] = [float(self.speed_lo[i]), float(self.speed_hi[i])]
            out["tokens_per_gpu_80"] = [float(self.throughput_lo[i]), float(self.throughput_hi[i])]
        if price is not None:
            out["cost_per_million"] = float(self.cost_per_million(price)[i])
        return out


def check_price(price):
    """A GPU-hour price: a number in (0, inf)."""
    return checked_array("price_per_gpu_hour", price, lo=0, lo_open=True)


@dataclass(frozen=True)
class Crossover:
    """Where two frontiers cross, compared over the speeds per user both
    reach (``lowest`` to ``highest``): ``speed`` (tokens/s per user; NaN
    where they do not cross there) and ``above``, the arm that gives more
    throughput per GPU at speeds above it ("speculative" or "plain"; where
    they do not cross, the arm that wins throughout; "" where the two share
    no speed)."""

    speed: float
    lowest: float
    highest: float
    above: str

    @property
    def crosses(self) -> bool:
        return bool(np.isfinite(self.speed))

    def __str__(self) -> str:
        if not self.above:
            return "the two frontiers share no speed per user"
        if not self.crosses:
            who = "speculation" if self.above == "speculative" else "plain decoding"
            return (f"{who} gives more tokens per GPU at every speed both reach ({self.lowest:.3g} to "
                    f"{self.highest:.3g} tokens/s per user): they do not cross there")
        below = "plain decoding" if self.above == "speculative" else "speculation"
        above = "speculation" if self.above == "speculative" else "plain decoding"
        return (f"the frontiers cross at {self.speed:.3g} tokens/s per user: {above} gives more tokens per GPU "
                f"above it, {below} below")


def crossover(plain_speed, plain_throughput, spec_speed, spec_throughput, points: int = 400) -> Crossover:
    """Where the speculative frontier (speed per user, throughput per GPU)
    crosses the plain one, each interpolated linearly in log-log between
    its points over the speeds both reach: the arm that wins at the fastest
    of them wins above the crossing, the one that wins at the slowest below
    it, and the crossing is the fastest speed below which the slower end's
    winner wins throughout (a measured frontier's excursions between
    sparse points, won back before the slowest speed, are not a crossing)."""
    ps, px = _sorted(plain_speed, plain_throughput)
    ss, sx = _sorted(spec_speed, spec_throughput)
    if ps.size < 2 or ss.size < 2:
        return Crossover(float("nan"), float("nan"), float("nan"), "")
    lo, hi = max(ps[0], ss[0]), min(ps[-1], ss[-1])
    if not lo < hi:
        return Crossover(float("nan"), float(lo), float(hi), "")
    grid = np.linspace(np.log(hi), np.log(lo), points)  # fastest first
    d = np.interp(grid, np.log(ss), np.log(sx)) - np.interp(grid, np.log(ps), np.log(px))
    wins = d > 0  # speculation gives more (a tie goes to plain decoding)
    above = "speculative" if wins[0] else "plain"
    if wins[-1] == wins[0]:
        return Crossover(float("nan"), float(lo), float(hi), above)
    k = int(np.flatnonzero(wins != wins[-1])[-1])  # the last point the faster end's winner still wins
    t = d[k] / (d[k] - d[k + 1])  # linear in log speed between the grid points
    return Crossover(float(np.exp(grid[k] + t * (grid[k + 1] - grid[k]))), float(lo), float(hi), above)


def _sorted(speed, throughput):
    s, x = np.asarray(speed, dtype=float).ravel(), np.asarray(throughput, dtype=float).ravel()
    keep = np.isfinite(s) & np.isfinite(x) & (s > 0) & (x > 0)
    order = np.argsort(s[keep])
    return s[keep][order], x[keep][order]


class _Pricer:
    """The two arms' time per output token under one step time."""

    def __init__(self, plain: Deployment, spec: Deployment, acceptance, prompt, output, context):
        self.plain_dep, self.spec_dep = plain, spec
        self.priced = spec.pricing(whole_step=True)
        self.acceptance, self.prompt, self.output, self.context = acceptance, prompt, output, context

    def plain(self, B):
        return np.asarray(tpot(B, self.context, workload=(self.prompt, self.output), deployment=self.plain_dep))

    def spec(self, gamma, B):
        """tau of ``gamma`` (whole numbers >= 1) at batches ``B`` (broadcast together)."""
        S = np.full(np.broadcast(gamma, B).shape, self.context)
        B = np.broadcast_to(B, S.shape).astype(float)
        with_prefill = tpot(B, S, workload=(self.prompt, self.output), deployment=self.plain_dep)
        prefill = np.asarray(with_prefill) - np.asarray(tpot(B, S, deployment=self.plain_dep))
        return nf.speculative_tpot(self.priced.step(np.asarray(gamma, dtype=float), B, S),
                                   self.acceptance.committed(np.asarray(gamma, dtype=float)), prefill)

    def with_step_time(self, step_time) -> "_Pricer":
        return _Pricer(self.plain_dep.replace(step_time=step_time), self.spec_dep.replace(step_time=step_time),
                       self.acceptance, self.prompt, self.output, self.context)


@dataclass(frozen=True)
class Frontier:
    """Both frontiers of one deployment and workload (see the module notes):
    ``plain`` and ``speculative`` (:class:`Arm`), the deployments they were
    priced on, the workload's mean prompt and output lengths and mean decode
    context, the acceptance, and ``notes`` (one line for each thing the
    prediction extrapolates or assumes)."""

    deployment: Deployment
    speculative_deployment: Deployment
    prompt: float
    output: float
    context: float
    acceptance: object
    plain: Arm
    speculative: Arm
    notes: tuple = ()
    _pricer: object = dataclasses.field(default=None, repr=False, compare=False)
    _gammas: tuple = dataclasses.field(default=(), repr=False, compare=False)
    #: the notes that say where the prediction extrapolates beyond its fit (the calibration's)
    extrapolates: tuple = ()
    #: the checkpoint asked for where the preset's architecture serves it under another name
    #: (DeepSeek-R1 on DeepSeek-V3's); "": the preset itself
    served_as: str = ""

    @property
    def model_name(self) -> str:
        """The model as the headers and the plot's title name it: "DeepSeek-R1
        (DeepSeek-V3 architecture)" where :attr:`served_as` names another
        checkpoint, else the preset's name."""
        name = self.deployment.model.name
        return name if self.served_as in ("", name) else f"{self.served_as} ({name} architecture)"

    @property
    def gpus(self) -> int:
        return self.deployment.tp

    def crossover(self) -> Crossover:
        """Where the speculative frontier crosses the plain one (:func:`crossover`)."""
        return crossover(self.plain.speed_per_user, self.plain.throughput_per_gpu, self.speculative.speed_per_user,
                         self.speculative.throughput_per_gpu)

    def cost_per_million(self, price_per_gpu_hour) -> dict:
        """{"plain": ..., "speculative": ...}: the price of a million output tokens at each point."""
        return {"plain": self.plain.cost_per_million(price_per_gpu_hour),
                "speculative": self.speculative.cost_per_million(price_per_gpu_hour)}

    def cheapest(self, min_tokens_per_user, price_per_gpu_hour=None) -> dict:
        """The cheapest configuration of each arm that serves every user at
        least ``min_tokens_per_user`` tokens per second (the most throughput
        per GPU among those that do), searched over every
        whole concurrency up to what memory holds (or the frontier's largest
        concurrency without a memory check): {"plain": point or None,
        "speculative": point or None, "saving": 1 - speculative cost / plain
        cost (None unless both reach it; it does not depend on the price),
        "saving_80": its interval where the frontier has one, the speculative
        arm's cross-conformal interval by model family,
        :func:`speclib.core.calibrated.interval_name`}. A point is :meth:`Arm.point`'s dict, with its cost at
        ``price_per_gpu_hour`` where one is given. A target no configuration
        reaches is a ValueError."""
        price = None if price_per_gpu_hour is None else float(check_price(price_per_gpu_hour))
        target = float(checked_array("min_tokens_per_user", min_tokens_per_user, lo=0, lo_open=True))
        tops = [np.max(self.plain.max_batch), np.max(self.speculative.max_batch)]
        top = int(min(max(tops), MAX_SEARCH)) if np.all(np.isfinite(tops)) else int(np.max(self.plain.concurrency))
        C = np.arange(1, max(top, 1) + 1, dtype=float)
        plain, spec = _arms(self._pricer, C, self._gammas, self.plain.max_batch, self.speculative.max_batch, self.gpus)
        fastest = max(float(np.max(plain.speed_per_user)), float(np.max(spec.speed_per_user)))
        if target > fastest:
            raise ValueError(f"min_tokens_per_user must be at most {fastest:.4g}, the most tokens per second per user "
                             f"any configuration of this deployment reaches (one user); got {target:g}")
        out = {}
        for name, arm in (("plain", plain), ("speculative", spec)):
            ok = arm.speed_per_user >= target
            out[name] = arm.point(int(np.argmax(np.where(ok, arm.throughput_per_gpu, -np.inf))), price) \
                if ok.any() else None
        out["saving"] = out["saving_80"] = None
        if out["plain"] and out["speculative"]:
            # 1 - cost_spec / cost_plain = 1 - x_plain / x_spec, whatever the price
            out["saving"] = 1.0 - out["plain"]["tokens_per_gpu"] / out["speculative"]["tokens_per_gpu"]
            if self.speculative.speed_lo is not None:
                # saving = 1 - x_plain / x_spec: the speculative arm's gain over plain decoding, a speed-up,
                # through its cross-conformal interval by model family
                s, acc = out["speculative"], self._pricer.acceptance
                g = np.float64(s["gamma"])
                x_lo, x_hi = (float(x) for x in _cal.conformal_bounds(
                    s["tokens_per_gpu"], acc.committed(g), _cal.acceptance_range(acc, g), self.deployment.model))
                x_p = out["plain"]["tokens_per_gpu"]
                out["saving_80"] = (1.0 - x_p / x_lo if x_lo > 0 else -np.inf, 1.0 - x_p / x_hi)
        return out

    def rows(self, price_per_gpu_hour=None) -> list:
        """One dict per point, the plain arm's then the speculative arm's (what ``--format csv`` writes)."""
        out = []
        for name, arm in (("plain", self.plain), ("speculative", self.speculative)):
            out += [{"arm": name, **arm.point(i, price_per_gpu_hour)} for i in range(arm.concurrency.size)]
        return out


def _draws(step_time) -> tuple:
    calibration = _cal.calibration_of(step_time)
    return calibration.draw_calibrations() if calibration is not None and calibration.draws else ()


def _arms(pricer: _Pricer, C, gammas, plain_max, spec_max, gpus) -> tuple:
    """Both arms at concurrencies ``C`` (no intervals); the speculative arm at
    the draft length of ``gammas`` that gives the most throughput at each."""
    B0 = queued(C, plain_max)
    tau0 = pricer.plain(B0)
    plain = Arm(C, B0, np.zeros(C.shape, dtype=int), tau0, nf.user_speed(B0, C, tau0),
                nf.throughput_per_gpu(B0, tau0, gpus), np.asarray(plain_max, dtype=float))
    G = np.asarray(gammas, dtype=float)[:, None]
    Bg = queued(C[None, :], np.asarray(spec_max, dtype=float)[:, None])
    taus = pricer.spec(G, Bg)
    x = nf.throughput_per_gpu(Bg, taus, gpus)
    best = np.argmax(x, axis=0)  # ties: the shorter draft
    pick = lambda a: np.take_along_axis(np.broadcast_to(a, x.shape), best[None], axis=0)[0]  # noqa: E731
    B, tau = pick(Bg), pick(taus)
    spec = Arm(C, B, np.asarray(gammas, dtype=int)[best], tau, nf.user_speed(B, C, tau),
               nf.throughput_per_gpu(B, tau, gpus), np.asarray(spec_max, dtype=float))
    return plain, spec


def _with_interval(arm: Arm, lo_rate, hi_rate, gpus: int) -> Arm:
    """``arm`` with each point's interval from the bounds of the rate a decoding sequence sees."""
    share = arm.running / arm.concurrency
    return dataclasses.replace(arm, speed_lo=lo_rate * share, speed_hi=hi_rate * share,
                               throughput_lo=lo_rate * arm.running / gpus, throughput_hi=hi_rate * arm.running / gpus)


def speculative_deployment(deployment: Deployment) -> Deployment:
    """The deployment a frontier speculates with: ``deployment`` itself where
    it has a drafter or a constant drafter cost, else with its model's MTP
    preset where there is one (DeepSeek-V3/R1's, V4-Flash's, Qwen3.6's),
    else as it is (the paper's constant drafter cost)."""
    if deployment.drafter is not None or deployment.c_draft is not None or deployment.cost_model is not None:
        return deployment
    preset = drafter_for(deployment.model, "mtp")
    return deployment if preset is None else deployment.replace(drafter=preset)


def frontier(deployment=None, workload="1k1k", *, gamma=None, alpha=None, concurrencies=None,
             gamma_max: int = DEFAULT_GAMMA_MAX, interval=None, model=None, hardware=None) -> Frontier:
    """Throughput per GPU against speed per user, with and without
    speculation, at each concurrency (see the module notes).

    ``deployment`` (or ``model``/``hardware``, the shorthand): what is
    priced, its whole step (a ``cost_model`` is refused). ``workload``: a
    name of :data:`speclib.core.decode.WORKLOADS` or an (input, output)
    pair of mean lengths. ``gamma``: the draft length (a whole number >= 1),
    or None for the best at each concurrency up to ``gamma_max``.
    ``alpha``: the acceptance (a number, a
    :class:`~speclib.core.acceptance.SurvivalCurve`, or None for the
    drafter preset's measured curve). ``concurrencies``: whole numbers >= 1
    (default :data:`DEFAULT_CONCURRENCIES`). ``interval``: each point's 80 %
    cross-conformal interval by model family
    (:func:`speclib.core.calibrated.interval_name`: acceptance's stated range
    and the stored hold-out's half-width), the speculative arm's as a
    speed-up over the plain arm at its concurrency; the plain arm's TPOT is
    held out on too few families for a finite one, so its bounds are its
    value (None: where the step is calibrated; True: required)."""
    dep = deployment_of(deployment, model, hardware)
    if dep.cost_model is not None:
        raise ValueError("deployment: a frontier prices the whole model's step (give the model and hardware, not "
                         "cost_model)")
    prompt, output = check_workload(workload)
    context = float(nf.mean_decode_context(prompt, output))
    C = checked_array("concurrencies", DEFAULT_CONCURRENCIES if concurrencies is None else concurrencies, lo=1,
                      integer=True).ravel()
    C = np.unique(C)
    spec_dep = speculative_deployment(dep)
    plain_dep = dep.replace(drafter=None, c_draft=None, drafter_weights=None)
    priced = spec_dep.pricing(whole_step=True)
    acceptance = _acc.Acceptance.of(alpha, priced)
    if acceptance.curve is None and np.ndim(acceptance.alpha):
        raise ValueError(f"alpha must be one number in [0, 1] (or a SurvivalCurve) for a frontier; got {alpha!r}")
    gamma_max = checked_int("gamma_max", gamma_max, lo=1, hi=64)
    top = min(x for x in (gamma_max, acceptance.max_gamma, priced.max_gamma) if x is not None)
    if gamma is None:
        gammas = tuple(range(1, top + 1))
    else:
        g = checked_int("gamma", gamma, lo=1, hi=4096)
        _draft.check_gamma_for_drafter(acceptance.checked_gamma(g), priced.drafter)
        gammas = (g,)
    if dep.reserve is None:
        plain_max, spec_max = np.inf, np.full(len(gammas), np.inf)
    else:
        plain_max = float(plain_dep.max_batch(context))
        spec_max = np.atleast_1d(spec_dep.max_batch(context, np.asarray(gammas))).astype(float)
        if plain_max < 1 or np.any(spec_max < 1):
            raise ValueError(f"deployment: {dep.tp} x {dep.hardware.name} cannot hold {dep.model.name}'s weights and "
                             f"one sequence of {context:,.0f} tokens (give more GPUs: tp)")
    pricer = _Pricer(plain_dep, spec_dep, acceptance, prompt, output, context)
    plain, spec = _arms(pricer, C, gammas, plain_max, spec_max, dep.tp)
    draws = _draws(dep.step_time)
    if interval is None:
        interval = bool(draws)
    elif interval:
        _cal.draws_of(dep.step_time)  # a ValueError where the step has none
    if interval:
        # the speculative arm's cross-conformal interval by model family, a speed-up's over the plain arm at the
        # same concurrency (acceptance's range, the stored hold-out's half-width); the plain arm's own TPOT is
        # held out on too few families for a finite one (:func:`speclib.core.calibrated.half_width`, "decode"),
        # so it is drawn at its value
        rate = 1.0 / spec.tpot
        n = acceptance.committed(spec.gamma.astype(float))
        lo, hi = _cal.conformal_bounds(rate, n, _cal.acceptance_range(acceptance, spec.gamma.astype(float)),
                                       dep.model)
        plain_rate = 1.0 / plain.tpot
        plain = _with_interval(plain, plain_rate, plain_rate, dep.tp)
        spec = _with_interval(spec, lo, hi, dep.tp)
    notes = []
    notes += dep.extrapolates(float(C.max()), float(max(gammas)) + 1.0, context)
    extrapolates = tuple(dict.fromkeys(notes))
    for name, arm in (("plain decoding", plain), ("speculation", spec)):
        if arm.queueing.any():
            first = int(arm.concurrency[np.argmax(arm.queueing)])
            notes.append(f"{name}: from {first} users memory holds {int(arm.running[np.argmax(arm.queueing)])} "
                         "sequences; the rest wait their turn, so each user's speed falls and the throughput stays")
    return Frontier(plain_dep, spec_dep, prompt, output, context, acceptance, plain, spec, tuple(dict.fromkeys(notes)),
                    pricer, gammas, extrapolates=extrapolates)
