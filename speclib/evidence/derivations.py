"""The appendix derivations as step lists that sympy computes.

Every step is obtained from the closed forms speclib already holds
(:mod:`speclib.core.moe`, :mod:`speclib.core.attention`, :mod:`speclib.core.cost`,
:mod:`speclib.core.acceptance`, :mod:`speclib.core.speculation`) by a sympy operation:
a derivative, a limit, a series, a substitution, a ``solve`` or ``nsolve``, a
summation. Only the labels are prose. Steps that assert an identity (the
derivative *equals* the paper's form, the reduction *is* Leviathan et al.'s
speedup) are checked with ``simplify`` when the derivation is built, so a
derivation that renders is one whose identities hold.

A :class:`Derivation` displays in Jupyter (and in the MyST-NB book) as
Markdown with one display-maths block per step, and has a deterministic plain
text ``repr`` for ``pytest --nbval``::

    from speclib.evidence import derivations
    derivations.experts_activated()          # the whole step list
    derivations.experts_activated()["knee"]  # one step, by key

Every builder takes ``model=`` / ``hardware=`` like the rest of speclib
(default DeepSeek-V4-Flash on one B200) and is cached.
"""
from __future__ import annotations

import functools
import html
import itertools
from dataclasses import dataclass
from typing import Iterator, Optional

from .._extras import require as _require

_require("speclib.evidence.derivations", ("sympy",))

import sympy as sp  # noqa: E402

from ..formulas import acceptance as _acc
from ..formulas import attention as _attn
from ..formulas import cost as _cost
from ..formulas import moe as _moe
from ..formulas import speculation as _spec
from ..formulas import parallel as _par
from ..formulas import workload as _work
from ..presets import KV_BYTES, LLAMA_3_70B, GQAAttention, MLAAttention, default_interconnect, resolve, weight_bytes_for
from ..presets import interconnect as presets_interconnect
from ..core import parallel as _parallel_core
from speclib.evidence import validation as _val

# --------------------------------------------------------------------------
# The step-list structure
# --------------------------------------------------------------------------


def _format_number(value: float) -> str:
    """Five significant figures; integers written out (with thousands
    separators) from 10^4 up, so the text never depends on float noise."""
    if value == 0:
        return "0"
    if abs(value) >= 1e4:
        return f"{value:,.0f}"
    return f"{value:.5g}"


@dataclass(frozen=True)
class Step:
    """One line of a derivation: a short label and the sympy objects it shows.

    ``terms`` are shown joined by "=" (a one-term step is an expression or a
    relation such as ``p > r``); ``approx``, when set, is a number rendered
    after them as "≈ value" (five significant figures).
    """

    key: str
    label: str
    terms: tuple
    approx: Optional[sp.Expr] = None

    @property
    def expr(self) -> sp.Basic:
        """The step as one sympy object: the first term equated to the last."""
        if len(self.terms) == 1:
            return self.terms[0]
        return sp.Eq(self.terms[0], self.terms[-1], evaluate=False)

    @property
    def rhs(self) -> sp.Basic:
        return self.terms[-1]

    @property
    def value(self) -> float:
        """The step's number: ``approx`` if it has one, else the last term."""
        return float(self.approx if self.approx is not None else self.terms[-1])

    def latex(self) -> str:
        body = " = ".join(sp.latex(t) for t in self.terms)
        if self.approx is not None:
            body += r" \approx " + _format_number(float(self.approx)).replace(",", "{,}")
        return body

    def text(self) -> str:
        body = " = ".join(sp.sstr(t) for t in self.terms)
        if self.approx is not None:
            body += " ≈ " + _format_number(float(self.approx))
        return f"{self.label}: {body}"

    def __repr__(self) -> str:
        return self.text()

    def _repr_latex_(self) -> str:
        return f"$\\displaystyle {self.latex()}$"

    def _repr_markdown_(self) -> str:
        return f"{self.label}\n\n$$\n{self.latex()}\n$$\n"

    def _repr_html_(self) -> str:
        return f"<p>{html.escape(self.label)}</p>\n{_html_math(self.latex())}"


@dataclass(frozen=True)
class Derivation:
    """A titled sequence of :class:`Step`; index it by step key or position."""

    title: str
    steps: tuple

    def __post_init__(self):
        keys = [s.key for s in self.steps]
        if len(set(keys)) != len(keys):
            raise ValueError(f"duplicate step keys in {self.title!r}: {keys}")

    def __iter__(self) -> Iterator[Step]:
        return iter(self.steps)

    def __len__(self) -> int:
        return len(self.steps)

    def __getitem__(self, key) -> Step:
        if isinstance(key, int):
            return self.steps[key]
        for step in self.steps:
            if step.key == key:
                return step
        raise KeyError(f"{self.title!r} has no step {key!r}; steps: {', '.join(self.keys())}")

    def keys(self) -> list:
        return [s.key for s in self.steps]

    @property
    def final(self) -> Step:
        return self.steps[-1]

    def text(self) -> str:
        lines = [self.title]
        lines += [f"  ({i}) {s.text()}" for i, s in enumerate(self.steps, 1)]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.text()

    def _repr_markdown_(self) -> str:
        parts = [f"**{self.title}**\n"]
        for i, s in enumerate(self.steps, 1):
            parts.append(f"({i}) {s.label}\n\n$$\n{s.latex()}\n$$\n")
        return "\n".join(parts)

    def _repr_html_(self) -> str:
        parts = [f'<div class="derivation">', f"<p><strong>{html.escape(self.title)}</strong></p>"]
        for i, s in enumerate(self.steps, 1):
            parts.append(f"<p>({i}) {html.escape(s.label)}</p>")
            parts.append(_html_math(s.latex()))
        parts.append("</div>")
        return "\n".join(parts)


def _html_math(latex: str) -> str:
    """A display-maths block as Sphinx's MathJax support writes one. MyST-NB
    shows a text/html output ahead of text/markdown and does not parse the
    Markdown's $$ blocks as maths; MathJax typesets elements of class "math"
    (and so does Jupyter's HTML output renderer)."""
    return f'<div class="math notranslate nohighlight">\\[{html.escape(latex, quote=False)}\\]</div>'


def _terms(expr) -> tuple:
    if isinstance(expr, sp.Equality):
        return (expr.lhs, expr.rhs)
    return (expr,)


def _holds(lhs, rhs, given=None) -> bool:
    difference = (sp.sympify(lhs) - sp.sympify(rhs)).subs(given or {}).doit()
    return sp.simplify(sp.expand_log(difference, force=True)) == 0


class _Builder:
    """Collects steps; identity steps are verified as they are added."""

    def __init__(self, title: str):
        self.title = title
        self.steps: list = []

    def show(self, key, label, *terms, approx=None):
        """Show ``terms`` joined by "=" (an ``Eq`` is split into its sides)."""
        flat = sum((_terms(sp.sympify(t)) for t in terms), ())
        self.steps.append(Step(key, label, flat, None if approx is None else sp.sympify(approx)))
        return flat[-1]

    def identity(self, key, label, shown, rhs, *, equals=None, given=None):
        """Show ``shown = rhs`` after checking with sympy that ``equals`` (by
        default ``shown`` itself) minus ``rhs`` reduces to 0, once the
        shorthand symbols in ``given`` are replaced by their definitions."""
        if not _holds(shown if equals is None else equals, rhs, given):
            raise ArithmeticError(f"{self.title}: step {key!r} does not hold: {equals or shown} != {rhs}")
        return self.show(key, label, shown, rhs)

    def check(self, lhs, rhs, what):
        """Verify an identity without showing it."""
        if not _holds(lhs, rhs):
            raise ArithmeticError(f"{self.title}: {what} does not hold: {lhs} != {rhs}")

    def value(self, key, label, *terms):
        """Show ``terms`` = value (the last term, exact), with ≈ when it is not
        an integer; an inexact (Float) value is shown as ``terms`` ≈ value."""
        *shown, value = terms
        value = sp.sympify(value)
        if value.has(sp.Float):
            return self.show(key, label, *shown, approx=value)
        return self.show(key, label, *shown, value, approx=None if value.is_Integer else value)

    def done(self) -> Derivation:
        return Derivation(self.title, tuple(self.steps))


def _decimal(x, digits: int) -> sp.Float:
    """``x`` rounded in decimal to ``digits`` significant figures (a binary
    ``Float(x, digits)`` can print a different last digit)."""
    return sp.Float(f"{float(x):.{digits}g}")


def _exact(x) -> sp.Expr:
    """A preset number as an exact sympy number: 0.53 -> 53/100, 281.25 -> 1125/4."""
    if isinstance(x, int) or float(x).is_integer():
        return sp.Integer(int(x))
    return sp.Rational(repr(float(x)))


def _require_moe(model):
    if not model.ffn.is_moe:
        raise ValueError(f"model must have a MoE FFN; {model.name} has a dense FFN")


def _require_mla(model, *, v4: bool = False):
    attn = model.attention
    if not isinstance(attn, MLAAttention):
        raise ValueError(f"model must use MLA attention; {model.name} uses {attn.kind}")
    if v4 and attn.hca_ratio is None:
        raise ValueError(f"model must have DeepSeek-V4 HCA/CSA attention; {model.name} has only MLA")


def _on(model, hardware) -> str:
    return f"{model.name} on {hardware.name}"


# --------------------------------------------------------------------------
# Appendix A: the MoE roofline
# --------------------------------------------------------------------------

_A = sp.Function("A")
_B, _k, _E, _n_s, _b, _R = _moe.B, _moe.k, _moe.E, _moe.n_s, _moe.b, _moe.R
_I_MoE = sp.Function("I_MoE")


