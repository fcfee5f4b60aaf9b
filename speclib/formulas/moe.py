"""The MoE roofline as sympy expressions: how many experts a batch touches,
and what that does to arithmetic intensity (the paper's "expert tax", its
first chart and appendix). The numeric side is :mod:`speclib.core.moe`.
"""
from __future__ import annotations

from .._extras import require as _require

_require("speclib.formulas.moe", ("sympy",))

import sympy as sp
from sympy.codegen.cfunctions import expm1, log1p

# B is a token count: the batch of a plain decode step, or batch x verify width.
B = sp.Symbol("B", positive=True)
k = sp.Symbol("k", positive=True)  # routed experts picked per token
E = sp.Symbol("E", positive=True)  # routed experts in the layer
n_s = sp.Symbol("n_s", nonnegative=True)  # always-on shared experts
b = sp.Symbol("b", positive=True)  # bytes per expert parameter
R = sp.Symbol("R", positive=True)  # ridge point of the expert GEMM precision, FLOP/byte

#: Coupon-collector (occupancy) expectation: a token misses a given expert with
#: probability 1 - k/E, all B tokens miss it with (1 - k/E)^B.
experts_activated_expr = E * (1 - (1 - k / E) ** B)

#: Fresh experts brought in per extra token, written in the paper's form.
#: ``tests`` check it is dA/dB; it is not obtained by differentiating here so
#: that the check means something.
experts_activated_rate_expr = -E * sp.log(1 - k / E) * (1 - k / E) ** B

#: Intensity of a dense FFN holding the same parameters: 2 FLOP per weight per
#: token, weights read once, b bytes each.
dense_intensity_uncapped_expr = 2 * B / b

#: MoE intensity: each token applies k routed + n_s shared experts (compute),
#: while the bytes are those of the distinct routed experts touched plus the
#: shared ones.
moe_intensity_uncapped_expr = 2 * B * (k + n_s) / (b * (experts_activated_expr + n_s))

dense_intensity_expr = sp.Min(dense_intensity_uncapped_expr, R)
moe_intensity_expr = sp.Min(moe_intensity_uncapped_expr, R)

#: Batch at which the dense line meets the ridge.
dense_knee_expr = sp.solve(sp.Eq(dense_intensity_uncapped_expr, R), B)[0]

#: Far-out MoE line (every expert resident, A = E) and where it meets the ridge.
moe_saturated_intensity_expr = moe_intensity_uncapped_expr.subs(experts_activated_expr, E)
moe_ridge_batch_expr = sp.solve(sp.Eq(moe_saturated_intensity_expr, R), B)[0]

#: Ratio of the saturated MoE slope to the dense slope: (k + n_s)/(E + n_s).
moe_slope_ratio_expr = sp.simplify(
    sp.diff(moe_saturated_intensity_expr, B) / sp.diff(dense_intensity_uncapped_expr, B)
)

#: The knee of the coupon count: where B*k reaches E.
expert_knee_expr = E / k

#: Probability that one token misses a given routed expert.
miss_probability_expr = 1 - k / E

# --- mixed precision: weights in one format, activations in another ------------------
R_w = sp.Symbol("R_w", positive=True)  # ridge of the weights' precision, FLOP/byte
R_a = sp.Symbol("R_a", positive=True)  # ridge of the activations' precision, FLOP/byte
#: A GEMM multiplies its two operands in the wider of their formats, at that
#: format's peak: fp4 experts against fp8 activations (W4A8) run at the fp8
#: rate, so the experts' ridge R is the smaller of the two ridges (W4A4 keeps
#: the fp4 one). Every knee the ridge sets (moe_ridge_batch_expr) scales with it.
gemm_ridge_expr = sp.Min(R_w, R_a)

# --- skewed routing -----------------------------------------------------------------
#: Measured routing is far from uniform. With expert i taking a share p_i of
#: the routed token-slots (sum_i p_i = 1) and k slots per token, a token picks
#: expert i with probability q_i = k*p_i (exact when the k picks are distinct
#: and no expert's q_i exceeds 1), and B tokens miss it with (1 - k*p_i)^B:
p = sp.IndexedBase("p", nonnegative=True)  # routing shares, one per expert
i = sp.Symbol("i", integer=True, nonnegative=True)  # an expert's index
experts_activated_skewed_expr = sp.Sum(1 - (1 - k * p[i]) ** B, (i, 0, E - 1))