def _moe_values(model, hardware) -> dict:
    ffn = model.ffn
    return {
        _k: sp.Integer(ffn.top_k),
        _E: sp.Integer(ffn.n_routed),
        _n_s: sp.Integer(ffn.n_shared),
        _b: _exact(ffn.weight_bytes),
        _R: _exact(hardware.ridge(ffn.precision)),
    }


def _with_A(expr, var=_B):
    """``expr`` with the coupon count written as the function A(var)."""
    return expr.subs(_moe.experts_activated_expr.subs(_B, var), _A(var))


@functools.lru_cache(maxsize=None)
def experts_activated(model=None) -> Derivation:
    """A(B) from the per-expert miss probability, its derivative, both limits
    and the knee E/k."""
    model, hardware = resolve(model, None)
    _require_moe(model)
    values = _moe_values(model, hardware)
    A_expr = _moe.experts_activated_expr
    d = _Builder("Distinct routed experts touched by a batch of B tokens")

    miss_all = 1 - A_expr / _E  # sympy cancels this to (1 - k/E)**B by itself
    d.show("miss_one", "One token misses a given expert: it is not among the k of E picked",
           sp.Function("P_miss")(1), miss_all.subs(_B, 1))
    d.show("miss_all", "B independent tokens all miss it", sp.Function("P_miss")(_B), miss_all)
    d.show("A", "Expected experts touched: E times the chance each is hit at least once", _A(_B), A_expr)

    rate = sp.diff(A_expr, _B)
    d.identity("rate", "Differentiate in B (sympy.diff); the result is the paper's A'(B) term for term",
               sp.Derivative(_A(_B), _B), _moe.experts_activated_rate_expr, equals=rate)

    # Leading order in x = k/E: (1-x)^B = exp(B log(1-x)) and log(1-x) -> -x.
    x = sp.Symbol("x", positive=True)
    log_lead = sp.series(sp.log(1 - x), x, 0, 2).removeO()
    rate_lead = rate.subs(_k, x * _E).rewrite(sp.exp).subs(sp.log(1 - x), log_lead).subs(x, _k / _E)
    d.show("rate_approx", "To leading order in k/E, log(1 - k/E) ≈ -k/E",
           sp.Derivative(_A(_B), _B), sp.simplify(rate_lead))

    small = sp.series(A_expr, _k, 0, 3)
    d.show("small_batch", "Small batch: expand the bracket in k (first term: every pick is a fresh expert)",
           _A(_B), small)
    lam = sp.Symbol("lambda", positive=True)
    A_lam = A_expr.subs(1 - _k / _E, sp.exp(-lam))
    d.show("decay_form", "Write 1 - k/E = exp(-λ); λ = -log(1 - k/E) > 0 because 0 < k < E", _A(_B), A_lam)
    big = sp.limit(A_lam, _B, sp.oo)
    d.show("large_batch", "Large batch (sympy.limit): every expert resident", sp.Limit(_A(_B), _B, sp.oo), big)

    knee = sp.solve(sp.Eq(small.removeO().coeff(_k, 1) * _k, big), _B)[0]
    d.show("knee_solve", "The knee: the no-sharing line Bk meets the ceiling E (sympy.solve)",
           sp.Symbol("B_knee"), knee)
    d.value("knee", f"{model.name} (k = {model.ffn.top_k}, E = {model.ffn.n_routed})",
            sp.Symbol("B_knee"), knee.subs(values))
    return d.done()


@functools.lru_cache(maxsize=None)
def moe_intensity(model=None, hardware=None) -> Derivation:
    """I_dense and I_MoE, the dense knee, the asymptotic ridge crossing and the
    far-out slope ratio, with the model's numbers (and the appendix's b = 1/2)."""
    model, hardware = resolve(model, hardware)
    _require_moe(model)
    values = _moe_values(model, hardware)
    half = {_b: sp.Rational(1, 2)}
    I_d = sp.Function("I_dense")
    where = f"{_on(model, hardware)}, {model.ffn.precision} ridge R = {hardware.ridge(model.ffn.precision):g}"
    d = _Builder("Arithmetic intensity of a dense FFN and of the MoE")

    d.show("dense", "Dense FFN: 2 FLOP per weight per token, each weight read once at b bytes",
           I_d(_B), _moe.dense_intensity_uncapped_expr)
    moe_generic = _with_A(_moe.moe_intensity_uncapped_expr)
    d.show("moe", "MoE: k routed and n_s shared experts per token; bytes for the distinct experts touched",
           _I_MoE(_B), moe_generic)
    d.show("moe_shared", f"{model.name} has n_s = {model.ffn.n_shared}", _I_MoE(_B),
           moe_generic.subs(_n_s, values[_n_s]))

    d.show("dense_knee_solve", "Dense knee: solve I_dense(B) = R", sp.Symbol("B_dense"), _moe.dense_knee_expr)
    d.value("dense_knee", f"... {where}, b = {model.ffn.weight_bytes:g}",
            sp.Symbol("B_dense"), _moe.dense_knee_expr.subs(values))
    d.value("dense_knee_half", "... with the appendix text's b = 1/2",
            sp.Symbol("B_dense"), _moe.dense_knee_expr.subs(half).subs(values))

    d.show("saturated", "Far out every expert is resident: put A = E",
           sp.Function("I_MoE,sat")(_B), _moe.moe_saturated_intensity_expr)
    d.show("ridge_solve", "The saturated line meets the ridge (sympy.solve)",
           sp.Symbol("B_ridge"), _moe.moe_ridge_batch_expr)
    crossing = _moe.moe_ridge_batch_expr.subs(values)
    d.value("ridge", f"... {where}, b = {model.ffn.weight_bytes:g}", sp.Symbol("B_ridge"), crossing)
    d.value("ridge_half", "... with b = 1/2", sp.Symbol("B_ridge"), _moe.moe_ridge_batch_expr.subs(half).subs(values))
    exact = sp.nsolve((_moe.moe_intensity_uncapped_expr - _R).subs(values), _B, float(crossing))
    d.value("ridge_exact", "The full curve (A < E) meets the ridge at the same batch (sympy.nsolve) ...",
            sp.Symbol("B_ridge"), exact)
    d.value("unused_there", "... because the expected number of experts still untouched there is negligible",
            _E - _A(sp.Symbol("B_ridge")), sp.N((_E - _moe.experts_activated_expr).subs(values).subs(_B, exact), 15))

    ratio = sp.diff(_moe.moe_saturated_intensity_expr, _B) / sp.diff(_moe.dense_intensity_uncapped_expr, _B)
    d.identity("slope_ratio_expr", "Far-out MoE slope over dense slope (sympy.diff of each)",
               sp.Symbol("s_far") / sp.Symbol("s_dense"), _moe.moe_slope_ratio_expr, equals=ratio)
    d.value("slope_ratio", f"... for {model.name}", sp.Symbol("s_far") / sp.Symbol("s_dense"),
            _moe.moe_slope_ratio_expr.subs(values))
    return d.done()


@functools.lru_cache(maxsize=None)
def moe_origin_slope(model=None, hardware=None) -> Derivation:
    """What the intensity formula does near the origin: its slope at B -> 0, at
    B = 1, its minimum, and far out, against the dense slope (Figure 1's
    caption says the MoE line leaves the origin at half its eventual slope)."""
    model, hardware = resolve(model, hardware)
    _require_moe(model)
    values = _moe_values(model, hardware)
    I_expr = _moe.moe_intensity_uncapped_expr
    I_num = I_expr.subs(values)
    slope_num = sp.diff(I_num, _B)
    s = {name: sp.Symbol(f"s_{name}") for name in ("far", "dense", "0", "1", "min")}
    d = _Builder(f"Slope of the MoE intensity line from the origin out, {model.name}")

    d.show("slope", "Local slope (sympy.diff, with A kept as a function)",
           sp.Derivative(_I_MoE(_B), _B), sp.factor(sp.diff(_with_A(I_expr), _B)))
    far = sp.limit(slope_num, _B, sp.oo)
    d.value("far", "Eventual slope, B → ∞ (sympy.limit), FLOP/byte per token", s["far"], far)
    dense = sp.diff(_moe.dense_intensity_uncapped_expr, _B).subs(values)
    d.value("far_vs_dense", "... as a fraction of the dense slope 2/b", s["far"] / s["dense"], far / dense)
    origin = sp.limit(slope_num, _B, 0, "+")
    d.value("origin", "Slope as B → 0⁺ over the eventual slope: only the shared expert is read there",
            s["0"] / s["far"], origin / far)
    d.value("at_one", "Slope at B = 1 over the eventual slope", s["1"] / s["far"], sp.N(slope_num.subs(_B, 1) / far, 15))
    d.identity("chord_one", "Intensity at B = 1, where A(1) = k: the dense value, no sharing at all",
               _I_MoE(1), _moe.dense_intensity_uncapped_expr.subs(_B, 1), equals=I_expr.subs(_B, 1))
    knee = float((_E / _k).subs(values))
    dip = sp.nsolve(sp.diff(I_num, _B, 2), _B, (1, knee), solver="bisect")
    d.value("dip_at", "The local slope is smallest where the second derivative vanishes (sympy.nsolve)",
            sp.Symbol("B_min"), dip)
    d.value("dip", "... and there it is this fraction of the eventual slope", s["min"] / s["far"],
            sp.N(slope_num.subs(_B, dip) / far, 15))
    return d.done()


# --------------------------------------------------------------------------
# Appendix B: the attention roofline
# --------------------------------------------------------------------------

_T, _S, _m_c, _m_q, _f, _Ra = _attn.T, _attn.S, _attn.m_c, _attn.m_q, _attn.f, _attn.R
_AI = sp.Function("AI")


def _mla_values(model, hardware) -> dict:
    a = model.attention
    return {
        _attn.n_h: sp.Integer(a.n_heads),
        _attn.d_c: sp.Integer(a.kv_lora_rank),
        _attn.d_r: sp.Integer(a.rope_dim),
        _attn.b_kv: _exact(a.kv_bytes),
        _attn.b_q: _exact(a.query_bytes),
        _Ra: _exact(hardware.ridge(model.attention_precision)),
    }


def _mla_constants(values) -> dict:
    return {
        _m_c: _attn.mla_context_bytes_expr.subs(values),
        _m_q: _attn.mla_query_bytes_expr.subs(values),
        _f: _attn.mla_flops_per_pair_expr.subs(values),
        _Ra: values[_Ra],
    }


@functools.lru_cache(maxsize=None)
def attention_intensity() -> Derivation:
    """AI(T, S), its two limits and the width at which it meets the ridge."""
    d = _Builder("Attention intensity: T query tokens over S context tokens")
    flops, bytes_ = sp.fraction(_attn.intensity_expr)
    d.show("flops", "FLOPs: f per query–context pair", sp.Symbol("FLOPs"), flops)
    d.show("bytes", "Bytes: the context read once (m_c per token) plus m_q per query token", sp.Symbol("bytes"), bytes_)
    d.show("AI", "Intensity", _AI(_T, _S), _attn.intensity_expr)
    d.show("long", "Long context (sympy.limit): the query bytes stop mattering",
           sp.Limit(_AI(_T, _S), _S, sp.oo), _attn.intensity_long_context_expr)
    d.show("wide", "Wide verify at a fixed context: the query bytes cap it",
           sp.Limit(_AI(_T, _S), _T, sp.oo), sp.limit(_attn.intensity_expr, _T, sp.oo))
    d.show("crossover", "Long-context width that reaches the ridge R (sympy.solve)",
           sp.Symbol("T_x"), _attn.compute_bound_width_expr)
    return d.done()


@functools.lru_cache(maxsize=None)
def mla(model=None, hardware=None) -> Derivation:
    """MLA's constants from its architecture numbers, the fat-query ratio, the
    long-context intensity and the crossover width (T ≈ 1.16 on B200)."""
    model, hardware = resolve(model, hardware)
    _require_mla(model)
    values = _mla_values(model, hardware)
    consts = _mla_constants(values)
    arch = (_attn.n_h, _attn.d_c, _attn.d_r, _attn.b_kv, _attn.b_q)
    d = _Builder(f"MLA (absorbed, MQA form): constants and crossover, {_on(model, hardware)}")
    d.show("architecture", f"{model.name}: heads, latent width, rope width, cache and query bytes per element",
           sp.Tuple(*arch), sp.Tuple(*[values[v] for v in arch]))
    d.value("m_c", "Bytes per context token: one latent plus the shared rope key",
            _m_c, _attn.mla_context_bytes_expr, consts[_m_c])
    d.value("m_q", "Bytes per query token: each head's query over latent + rope",
            _m_q, _attn.mla_query_bytes_expr, consts[_m_q])
    d.value("f", "FLOPs per pair: score over d_c + d_r, value over d_c, 2 FLOP per multiply-add",
            _f, _attn.mla_flops_per_pair_expr, consts[_f])
    d.value("ratio", "The fat-query asymmetry (sympy.simplify)",
            _m_q / _m_c, _attn.mla_query_context_ratio_expr, _attn.mla_query_context_ratio_expr.subs(values))
    long = _attn.intensity_long_context_expr.subs(consts)
    d.show("long", "Long-context intensity", sp.Limit(_AI(_T, _S), _S, sp.oo), _attn.intensity_long_context_expr, long)
    d.value("decode", f"Decode (T = 1) at long context, against the bf16 ridge R = {float(values[_Ra]):g}",
            sp.Limit(_AI(1, _S), _S, sp.oo), long.subs(_T, 1))
    d.value("crossover", "Width at which the long-context intensity reaches R",
            sp.Symbol("T_x"), _attn.compute_bound_width_expr, _attn.compute_bound_width_expr.subs(consts))
    return d.done()


@functools.lru_cache(maxsize=None)
def hca(model=None, hardware=None) -> Derivation:
    """HCA as MLA under S -> S/c: the query term is untouched; where T = 2 first
    reaches the bf16 ridge (≈ 45k), and the context below which no width does."""
    model, hardware = resolve(model, hardware)
    _require_mla(model, v4=True)
    consts = _mla_constants(_mla_values(model, hardware))
    c = sp.Symbol("c", positive=True)
    ratio = {c: _exact(model.attention.hca_ratio)}
    flops, bytes_ = sp.fraction(_attn.intensity_expr)
    AI_h = sp.Function("AI_HCA")
    d = _Builder(f"HCA: MLA over a context compressed c-fold, {_on(model, hardware)}")

    # A symbol spelled "(S/c)" shows the substitution before sympy simplifies it away.
    d.show("subs", "Substitute S → S/c", AI_h(_T, _S), _attn.intensity_expr.subs(_S, sp.Symbol("(S/c)", positive=True)))
    hca_expr = sp.simplify(_attn.intensity_expr.subs(_S, _S / c))
    d.show("simplified", "Clear the fraction", AI_h(_T, _S), hca_expr)
    bytes_hca = bytes_.subs(_S, _S / c)
    d.identity("query_term", "Bytes per extra query token: the same m_q as before the substitution",
               sp.Derivative(sp.Symbol("bytes_HCA"), _T), sp.diff(bytes_, _T), equals=sp.diff(bytes_hca, _T))
    d.show("context_term", "Bytes per context token: divided by c",
           sp.Derivative(sp.Symbol("bytes_HCA"), _S), sp.diff(bytes_hca, _S))
    d.show("flops_term", "FLOPs per context token: divided by c",
           sp.Derivative(sp.Symbol("FLOPs_HCA"), _S), sp.diff(flops.subs(_S, _S / c), _S))

    S_ridge = sp.solve(sp.Eq(hca_expr, _Ra), _S)[0]
    d.show("ridge_solve", "Context at which width T reaches the ridge (sympy.solve for S)",
           sp.Function("S_R")(_T), S_ridge)
    d.value("ridge_T2", f"First speculated token (T = 2), c = {float(ratio[c]):g}",
            sp.Function("S_R")(2), S_ridge.subs(_T, 2).subs(consts).subs(ratio))
    wide = sp.limit(hca_expr, _T, sp.oo)
    d.show("wide", "However wide the verify, the query bytes cap the intensity (limit T → ∞)",
           sp.Limit(AI_h(_T, _S), _T, sp.oo), wide)
    floor = sp.solve(sp.Eq(wide, _Ra), _S)[0]
    d.value("floor", "Below this context no verify width is compute-bound", sp.Symbol("S_min"), floor,
            floor.subs(consts).subs(ratio))
    return d.done()