#: One expert's term: the probability that B tokens touch an expert each
#: picks with probability q. The numeric side sums it over a share vector.
q = sp.Symbol("q", nonnegative=True)
expert_hit_probability_expr = 1 - (1 - q) ** B


def skewed_reduces_to_uniform() -> sp.Expr:
    """The skewed count at p_i = 1/E minus the uniform count; zero (the
    tests check that sympy simplifies it to 0)."""
    uniform = experts_activated_skewed_expr.replace(p[i], 1 / E)
    return sp.simplify(uniform.doit() - experts_activated_expr)


def numeric_form(expr, miss=miss_probability_expr):
    """``expr`` with the coupon-collector terms rewritten for floating point,
    for the printed numeric functions only (the sympy expressions above stay
    as written):

    1 - (1 - k/E)**x  ->  -expm1(x*log1p(-k/E))
        (1 - k/E)**x  ->  exp(x*log1p(-k/E))
        log(1 - k/E)  ->  log1p(-k/E)

    The same functions (the tests check it); but 1 - (1 - k/E)**B cancels to a
    few digits at a tiny batch, and numpy's float power is several times slower
    than exp/expm1, which made it most of ``optimal_gamma``'s run time.
    At k = E, log1p(-1) = -inf gives the right limits (expm1(-inf) = -1) but
    numpy warns: callers silence ``divide`` or avoid k = E. ``miss`` is the
    probability a pick misses an expert, 1 - k/E unless the count is over
    single picks (1 - 1/E).
    """
    log_miss = log1p(miss - 1)  # log(1 - p) for miss = 1 - p

    def is_miss_power(e):
        return e.is_Pow and e.base == miss

    def is_complement(e):  # 1 - miss**x
        return (
            e.is_Add
            and len(e.args) == 2
            and sp.S.One in e.args
            and any(is_miss_power(-a) for a in e.args if a != 1)
        )

    def complement(e):
        power = next(-a for a in e.args if a != 1)
        return -expm1(power.exp * log_miss)

    expr = expr.replace(is_complement, complement)
    expr = expr.replace(is_miss_power, lambda e: sp.exp(e.exp * log_miss))
    return expr.replace(lambda e: isinstance(e, sp.log) and e.args[0] == miss, lambda e: log_miss)


# --- experts split over GPUs: the most loaded GPU (speclib.core.layout) ---------------------
G = sp.Symbol("G", positive=True)  # GPUs the routed experts are split over, whole (expert parallelism)
h_i = sp.Symbol("h", positive=True)  # the chance one expert is touched by the step's tokens
c_G = sp.Symbol("c_G", nonnegative=True)  # the expected maximum of G independent standard normals
#: The routed experts one of G GPUs holds (E / G of them) that the step's
#: tokens touch: a sum of E / G indicators, each 1 with probability h, so of
#: mean (E / G) h and, the experts taken as independent (one token's k picks
#: are slightly anti-correlated, which this overstates), variance
#: (E / G) h (1 - h).
rank_touched_mean_expr = E / G * h_i
rank_touched_variance_expr = E / G * h_i * (1 - h_i)
#: The step waits for the most loaded GPU: the expected maximum over G GPUs
#: of loads normally distributed about their mean, c_G standard deviations
#: above it (c_G = E[max of G standard normals]: 0 at one GPU, 0.564 at
#: two, 1.424 at eight).
rank_max_expr = rank_touched_mean_expr + c_G * sp.sqrt(rank_touched_variance_expr)
#: The token picks the most loaded GPU serves when n picks land on the G GPUs
#: alike: each GPU's count is binomial, n / G on average with variance
#: n / G (1 - 1 / G) (the k picks of one token, distinct experts, are taken
#: as independent), and the most loaded is c_G standard deviations above.
n_p = sp.Symbol("n_p", positive=True)  # token picks of the step: tokens x k
rank_max_picks_expr = n_p / G + c_G * sp.sqrt(n_p / G * (1 - 1 / G))