@functools.lru_cache(maxsize=None)
def csa(model=None, hardware=None) -> Derivation:
    """CSA's main attention (MLA over the top-K selected positions) and its
    score-only indexer (AI -> 128 T; the smallest compute-bound width)."""
    model, hardware = resolve(model, hardware)
    _require_mla(model, v4=True)
    a = model.attention
    values = _mla_values(model, hardware)
    consts = _mla_constants(values)
    R = values[_Ra]
    c, K, s = sp.symbols("c K s", positive=True)
    AI_csa, AI_idx = sp.Function("AI_CSA"), sp.Function("AI_idx")
    d = _Builder(f"CSA: main attention and indexer, {_on(model, hardware)}")

    S_eff = sp.Min(_S / c, K)
    d.show("S_eff", "The main attention reads the top K of the S/c compressed positions", sp.Symbol("S_eff"), S_eff)
    capped = sp.simplify(S_eff.subs(_S, c * K + s))
    d.show("capped", "For any S = cK + s past the cap (s > 0) that is just K", sp.Symbol("S_eff"), capped)
    main = _attn.intensity_expr.subs(_S, capped)
    d.show("main", "... so the intensity no longer depends on S", AI_csa(_T, _S), main)
    main_num = main.subs(consts).subs(K, _exact(a.csa_top_k))
    d.value("main_T1", f"K = {a.csa_top_k}, decode (T = 1): below R = {float(R):g}", AI_csa(1, _S), main_num.subs(_T, 1))
    d.value("main_T2", "First speculated token (T = 2), one selection shared by the verify (the post's "
            "reading): above R", AI_csa(2, _S), main_num.subs(_T, 2))
    d.value("main_crossover", "Width at which it reaches R (sympy.solve)", sp.Symbol("T_x"),
            sp.solve(sp.Eq(main_num, R), _T)[0])
    # DeepSeek's sparse attention selects for each query position: the verify reads the union of T selections,
    # T K positions when they are disjoint (omega = 0), for T K pairs of work. T = 1 + u (u >= 0) lets sympy
    # resolve the caps; past S = c K T every selection fits.
    u = sp.Symbol("u", nonnegative=True)
    csa_subs = {_attn.c_csa: c, _attn.K_csa: K, _attn.omega: 0}
    past = {_S: c * K * _T + s}
    read = sp.simplify(sp.simplify(_attn.csa_read_expr.subs(csa_subs).subs(past).subs(_T, 1 + u)).subs(u, _T - 1))
    d.show("own_read", "Each query position its own top K (DeepSeek's sparse attention): a verify of T positions "
           "reads the union of T disjoint selections, for any S = cKT + s", sp.Symbol("S_read"), read)
    own = sp.simplify(_attn.csa_intensity_expr.subs(csa_subs).subs(past).subs(_T, 1 + u))
    d.show("own", "... T K pairs of work over T K positions read: the intensity no longer depends on T",
           AI_csa(_T, _S), own)
    d.value("own_T2", "First speculated token (T = 2), own selections: decode's intensity, below R",
            AI_csa(2, _S), own.subs(consts).subs(K, _exact(a.csa_top_k)))

    idx = {_attn.n_h: sp.Integer(a.indexer_heads), _attn.d_h: sp.Integer(a.indexer_head_dim),
           _attn.b_kv: _exact(a.indexer_key_bytes), _attn.b_q: _exact(a.query_bytes)}
    idx_exprs = {_m_c: _attn.indexer_context_bytes_expr, _m_q: _attn.indexer_query_bytes_expr,
                 _f: _attn.indexer_flops_per_pair_expr}
    idx_consts = {sym: e.subs(idx) for sym, e in idx_exprs.items()}
    d.show("idx_architecture", "Indexer: heads, key width, key and query bytes per element",
           sp.Tuple(*idx), sp.Tuple(*idx.values()))
    for sym, label in ((_m_c, "Indexer bytes per position: one shared key"),
                       (_m_q, "Indexer bytes per query token: one query per head"),
                       (_f, "Indexer FLOPs per pair: the score only, no value product")):
        d.value(f"idx_{sym.name}", label, sym, idx_exprs[sym], idx_consts[sym])
    ratio = sp.simplify(idx_exprs[_m_q] / idx_exprs[_m_c])
    d.value("idx_ratio", "The same fat-query ratio as MLA", _m_q / _m_c, ratio, ratio.subs(idx))
    idx_long = sp.simplify(_attn.intensity_long_context_expr.subs(idx_exprs))
    d.show("idx_long", "Long-context indexer intensity", sp.Limit(AI_idx(_T, _S), _S, sp.oo), idx_long,
           idx_long.subs(idx))
    mla_long = _attn.intensity_long_context_expr.subs(consts)
    d.value("idx_vs_main", "Against full MLA at long context: about half",
            sp.Symbol("AI_idx") / sp.Symbol("AI_MLA"), idx_long.subs(idx) / mla_long)
    width = _attn.compute_bound_width_expr.subs(idx_consts).subs(_Ra, R)
    d.value("idx_width", "Long-context width at which the indexer reaches R", sp.Symbol("T_x"), width)
    first = sp.ceiling(width)
    d.value("idx_first", "Smallest whole number of query tokens that is compute-bound", sp.ceiling(sp.Symbol("T_x")),
            first)
    idx_AI = _attn.intensity_expr.subs(idx_consts).subs(_S, _S / _exact(a.csa_ratio))
    S_at = sp.solve(sp.Eq(idx_AI, R), _S)[0]
    d.show("idx_S_solve", f"Original context from which width T is compute-bound "
           f"({a.csa_ratio:g}-fold compression; sympy.solve)", sp.Function("S_R")(_T), S_at)
    for T_value in (int(first), int(first) + 1):
        d.value(f"idx_S_T{T_value}", f"... for T = {T_value}", sp.Function("S_R")(T_value), S_at.subs(_T, T_value))
    return d.done()


@functools.lru_cache(maxsize=None)
def gqa(model=None) -> Derivation:
    """GQA/MHA constants and their long-context intensity: ~T for MHA,
    ~(n_h/n_kv)·T with a 2-byte cache (8T for Llama-3-70B, the default here)."""
    model = LLAMA_3_70B if model is None else resolve(model, None)[0]
    if not isinstance(model.attention, GQAAttention):
        raise ValueError(f"model must use GQA/MHA attention; {model.name} uses {model.attention.kind}")
    a = model.attention
    n_h, n_kv, d_h, b_kv, b_q = _attn.n_h, _attn.n_kv, _attn.d_h, _attn.b_kv, _attn.b_q
    vals = {n_h: sp.Integer(a.n_heads), n_kv: sp.Integer(a.n_kv_heads), d_h: sp.Integer(a.head_dim),
            b_kv: _exact(a.kv_bytes), b_q: _exact(a.query_bytes)}
    consts = {_m_c: _attn.gqa_context_bytes_expr, _m_q: _attn.gqa_query_bytes_expr, _f: _attn.gqa_flops_per_pair_expr}
    lim = sp.Limit(_AI(_T, _S), _S, sp.oo)
    d = _Builder("GQA and MHA: long-context attention intensity")
    d.show("m_c", "Bytes per context token: a K and a V per KV head", _m_c, consts[_m_c])
    d.show("m_q", "Bytes per query token", _m_q, consts[_m_q])
    d.show("f", "FLOPs per pair: score and value, d_h wide each, per query head", _f, consts[_f])
    long = sp.simplify(_attn.intensity_long_context_expr.subs(consts))
    d.show("long", "Long-context intensity", lim, long)
    d.show("mha", "MHA (n_kv = n_h) with a 2-byte cache", lim, long.subs({n_kv: n_h, b_kv: 2}))
    d.show("model", f"{model.name} (n_h = {a.n_heads}, n_kv = {a.n_kv_heads}, b_kv = {a.kv_bytes:g})",
           lim, long.subs(vals))
    return d.done()


@functools.lru_cache(maxsize=None)
def mla_forms(model=None) -> Derivation:
    """MLA's absorbed (MQA) form against its up-projected (MHA) form: FLOPs of
    each and the verify width past which the MHA form is cheaper (≈ 170)."""
    model, _ = resolve(model, None)
    _require_mla(model)
    a = model.attention
    if a.mha_nope_dim is None:
        raise ValueError(f"model must define the up-projected head widths; {model.name} does not")
    d_c, d_r, d_n, d_v = _attn.d_c, _attn.d_r, _attn.d_n, _attn.d_v
    vals = {d_c: sp.Integer(a.kv_lora_rank), d_r: sp.Integer(a.rope_dim),
            d_n: sp.Integer(a.mha_nope_dim), d_v: sp.Integer(a.mha_v_dim)}
    F_mqa, F_mha = sp.symbols("FLOPs_MQA FLOPs_MHA")
    d = _Builder("MLA: absorbed (MQA) form against up-projected (MHA) form")
    d.show("mqa", "Absorbed form: every head works in the latent, T·S pairs", F_mqa, _attn.mqa_form_flops_expr)
    d.show("mha", "Up-projected form: lift all S latents to per-head K and V once, then ordinary attention",
           F_mha, _attn.mha_form_flops_expr)
    d.show("difference", "Their difference (sympy.factor)", F_mqa - F_mha,
           sp.factor(_attn.mqa_form_flops_expr - _attn.mha_form_flops_expr))
    solved = sp.solve(sp.Eq(_attn.mqa_form_flops_expr, _attn.mha_form_flops_expr), _T)[0]
    d.identity("crossover", "Width where they cost the same (sympy.solve)", sp.Symbol("T_MHA"),
               _attn.mha_form_crossover_expr, equals=solved)
    d.value("value", f"{model.name}: d_c = {a.kv_lora_rank}, d_n = {a.mha_nope_dim}, d_v = {a.mha_v_dim}",
            sp.Symbol("T_MHA"), _attn.mha_form_crossover_expr.subs(vals))
    return d.done()


# --------------------------------------------------------------------------
# Appendix C: the marginal-cost curve, and the speedup
# --------------------------------------------------------------------------

_t, _q = _cost.t, _cost.q


@functools.lru_cache(maxsize=None)
def log_slope() -> Derivation:
    """r = d log C / d log t is the marginal cost over the average cost."""
    C = sp.Function("C")
    u = sp.Symbol("u", real=True)
    r = sp.Function("r")
    compute, memory = sp.symbols("compute memory", positive=True)
    d = _Builder("Marginal over average cost is the log-log slope of the roofline")
    d.show("roofline", "Step cost in byte-equivalents: the larger of FLOPs/R and bytes moved",
           sp.Symbol("C"), _cost.roofline(compute, memory))
    d.show("average", "A token already in the batch pays the average", sp.Symbol("average"), C(_t) / _t)
    d.show("marginal", "One more token wedged into the step pays the marginal",
           sp.Symbol("marginal"), sp.Derivative(C(_t), _t))
    slope = sp.diff(sp.log(C(sp.exp(u))), u).subs(sp.exp(u), _t).doit()
    d.show("log_slope", "Log-log slope r: put t = e^u and differentiate log C(e^u) in u", r(_t), slope)
    d.identity("ratio", "... which is marginal over average", sp.Symbol("marginal") / sp.Symbol("average"), slope,
               equals=sp.Derivative(C(_t), _t) / (C(_t) / _t))
    return d.done()


@functools.lru_cache(maxsize=None)
def projection_slope(model=None, hardware=None) -> Derivation:
    """r_proj: 0 on the weight-read branch, 1 on the compute branch, knee at R b_w / 2."""
    model, hardware = resolve(model, hardware)
    d = _Builder(f"Attention projections: r_proj, {_on(model, hardware)}")
    d.show("cost", "Dense GEMM over t tokens", sp.Function("C_proj")(_t), _cost.gemm_cost_expr)
    d.value("compute_branch", "Compute branch (d log C / d log t)", sp.Symbol("r_compute"),
            sp.simplify(_cost.elasticity(_cost.gemm_compute_expr, _t)))
    d.value("memory_branch", "Memory branch: the weights read do not grow with t", sp.Symbol("r_memory"),
            sp.simplify(_cost.elasticity(_cost.gemm_memory_expr, _t)))
    knee = sp.solve(sp.Eq(_cost.gemm_compute_expr, _cost.gemm_memory_expr), _t)[0]
    vals = {_cost.b_w: _exact(model.proj_weight_bytes), _cost.R: _exact(hardware.ridge(model.proj_precision))}
    d.value("knee", f"Branches meet (sympy.solve); {model.proj_precision} weights of "
            f"{model.proj_weight_bytes:g} byte, {model.proj_precision} ridge R = {float(vals[_cost.R]):g}",
            sp.Symbol("t_knee"), knee, knee.subs(vals))
    return d.done()


def _ffn_cost_values(model, hardware) -> dict:
    values = _moe_values(model, hardware)
    values[_cost.W_E] = sp.Integer(model.expert_params)
    return values


@functools.lru_cache(maxsize=None)
def moe_slope(model=None, hardware=None) -> Derivation:
    """r_MoE on its memory branch, t A'(t)/(A(t) + n_s): ≈ 0.85 at t = 1
    (≈ 0.99 without the shared expert), → 0 far out, 1 once compute-bound."""
    model, hardware = resolve(model, hardware)
    _require_moe(model)
    values = _ffn_cost_values(model, hardware)
    r_m = sp.Function("r_memory")
    d = _Builder(f"MoE experts: r_MoE, {_on(model, hardware)}")
    d.show("memory", "Memory branch: the distinct routed experts touched, plus the shared ones",
           sp.Symbol("bytes_MoE"), _with_A(_cost.moe_memory_expr, _t))
    mem_slope = _cost.elasticity(_cost.moe_memory_expr, _t)
    d.show("memory_slope", "Its log-slope (sympy.diff)", r_m(_t), _cost.elasticity(_with_A(_cost.moe_memory_expr, _t), _t))
    paper = _t * _moe.experts_activated_rate_expr.subs(_B, _t) / (_moe.experts_activated_expr.subs(_B, _t) + _n_s)
    d.identity("memory_slope_closed", "... with A and A' written out", r_m(_t), paper, equals=mem_slope)
    d.value("at_one", f"A lone token, n_s = {model.ffn.n_shared}", r_m(1), sp.N(mem_slope.subs(_t, 1).subs(values), 15))
    d.value("at_one_no_shared", "... and without the shared expert (n_s = 0)", r_m(1),
            sp.N(mem_slope.subs(_t, 1).subs({**values, _n_s: 0}), 15))
    knee = (_E / _k).subs(values)
    d.value("at_knee", "At the knee t = E/k", r_m(_E / _k), sp.N(mem_slope.subs(_t, knee).subs(values), 15))
    d.value("far", "Far out (sympy.limit)", sp.Limit(r_m(_t), _t, sp.oo), sp.limit(mem_slope.subs(values), _t, sp.oo))
    d.value("compute_branch", "Compute branch", sp.Symbol("r_compute"),
            sp.simplify(_cost.elasticity(_cost.moe_compute_expr, _t)))
    guess = float(_moe.moe_ridge_batch_expr.subs(values))
    cross = sp.nsolve((_cost.moe_compute_expr - _cost.moe_memory_expr).subs(values), _t, guess)
    d.value("compute_from", "Where the compute branch takes over (sympy.nsolve)", sp.Symbol("t_ridge"), cross)
    return d.done()


@functools.lru_cache(maxsize=None)
def attention_slope(model=None, hardware=None) -> Derivation:
    """r_attn in the verify width q, with and without the query bytes."""
    model, hardware = resolve(model, hardware)
    _require_mla(model)
    mla_consts = _mla_constants(_mla_values(model, hardware))
    consts = {_cost.m_c: mla_consts[_m_c], _cost.m_q: mla_consts[_m_q], _cost.f: mla_consts[_f],
              _cost.R: mla_consts[_Ra]}
    S = _cost.S
    no_q = {_cost.m_q: 0}
    d = _Builder(f"Attention: r_attn in the verify width q, {_on(model, hardware)}")
    d.show("cost", "B sequences, q query tokens each", sp.Function("C_attn")(_cost.B, _q, S), _cost.attn_cost_expr)
    d.value("compute_branch", "Compute branch", sp.Symbol("r_compute"),
            sp.simplify(_cost.elasticity(_cost.attn_compute_expr, _q)))
    mem = sp.simplify(_cost.elasticity(_cost.attn_memory_expr, _q))
    d.show("memory_branch", "Memory branch, query bytes kept", sp.Symbol("r_memory"), mem)
    d.value("memory_branch_noq", "... query bytes dropped (m_q = 0), as in the paper's ledger",
            sp.Symbol("r_memory"), mem.subs(no_q))
    cross = sp.solve(sp.Eq(_cost.attn_compute_expr, _cost.attn_memory_expr), _q)[0]
    d.show("crossover", "Width where the branches meet, query bytes kept (sympy.solve)", sp.Symbol("q_x"), cross)
    d.value("crossover_noq", f"... query bytes dropped; {model.name}: decode (q = 1) is memory-bound, "
            "the first speculated token (q = 2) compute-bound",
            sp.Symbol("q_x"), cross.subs(no_q), cross.subs(no_q).subs(consts))
    S_min = sp.solve(sp.Eq(cross, 2), S)[0]
    d.value("S_q2", "With the query bytes kept, q = 2 is compute-bound only past this context (sympy.solve)",
            sp.Symbol("S_2"), S_min, S_min.subs(consts))
    ratio = sp.expand(sp.cancel(_cost.attn_memory_expr.subs(_q, 1) / _cost.attn_memory_expr.subs({_q: 1, **no_q})))
    d.show("bytes_ratio", "Decode-step attention bytes with the query bytes over without",
           sp.Function("ratio")(S), ratio, ratio.subs(consts))
    for S_value in (512, 8192):
        d.value(f"bytes_ratio_{S_value}", f"... at S = {S_value}", sp.Function("ratio")(S_value),
                ratio.subs(consts).subs(S, S_value))
    # The slope at q = 2 prices a token added to a verify that is already
    # compute-bound. The first speculated token itself moves the step from
    # q = 1 (memory-bound) to q = 2, a discrete step whose price is the
    # secant, not the slope.
    c1 = _cost.attn_cost_expr.subs({_q: 1, **no_q}).subs(consts)
    c2 = _cost.attn_cost_expr.subs({_q: 2, **no_q}).subs(consts)
    secant = sp.simplify((c2 - c1) / c1)
    d.value("secant_noq", "Price of the first speculated token as a step from q = 1 to q = 2, "
            "(C(2) - C(1)) / C(1), query bytes dropped: below the slope's 1, and the same at every B and S",
            sp.Symbol("r_step"), secant)
    return d.done()


@functools.lru_cache(maxsize=None)
def ledger_blend() -> Derivation:
    """The total slope is the cost-share blend of the component slopes, because
    it is the log-derivative of the summed cost."""
    Cs = [sp.Function(f"C_{i}")(_t) for i in (1, 2, 3)]
    slopes = [sp.Function(f"r_{i}")(_t) for i in (1, 2, 3)]
    total = sum(Cs)
    definitions = {r_i: _cost.elasticity(C_i, _t) for r_i, C_i in zip(slopes, Cs)}
    d = _Builder("The ledger's total: a cost-weighted blend of the component slopes")
    d.show("components", "Each component's own log-slope", sp.Tuple(*[sp.Eq(r_i, e) for r_i, e in definitions.items()]))
    lhs = _t * sp.diff(sp.log(total), _t)
    d.show("total", "Log-slope of the summed cost", sp.Function("r_total")(_t), lhs)
    d.identity("blend", "... is the component slopes weighted by their cost shares", sp.Function("r_total")(_t),
               sp.Add(*[r_i * C_i for r_i, C_i in zip(slopes, Cs)]) / total, equals=lhs, given=definitions)
    G = sp.Function("G")
    Bq = _cost.B * _q
    d.identity("t_vs_q", "At a fixed batch t = B·q, so a log-slope in q is the log-slope in t, read at t = B·q",
               sp.Mul(_q, sp.Derivative(sp.log(G(Bq)), _q), evaluate=False),
               (_t * sp.diff(G(_t), _t) / G(_t)).subs(_t, Bq), equals=_q * sp.diff(sp.log(G(Bq)), _q))
    return d.done()


def _ledger_total(B, S, c_draft, proj, ffn, attn, query_bytes: bool):
    """The ledger's total at one (B, S), evaluated by sympy from speclib.core.cost's
    expressions: each component's cost at q = 1, the GEMM slopes at t = B
    tokens, the attention slope at the first speculated token (q = 2).
    ``proj``, ``ffn``, ``attn`` hold each component's constants."""
    proj = {**proj, _t: B}
    ffn = {**ffn, _t: B}
    attn = {**attn, _cost.B: B, _cost.S: S, **({} if query_bytes else {_cost.m_q: 0})}
    costs = [_cost.gemm_cost_expr.subs(proj), _cost.moe_cost_expr.subs(ffn), _cost.attn_cost_expr.subs({**attn, _q: 1})]
    slopes = [_cost.gemm_slope_expr.subs(proj), _cost.moe_slope_expr.subs(ffn), _cost.attn_slope_expr.subs({**attn, _q: 2})]
    costs = [sp.N(C, 30) for C in costs]
    slopes = [sp.N(r, 30) for r in slopes]
    return sum(r * C for r, C in zip(slopes, costs)) / sum(costs) + c_draft