# --- group-limited routing (DeepSeek-V3/R1: n_group = 8, topk_group = 4) ----------------------
#: DeepSeek-V3's router splits the E routed experts into n_g groups of E / n_g
#: and lets a token pick its k experts only within the k_g groups it ranks
#: first. Modelled uniformly: the k_g groups are any k_g of the n_g alike, and
#: the k experts any k of the m = k_g E / n_g experts of those groups. Each
#: expert is still picked with probability k / E, so the coupon count is
#: unchanged; what changes is how the picks bunch on a GPU. Experts placed on
#: G GPUs in order of their index (each GPU u = n_g / G whole groups, G
#: dividing n_g) put a token's picks on at most k_g GPUs. Ungrouped routing
#: is the case n_g = E, k_g = k (groups of one expert), which the tests check.
n_g = sp.Symbol("n_g", positive=True)  # expert groups of a layer
k_g = sp.Symbol("k_g", positive=True)  # groups a token may pick its experts in
n_t = sp.Symbol("n_t", positive=True)  # tokens of the step
_m_pool = k_g * E / n_g  # experts a token picks among
_rho = k_g / n_g  # the chance a token picks in a given group
_rho2 = k_g * (k_g - 1) / (n_g * (n_g - 1))  # ... in both of two given groups
_u = n_g / G  # whole groups on one GPU
_g = E / n_g  # experts of a group
_s = E / G  # experts of a GPU
# one token's picks X on one GPU: Z ~ Hypergeometric(n_g, u, k_g) of its groups chosen, Y = Z E / n_g of its
# experts in the pool, X | Y ~ Hypergeometric(m, Y, k)
_EZ = _u * _rho
_VZ = _u * _rho * (1 - _rho) * (n_g - _u) / (n_g - 1)
_EY, _EY2, _VY = _g * _EZ, _g ** 2 * (_VZ + _EZ ** 2), _g ** 2 * _VZ
#: Variance of one token's picks on one GPU (their mean is k / G): the
#: conditional hypergeometric variance averaged, plus the variance of its mean.
group_picks_variance_expr = k * (_m_pool - k) / (_m_pool - 1) * (_EY / _m_pool - _EY2 / _m_pool ** 2) \
    + (k / _m_pool) ** 2 * _VY
#: The most loaded GPU's token picks over n_t tokens. The G loads sum to
#: n_t k whatever the routing, so (alike by symmetry) each pair has
#: covariance -var / (G - 1); normal loads so correlated have their expected
#: maximum c_G sqrt(var G / (G - 1)) above the mean.
group_rank_max_picks_expr = n_t * k / G + c_G * sp.sqrt(n_t * group_picks_variance_expr * G / (G - 1))
# experts touched: i and j are both missed by one token with probability b_s (same group) or b_d (two groups)
_a = 1 - k / E
_b_same = 1 - _rho + _rho * (_m_pool - k) * (_m_pool - k - 1) / (_m_pool * (_m_pool - 1))
_b_diff = (1 - 2 * _rho + _rho2 + 2 * (_rho - _rho2) * (1 - k / _m_pool)
           + _rho2 * (_m_pool - k) * (_m_pool - k - 1) / (_m_pool * (_m_pool - 1)))
_h = 1 - _a ** n_t
#: Variance of the experts one GPU's n_t tokens touch: the indicators'
#: variances and the covariances of each pair in one group and in two.
group_touched_variance_expr = (_s * _h * (1 - _h) + _s * (_g - 1) * (_b_same ** n_t - _a ** (2 * n_t))
                               + _s * (_s - _g) * (_b_diff ** n_t - _a ** (2 * n_t)))
#: ... and the covariance of two GPUs' counts (every pair across two GPUs in two groups).
group_touched_covariance_expr = _s ** 2 * (_b_diff ** n_t - _a ** (2 * n_t))
#: The most loaded GPU's touched experts: normal loads alike with that
#: covariance have their expected maximum c_G sqrt(var - cov) above the mean.
group_rank_max_touched_expr = _s * _h + c_G * sp.sqrt(group_touched_variance_expr - group_touched_covariance_expr)