@functools.lru_cache(maxsize=None)
def ledger_query_bytes(model=None, hardware=None, S=512, batches=(1, 64, 512, 4096), c_draft=0.1) -> Derivation:
    """The ledger's total (a speculated token's cost, x a real token's) with and
    without attention's query bytes, at context ``S`` and a few batches;
    evaluated exactly by sympy from the expressions in :mod:`speclib.core.cost`."""
    model, hardware = resolve(model, hardware)
    _require_moe(model)
    _require_mla(model)
    mla_consts = _mla_constants(_mla_values(model, hardware))
    proj = {_cost.W: sp.Integer(model.attn_proj_params), _cost.b_w: _exact(model.proj_weight_bytes),
            _cost.R: _exact(hardware.ridge(model.proj_precision))}
    ffn = _ffn_cost_values(model, hardware)  # its R is the expert precision's ridge
    attn = {_cost.m_c: mla_consts[_m_c], _cost.m_q: mla_consts[_m_q], _cost.f: mla_consts[_f],
            _cost.R: mla_consts[_Ra]}
    S_value, c_value = _exact(S), _exact(c_draft)
    without, with_q = sp.symbols("r_without r_with")
    d = _Builder(f"The ledger's total with and without query bytes, S = {int(S_value):,}, "
                 f"drafter {float(c_value):.0%} of a step, {_on(model, hardware)}")
    for B in batches:
        a = _ledger_total(_exact(B), S_value, c_value, proj, ffn, attn, False)
        b = _ledger_total(_exact(B), S_value, c_value, proj, ffn, attn, True)
        d.show(f"B{B}", f"B = {B:,}: without, with, and the difference", sp.Tuple(without, with_q, with_q - without),
               sp.Tuple(*(_decimal(x, 4) for x in (a, b, b - a))))
    return d.done()


@functools.lru_cache(maxsize=None)
def committed_tokens() -> Derivation:
    """N(α, γ) as a geometric sum, its α → 1 limit and its series about α = 1."""
    a, g = _acc.alpha, _acc.gamma
    dsym = sp.Symbol("d", integer=True, nonnegative=True)
    N = sp.Function("N")
    d = _Builder("Expected tokens committed per verify pass")
    d.show("sum", "Position d is committed when the d drafts before it are all accepted",
           N(a, g), sp.Sum(a ** dsym, (dsym, 0, g)))
    d.show("summation", "sympy.summation, which keeps the α = 1 branch", N(a, g), _acc.expected_committed_expr)
    limit = sp.limit(_acc.expected_committed_closed_form, a, 1)
    d.show("limit", "α → 1 in the general branch (sympy.limit)", sp.Limit(N(a, g), a, 1, "+-"), limit)
    d.check(limit, _acc.expected_committed_expr.args[0][0], "the limit equals the α = 1 branch")
    eps = sp.Symbol("epsilon", positive=True)
    d.show("series", "Series in ε = 1 - α: the first lost point of acceptance costs γ(γ+1)/2 tokens per unit ε",
           N(1 - eps, g), sp.series(_acc.expected_committed_closed_form.subs(a, 1 - eps), eps, 0, 3))
    return d.done()


@functools.lru_cache(maxsize=None)
def speedup_reduction() -> Derivation:
    """Sp(α, γ) and its reduction to Leviathan et al.'s speedup when the verify
    costs the same as a decode step (or grows linearly in γ)."""
    a, g = _acc.alpha, _acc.gamma
    N, C_0, C_v, c = _spec.N, _spec.C_0, _spec.C_v, _spec.c
    rho = sp.Symbol("rho", nonnegative=True)
    Sp = sp.Function("Sp")(a, g)
    d = _Builder("The speedup and the classic formula")
    d.show("speedup", "N tokens for one verify plus γ drafter steps, against one token per C_0", Sp, _spec.speedup_expr)
    d.show("closed", "With N written out", Sp, _spec.speedup_closed_form)
    flat = sp.cancel(_spec.speedup_expr.subs(C_v, C_0))
    d.show("flat", "A verify that costs the same as a decode step, C_v = C_0", Sp, flat)
    leviathan = flat.subs(N, _acc.expected_committed_closed_form)
    d.show("leviathan", "... is the speedup of Leviathan et al. (2023), c the drafter's relative cost", Sp, leviathan)
    linear = sp.collect(sp.cancel(_spec.speedup_expr.subs(C_v, C_0 * (1 + rho * g))), g)
    d.show("linear", "A verify cost linear in γ, C_v = C_0 (1 + ργ)", Sp, linear)
    d.identity("linear_leviathan", "... is the same formula with c → c + ρ", Sp, leviathan.subs(c, c + rho),
               equals=linear.subs(N, _acc.expected_committed_closed_form))
    return d.done()


def _verify_cost(B, q, S, proj, ffn, attn, query_bytes: bool):
    """C_verify(B, q, S) of the paper's ledger, evaluated by sympy from
    speclib.core.cost's expressions (the constants as in :func:`_ledger_total`)."""
    attn = {**attn, _cost.B: B, _cost.S: S, _q: q, **({} if query_bytes else {_cost.m_q: 0})}
    return sp.N(_cost.gemm_cost_expr.subs({**proj, _t: B * q}) + _cost.moe_cost_expr.subs({**ffn, _t: B * q})
                + _cost.attn_cost_expr.subs(attn), 30)


@functools.lru_cache(maxsize=None)
def break_even(model=None, hardware=None, B=16, S=4096, alpha=0.75, c_draft=0.1) -> Derivation:
    """When a drafted token pays. A token priced r and accepted with
    probability p gains p - r; but the price the speedup sees is the secant
    p_v = (C_v - C_0) / (gamma C_0) + c of the whole verify over a plain step,
    not the ledger's slope: Sp = N / (1 + gamma p_v), so one drafted token
    pays exactly when alpha > p_v. The two prices agree when the verify's cost
    is a straight line from width 1 to 2; at ``B``, ``S`` (default batch 16,
    4,096 tokens) the ledger's total exceeds ``alpha`` while p_v does not."""
    model, hardware = resolve(model, hardware)
    _require_moe(model)
    _require_mla(model)
    p, r = sp.symbols("p r", nonnegative=True)
    a, g = _acc.alpha, _acc.gamma
    N, C_0, C_v, c, P_v = _spec.N, _spec.C_0, _spec.C_v, _spec.c, _spec.P_v
    Sp = sp.Function("Sp")
    d = _Builder("Break-even: when a drafted token pays")
    gain = p * (1 - r) - (1 - p) * r
    d.show("bookkeeping", "A token priced r (× a real token), accepted with probability p, saves 1 and costs r; "
           "rejected it costs r", sp.Symbol("gain"), gain, sp.expand(gain))
    d.show("condition", "Positive when (sympy.solve): the price r must be the one the token actually pays",
           sp.solve(sp.expand(gain) > 0, p))
    d.show("price", "What a draft of γ tokens pays per drafted token: the verify's cost above a plain step, over γ, "
           "plus the drafter (a secant)", P_v, _spec.verify_price_expr)
    d.identity("speedup", "The speedup in that price: N tokens for 1 + γ p_v plain steps' worth (checked against "
               "Sp = N C_0 / (C_v + c γ C_0))", Sp(a, g), _spec.priced_by_verify_price_expr,
               equals=_spec.speedup_expr, given={P_v: _spec.verify_price_expr})
    one = sp.cancel(_acc.expected_committed_closed_form.subs(g, 1))
    d.show("N1", "One drafted token commits", sp.Function("N")(a, 1), one)
    Sp1 = _spec.priced_by_verify_price_expr.subs({N: one, g: 1})
    d.show("Sp1", "... so its speedup is", Sp(a, 1), Sp1)
    d.show("Sp1_gain", "Sp - 1", Sp(a, 1) - 1, sp.factor(sp.cancel(Sp1 - 1)))
    d.show("Sp1_condition", "Positive exactly when (sympy.solve)", sp.solve(sp.cancel(Sp1 - 1) > 0, a))
    # The secant against the slope: C(q) is the verify's cost at width q.
    q = sp.Symbol("q", positive=True)
    C = sp.Function("C")
    secant = (C(2) - C(1)) / C(1)
    average = sp.Integral(sp.Derivative(C(q), q), (q, 1, 2)) / C(1)
    d.check(secant, average, "the secant is the marginal cost averaged over the step")
    d.show("secant", "With C(q) the verify's cost at width q (C_0 = C(1), C_v = C(2)), the verify's part of p_v "
           "for γ = 1 is the marginal cost averaged over the whole step from width 1 to 2", P_v - c, secant, average)
    slope = (q * sp.diff(C(q), q) / C(q)).subs(q, 1)
    d.show("slope", "The ledger's price is a slope instead: the log-slope at decode, the price of one more "
           "token wedged into the step", r, slope)
    C_1, k = sp.symbols("C_1 k", positive=True)
    line = C_1 + k * (q - 1)
    on_line = sp.simplify(secant.subs({C(2): line.subs(q, 2), C(1): line.subs(q, 1)}))
    d.check(on_line, sp.simplify((q * sp.diff(line, q) / line).subs(q, 1)), "secant = slope on a straight line")
    d.show("linear", "The two agree when the cost is a straight line over the step, C(q) = C_1 + k (q - 1): "
           "then the secant and the slope at q = 1 are both", P_v - c, on_line)
    # The example: the ledger's total against the secant, both by sympy from the roofline expressions.
    mla_consts = _mla_constants(_mla_values(model, hardware))
    proj = {_cost.W: sp.Integer(model.attn_proj_params), _cost.b_w: _exact(model.proj_weight_bytes),
            _cost.R: _exact(hardware.ridge(model.proj_precision))}
    ffn = _ffn_cost_values(model, hardware)
    attn = {_cost.m_c: mla_consts[_m_c], _cost.m_q: mla_consts[_m_q], _cost.f: mla_consts[_f],
            _cost.R: mla_consts[_Ra]}
    B_v, S_v, a_v, c_v = _exact(B), _exact(S), _exact(alpha), _exact(c_draft)
    ledger = _ledger_total(B_v, S_v, c_v, proj, ffn, attn, False)
    C0, C2 = (_verify_cost(B_v, width, S_v, proj, ffn, attn, False) for width in (1, 2))
    price = _spec.verify_price_expr.subs({C_0: C0, C_v: C2, c: c_v, g: 1})
    speedup = Sp1.subs({P_v: price, a: a_v})
    where = f"B = {int(B_v):,}, S = {int(S_v):,}, drafter {float(c_v):.0%}, {_on(model, hardware)}"
    d.show("example", f"{where}: the ledger's total r + c, the price p_v, and α",
           sp.Tuple(r + c, P_v, a), sp.Tuple(*(_decimal(x, 4) for x in (ledger, price, a_v))))
    d.value("example_speedup", f"... the ledger's total is above α, p_v below it: one drafted token pays",
            Sp(a_v, 1), _decimal(speedup, 4))
    return d.done()


#: Every derivation builder, in the order the appendix chapters show them.
ALL = (
    experts_activated,
    moe_intensity,
    moe_origin_slope,
    attention_intensity,
    mla,
    hca,
    csa,
    gqa,
    mla_forms,
    log_slope,
    projection_slope,
    moe_slope,
    attention_slope,
    ledger_query_bytes,
    ledger_blend,
    committed_tokens,
    speedup_reduction,
    break_even,
)


# --------------------------------------------------------------------------
# The chapters beyond the paper
# --------------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def survival():
    """The survival-curve form of N as a sympy step list: the tail sum, N(0),
    the forward difference, and the reduction to the i.i.d. formula, each
    identity checked here with sympy before it is shown."""
    N = sp.Function("N")
    # sympy returns 1 + Piecewise(...): take the general branch of the Piecewise term
    pieces = [t for t in sp.Add.make_args(_acc.expected_committed_geometric_expr) if isinstance(t, sp.Piecewise)]
    rest = sum(t for t in sp.Add.make_args(_acc.expected_committed_geometric_expr) if not isinstance(t, sp.Piecewise))
    general = rest + next(expr for expr, cond in pieces[0].args if cond is sp.true)
    if sp.simplify(general - _acc.expected_committed_closed_form) != 0:  # pragma: no cover - a broken identity
        raise ArithmeticError("the geometric survival curve does not reduce to the i.i.d. N")
    if _acc.committed_increment_expr != _acc.survival[_acc.gamma + 1]:  # pragma: no cover
        raise ArithmeticError("the forward difference of N is not the next survival")
    steps = (
        Step("tail", "Tail sum: the accepted prefix reaches position d exactly when d survives; "
             "the 1 is the bonus token", (N(_acc.gamma), _acc.expected_committed_survival_expr)),
        Step("zero", "No drafts: only the bonus token", (N(0), _acc.committed_at_zero_expr)),
        Step("difference", "Forward difference (sympy difference_delta): one more position adds its own survival",
             (N(_acc.gamma + 1) - N(_acc.gamma), _acc.committed_increment_expr)),
        Step("iid", "i.i.d. acceptance, s_d = alpha^d, summed by sympy (alpha != 1 branch)",
             (N(_acc.gamma), general, _acc.expected_committed_closed_form)),
    )
    return Derivation("Expected committed tokens from a survival curve", steps)


@functools.lru_cache(maxsize=None)
def expert_parallelism(model=None, hardware=None, G: int = 64, interconnect=None, *, dispatch_bytes: float = 1.0,
                       combine_bytes: float = 2.0):
    """The expert-parallel model as a sympy step list, with ``model`` on
    ``hardware`` and ``G`` GPUs put in at the end; identities are checked
    before they are shown."""
    model, hardware = resolve(model, hardware)
    net = default_interconnect(hardware) if interconnect is None else presets_interconnect(interconnect)
    ffn = model.ffn
    if not ffn.is_moe:
        raise ValueError(f"expert parallelism needs a mixture-of-experts model; {model.name} has a dense FFN")
    T = sp.Symbol("T", positive=True)
    A_loc, P, C_comm, r_comm = sp.symbols("A_local P_hit C_comm r_comm")
    single = _moe.experts_activated_expr.subs(_moe.B, _par.t)
    if sp.simplify(_par.local_experts_expr.subs(_par.G, 1) - single) != 0:  # pragma: no cover
        raise ArithmeticError("A_local at G = 1 is not the single-GPU coupon count")
    if _par.comm_slope_expr != 1:  # pragma: no cover
        raise ArithmeticError("the communication slope is not 1")
    values = {_par.k: ffn.top_k, _par.E: ffn.n_routed, _par.G: G, _par.h: model.hidden_size,
              _par.b_d: sp.nsimplify(dispatch_bytes), _par.b_c: sp.nsimplify(combine_bytes),
              _par.M: sp.nsimplify(hardware.memory_bandwidth), _par.L: sp.nsimplify(net.bandwidth)}
    per_token_link = _par.link_bytes_per_token_expr.subs(values)
    per_token_hbm = (_par.comm_cost_expr / _par.t).subs(values)
    moe_compute_per_token = (_cost.moe_compute_expr / _par.t).subs(
        {_par.k: ffn.top_k, _par.n_s: ffn.n_shared, _par.W_E: model.expert_params,
         _par.R: sp.nsimplify(hardware.ridge(ffn.precision))})
    steps = (
        Step("hit", "One expert is hit by at least one of T tokens (the coupon count per expert)",
             (P, _par.expert_hit_probability_expr.subs(_moe.B, T))),
        Step("local", "A GPU's E/G experts see all G t tokens of the group: expected distinct local experts",
             (A_loc, _par.local_experts_expr)),
        Step("one", "At G = 1 this is the single-GPU count A(t)", (_par.local_experts_expr.subs(_par.G, 1), single)),
        Step("picks", "Routed picks landing on one GPU (its share of G t k)", (sp.Symbol("picks"), _par.local_picks_expr)),
        Step("bytes", "Link bytes per token (dispatch + combine, each remote pick, sent and received)",
             (sp.Symbol("bytes_link"), _par.link_bytes_per_token_expr)),
        Step("comm", "Communication cost of a step, in HBM byte-equivalents", (C_comm, _par.comm_cost_expr)),
        Step("slope", "Its log-slope in tokens: every token pays the bandwidth term in full",
             (r_comm, _par.comm_slope_expr)),
        Step("value_link", f"{model.name}, G = {G}: link bytes per token per MoE layer",
             (sp.Symbol("bytes_link"), per_token_link), approx=None),
        Step("value_hbm", f"... as HBM byte-equivalents on {hardware.name} + {net.name}",
             (C_comm / _par.t, per_token_hbm), approx=None if per_token_hbm.is_Integer else per_token_hbm),
        Step("value_compute", "for scale: the MoE compute per token, in the same units",
             (sp.Symbol("C_MoE_compute") / _par.t, moe_compute_per_token), approx=moe_compute_per_token),
        Step("latency", "The all-to-all's latency: n_m messages a step waits for whatever its tokens, in the same "
             "units", (sp.Symbol("C_lat"), _par.comm_latency_cost_expr)),
        Step("total_slope", "The all-to-all priced whole, latency plus bandwidth: its log-slope is the bandwidth "
             "term's share", (sp.Symbol("r_comm_total"), _par.comm_total_slope_expr)),
        Step("crossover", "The two terms are equal at (sympy.solve), tokens per GPU",
             (sp.Symbol("t_x"), _par.comm_latency_crossover_expr)),
    )
    if net.latency is not None:
        lat = {**values, _par.n_m: _parallel_core.MESSAGES_PER_LAYER, _par.l: sp.nsimplify(net.latency)}
        latency_hbm = _par.comm_latency_cost_expr.subs(lat)
        crossover = _par.comm_latency_crossover_expr.subs(lat)
        steps += (
            Step("value_latency", f"{net.name}: {_parallel_core.MESSAGES_PER_LAYER} messages of "
                 f"{net.latency * 1e6:g} us per MoE layer, as HBM byte-equivalents on {hardware.name}",
                 (sp.Symbol("C_lat"), latency_hbm), approx=None if latency_hbm.is_Integer else latency_hbm),
            Step("value_crossover", f"... equal to the bandwidth term at G = {G}",
                 (sp.Symbol("t_x"), crossover), approx=crossover),
        )
    return Derivation(f"Expert parallelism: local experts and the all-to-all ({model.name})", steps)


@functools.lru_cache(maxsize=None)
def decode_workload(model=_val.MEASURED_MODEL, hardware="H200", precision="fp8", *, kv_precision="fp8"):
    """The workload algebra of the measured-decode chapter and the
    whole-model step, as a sympy step list."""
    model, hw = resolve(model, hardware)
    if model.ffn.is_moe:
        raise ValueError(f"decode_workload covers dense models (every weight read each step); {model.name} is a "
                         "mixture of experts")
    S_bar, B_dec = sp.symbols("Sbar B_decode")
    wb = weight_bytes_for(precision, hw.vendor)
    head = model.vocab_size * model.hidden_size
    decoder = model.total_params() - 2 * head
    weights_gb = sp.Float((decoder * wb + head * 2.0) / 1e9, 6)
    kv_per_token = model.context_bytes / model.attention.kv_bytes * KV_BYTES[kv_precision] * model.n_layers
    steps = [
        Step("context", "Mean cached context over a request's O decode steps (sympy summation)",
             (S_bar, sp.Sum(_work.I_in + _work._j, (_work._j, 0, _work.O_out - 1)) / _work.O_out,
              _work.mean_decode_context_expr)),
    ]
    for name, (i, o) in _val.WORKLOADS.items():
        steps.append(Step(f"context_{name}", f"{name}: I = {i:,}, O = {o:,}",
                          (S_bar, _work.mean_decode_context_expr.subs({_work.I_in: i, _work.O_out: o}))))
    steps += [
        Step("little", "Little's law: decoding requests = output tokens per second x seconds per token",
             (B_dec, _work.littles_law_batch_expr)),
        Step("weights", f"{model.name}: bytes of weights read per step ({precision} decoder, bf16 head), GB",
             (sp.Symbol("W_bytes"), weights_gb)),
        Step("kv", f"KV-cache bytes per cached token, all {model.n_layers} layers, {kv_precision}",
             (sp.Symbol("m_c") * sp.Symbol("n_layers"), sp.Integer(int(kv_per_token)))),
    ]
    return Derivation(f"Decode workload algebra and the {model.name} step", tuple(steps))


@functools.lru_cache(maxsize=None)
def pricing_rule(n: int = 3) -> Derivation:
    """Per-component against aggregate pricing of a step of ``n`` components:
    the aggregate (one roofline over the sums) is never more than the sum of
    the components' rooflines, and equals it exactly when every component is
    on the same side of its ridge. Each step is checked by sympy; the
    inequality by every sign pattern of the components' compute-minus-memory
    gaps (2**n cases), which covers any n by induction on the triangle
    inequality |x + y| <= |x| + |y|."""
    x_ = sp.symbols(f"x1:{n + 1}", nonnegative=True)  # compute times, F_i / P
    y_ = sp.symbols(f"y1:{n + 1}", nonnegative=True)  # memory times, Q_i / M
    X, Y = sp.Add(*x_), sp.Add(*y_)
    per_component = sp.Add(*(sp.Max(x, y) for x, y in zip(x_, y_)))
    aggregate = sp.Max(X, Y)
    half_sum = lambda a, b: (a + b + sp.Abs(a - b)) / 2  # noqa: E731
    d = _Builder(f"Pricing a step of {n} components: per-component against aggregate")
    C_pc, C_ag, Delta = sp.symbols("C_per-component C_aggregate Delta")
    d.show("per_component", "The paper's rule: each component its own roofline, the times added", C_pc, per_component)
    d.show("aggregate", "The sequel's simulator: one roofline over all the work and all the bytes", C_ag, aggregate)
    a, b = sp.symbols("a b", real=True)
    d.identity("max", "A maximum is the mean plus half the gap (sympy rewrites Max as Abs)", sp.Max(a, b),
               half_sum(a, b), equals=sp.Max(a, b).rewrite(sp.Abs))
    gap = (sp.Add(*(sp.Abs(x - y) for x, y in zip(x_, y_))) - sp.Abs(X - Y)) / 2
    d.identity("difference", "So the difference is half the triangle inequality's slack",
               Delta, gap, equals=(per_component - aggregate).rewrite(sp.Abs))
    # Every sign pattern of the gaps g_i = x_i - y_i: the slack is >= 0, and 0
    # exactly when all the gaps have one sign.
    g_ = sp.symbols(f"g1:{n + 1}", real=True)
    slack = sp.Add(*(sp.Abs(g) for g in g_)) - sp.Abs(sp.Add(*g_))
    equal_cases = unequal_cases = 0
    for signs in itertools.product((1, -1), repeat=n):
        signed = [sp.Symbol(f"h{i}", positive=True) * sign for i, sign in enumerate(signs)]
        value = sp.simplify(slack.subs(dict(zip(g_, signed))))
        if len(set(signs)) == 1:
            if value != 0:  # pragma: no cover - a broken identity
                raise ArithmeticError(f"{signs}: slack {value} is not 0 when the gaps share a sign")
            equal_cases += 1
        else:
            if not _positive_when_mixed(value):  # pragma: no cover - a broken inequality
                raise ArithmeticError(f"{signs}: slack {value} can be <= 0")
            unequal_cases += 1
    d.show("signs", f"Checked for every sign pattern of the gaps x_i - y_i ({2 ** n} cases): the slack is 0 in the "
           f"{equal_cases} where they share a sign, positive in the other {unequal_cases}",
           sp.Symbol("Delta") >= 0)
    d.show("rule", "So the aggregate never costs more, and the two agree exactly when every component is "
           "compute-bound or every one is memory-bound", C_ag <= C_pc)
    return d.done()


def _positive_when_mixed(value) -> bool:
    """Whether ``value`` = sum of h_i - |sum of +-h_i| (positive h_i, mixed
    signs) is positive for every positive h: on either branch of the one
    remaining |.| it is twice the sum of the h_i of one sign, so every
    coefficient must be positive."""
    abs_terms = list(value.atoms(sp.Abs))
    if not abs_terms:
        return bool(sp.ask(sp.Q.positive(value)))
    inner = abs_terms[0].args[0]
    branches = (value.subs(abs_terms[0], inner), value.subs(abs_terms[0], -inner))
    # On the branch where inner >= 0 the first form holds, else the second;
    # each is a sum with positive coefficients of the symbols on one side.
    return all(all(c > 0 for c in sp.Poly(b, *b.free_symbols).coeffs()) for b in branches if b != 0)


@functools.lru_cache(maxsize=None)
def kv_state_crossing(model="Qwen3.6-35B-A3B") -> Derivation:
    """Context at which a hybrid's KV cache (full-attention layers) weighs as
    much as its linear-attention state, per sequence."""
    from ..formulas import step as _step

    model, _ = resolve(model, None)
    if not model.is_hybrid:
        raise ValueError(f"model must be a hybrid with linear-attention layers; {model.name} has none")
    arch = model.step_architecture()
    S_x = sp.Symbol("S_x")
    kv = _step.L_a * _step.m_c * _step.S
    state = _step.L_l * _step.sigma
    d = _Builder(f"KV cache against linear-attention state, {model.name}")
    d.show("kv", "KV bytes one sequence keeps, full-attention layers", sp.Symbol("KV"), kv)
    d.show("state", "State bytes one sequence keeps, linear-attention layers, whatever S", sp.Symbol("state"), state)
    crossing = sp.solve(sp.Eq(kv, state), _step.S)[0]
    d.show("solve", "They weigh the same at (sympy.solve)", S_x, crossing)
    values = {_step.L_a: arch.attention_layers, _step.m_c: _exact(arch.context_bytes),
              _step.L_l: arch.linear_layers, _step.sigma: _exact(arch.state_bytes)}
    d.value("value", f"{model.name}: {arch.attention_layers} x {arch.context_bytes:,.0f} B per token against "
            f"{arch.linear_layers} x {arch.state_bytes:,.0f} B", S_x, crossing.subs(values))
    return d.done()


@functools.lru_cache(maxsize=None)
def drafter_crossover(mtp="Qwen3.6-MTP", dflash="Qwen3.6-DFlash", hardware="B200") -> Derivation:
    """Which drafter is cheaper: gamma memory-bound MTP passes (every expert
    resident) against one compute-bound DFlash block; the saturated crossover
    batch in closed form, per drafted token."""
    from .. import presets
    from ..formulas import drafters as _dr

    m, f = presets.drafter(mtp), presets.drafter(dflash)
    _, hw = resolve(None, hardware)
    if m.kind != "mtp" or f.kind != "dflash":
        raise ValueError("drafter_crossover compares an MTP drafter with a DFlash drafter")
    d = _Builder(f"MTP against DFlash on {hw.name}")
    t_m, t_f = sp.symbols("t_MTP t_DF")
    d.show("mtp", "gamma MTP passes, memory-bound once every expert is resident", t_m,
           _dr.gamma * _dr.b * _dr.mtp_saturated_weights_expr / _dr.M)
    d.show("dflash", "One DFlash pass over its block, compute-bound past a few sequences", t_f,
           2 * _dr.P_f * _dr.B * _dr.D / _dr.peak)
    B_x = sp.Symbol("B_x")
    d.show("solve", "Equal at (sympy.solve); DFlash is cheaper below", B_x, _dr.crossover_batch_expr)
    values = {_dr.b: _exact(m.step.dense_bytes), _dr.P_m: _exact(m.step.dense_params), _dr.w_m: _exact(m.step.ffn_params),
              _dr.E: m.step.n_routed, _dr.n_s: m.step.n_shared, _dr.P_f: _exact(f.step.dense_params), _dr.D: f.block,
              _dr.peak: _exact(hw.peak_flops(f.step.dense_precision)), _dr.M: _exact(hw.memory_bandwidth)}
    per_token = (_dr.crossover_batch_expr / _dr.gamma).subs(values)
    d.value("per_token", f"{m.name} against {f.name}: sequences per drafted token", B_x / _dr.gamma, per_token)
    return d.done()


#: The derivations of the chapters beyond the paper.
BEYOND = (survival, expert_parallelism, decode_workload, pricing_rule, kv_state_crossing, drafter_crossover)
