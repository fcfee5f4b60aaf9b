"""``speclib frontier``'s output: a deployment's two frontiers
(:func:`speclib.core.frontier.frontier`) as a table, CSV or JSON, with the
price of a million output tokens at a GPU-hour price and the cheapest
configuration of each arm at an interactivity target; and as a picture
(:data:`speclib.presentation.figures.cost_of_a_token.deployment_frontier`).
Everything is computed before anything is written."""
from __future__ import annotations

import csv
import io
import json

from ..core import calibrated as _cal
from ..presentation.tables import NumberTable

#: The columns ``--format csv`` writes, one row per point of each arm.
CSV_COLUMNS = ("arm", "concurrency", "running", "gamma", "tpot_s", "tokens_per_user", "tokens_per_user_lo",
               "tokens_per_user_hi", "tokens_per_gpu", "tokens_per_gpu_lo", "tokens_per_gpu_hi", "cost_per_million")
#: The picture formats ``--plot`` writes, by the file's suffix.
PLOT_FORMATS = ("png", "svg")


def describe(f) -> str:
    """One line: the deployment, the workload, the drafter and the step time."""
    d, s = f.deployment, f.speculative_deployment
    layout = f"TP{d.tp}" + (f" EP{d.ep}" if d.ep > 1 else "") + (" DP-attention" if d.dp_attention else "")
    drafter = s.drafter.name if s.drafter is not None else f"a constant drafter at {s.pricing(whole_step=True).drafter.c:g} of a step"
    step = str(d.step_time) if not isinstance(d.step_time, str) else f"{d.step_time} step"
    return (f"{f.model_name} on {d.tp} x {d.hardware.name}{d.interconnect_words()}, {_cal.spelled(d.engine)} {layout}; {f.prompt:,.0f} tokens in, "
            f"{f.output:,.0f} out (mean context {f.context:,.0f}); {drafter}, {f.acceptance.describe()}; {step}; "
            f"precision: {s.precision_words()}")


def _money(x) -> str:
    return f"{x:,.2f}" if x < 100 else f"{x:,.0f}"


def _with(value, lo, hi, i, digits=0) -> str:
    text = f"{value[i]:,.{digits}f}"
    return text if lo is None else f"{text} ({lo[i]:,.{digits}f}\u2013{hi[i]:,.{digits}f})"


def table(f, price=None, cheapest=None, target=None) -> str:
    """The frontier as text: a row per concurrency, both arms side by side,
    then the crossover, the cheapest configurations and the notes."""
    p, s = f.plain, f.speculative
    costs = f.cost_per_million(price) if price is not None else None
    headers = ["users", "plain/user", "plain/GPU"] + (["plain/Mtok"] if costs else []) + \
        ["gamma", "spec/user", "spec/GPU"] + (["spec/Mtok"] if costs else [])
    rows = []
    for i, c in enumerate(p.concurrency):
        row = [f"{c:,.0f}" + ("*" if p.queueing[i] or s.queueing[i] else ""),
               f"{p.speed_per_user[i]:,.1f}",
               _with(p.throughput_per_gpu, p.throughput_lo, p.throughput_hi, i)]
        row += [_money(costs["plain"][i])] if costs else []
        row += [str(int(s.gamma[i])), f"{s.speed_per_user[i]:,.1f}",
                _with(s.throughput_per_gpu, s.throughput_lo, s.throughput_hi, i)]
        row += [_money(costs["speculative"][i])] if costs else []
        rows.append(row)
    lines = [describe(f),
             "  tokens per second per user (/user) against output tokens per second per GPU (/GPU"
             + (", its interval in brackets: " + _cal.interval_name(f.deployment.model) + "; speculation's as a "
                "speed-up over plain decoding, plain decoding's at its value: its TPOT is held out on too few "
                "families for a finite one)" if p.speed_lo is not None else ")")
             + (f"; the price of a million output tokens (/Mtok) at {_money(price)} a GPU-hour" if costs else "")
             + "; plain decoding, then speculation (spec) at draft length gamma", ""]
    lines += ["  " + line for line in repr(NumberTable(tuple(headers), tuple(map(tuple, rows)), align="l")).splitlines()]
    if p.queueing.any() or s.queueing.any():
        lines.append("  * memory holds fewer sequences than users: the rest wait their turn")
    lines += ["", "  " + str(f.crossover())]
    if cheapest is not None:
        lines += [""] + ["  " + line for line in target_lines(cheapest, target, price)]
    lines += [f"  note: {note}" for note in f.notes if note not in f.extrapolates]  # those: on standard error
    return "\n".join(lines) + "\n"


def target_lines(cheapest: dict, target: float, price=None) -> list:
    """What the cheapest configurations at ``target`` tokens/s per user are, and what speculation saves."""
    out = [f"at {target:g} tokens/s per user or more:"]
    for name, label in (("plain", "plain decoding"), ("speculative", "speculation")):
        point = cheapest[name]
        if point is None:
            out.append(f"  {label}: no configuration reaches it")
            continue
        cost = f", {_money(point['cost_per_million'])} per million output tokens" if price is not None else ""
        draft = f", gamma {point['gamma']}" if point["gamma"] else ""
        out.append(f"  {label}: {point['concurrency']:,} users{draft}: {point['tokens_per_user']:.1f} tokens/s "
                   f"per user, {point['tokens_per_gpu']:,.0f} tokens/s per GPU{cost}")
    if cheapest["saving"] is not None:
        band = ""
        if cheapest["saving_80"] is not None:
            band = (f" (80 % cross-conformal interval by model family {cheapest['saving_80'][0]:.0%} to "
                    f"{cheapest['saving_80'][1]:.0%})")
        word = "cheaper" if cheapest["saving"] >= 0 else "dearer"
        out.append(f"  speculation is {abs(cheapest['saving']):.0%} {word} per token{band}")
    return out


def _exact(x) -> str:
    if x is None:
        return ""
    x = float(x)
    return str(int(x)) if x.is_integer() and abs(x) < 2**53 else repr(x)


def csv_text(f, price=None) -> str:
    """One row per point of each arm (:data:`CSV_COLUMNS`); numbers that read back exactly."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for row in f.rows(price):
        lo_hi = lambda key: row.get(key, [None, None])  # noqa: E731
        writer.writerow([row["arm"], row["concurrency"], row["running"], row["gamma"], _exact(row["tpot_s"]),
                         _exact(row["tokens_per_user"]), *map(_exact, lo_hi("tokens_per_user_80")),
                         _exact(row["tokens_per_gpu"]), *map(_exact, lo_hi("tokens_per_gpu_80")),
                         _exact(row.get("cost_per_million"))])
    return buffer.getvalue()


def json_text(f, price=None, cheapest=None, target=None) -> str:
    d = f.deployment
    c = f.crossover()
    record = {"model": f.served_as or d.model.name, "architecture": d.model.name, "hardware": d.hardware.name, "tp": d.tp, "ep": d.ep,
              "dp_attention": d.dp_attention, "engine": _cal.spelled(d.engine), "step_time": str(d.step_time),
              "drafter": f.speculative_deployment.drafter.name if f.speculative_deployment.drafter else None,
              "acceptance": f.acceptance.describe(), "precision": f.speculative_deployment.precision_words(),
              "workload": {"input": f.prompt, "output": f.output, "mean_context": f.context},
              "price_per_gpu_hour": price, "interval": None if f.plain.speed_lo is None else _cal.INTERVAL_LEVEL,
              "interval_name": None if f.plain.speed_lo is None else _cal.interval_name(f.deployment.model),
              "points": f.rows(price),
              "crossover": {"tokens_per_user": c.speed if c.crosses else None, "faster_wins": c.above or None,
                            "compared_from": c.lowest, "compared_to": c.highest, "text": str(c)},
              "target": None if cheapest is None else {"min_tokens_per_user": target, **cheapest},
              "notes": list(f.notes)}
    return json.dumps(record, indent=1, allow_nan=False) + "\n"


def plot_bytes(f, path: str, price=None, target=None) -> bytes:
    """The frontier drawn (a PNG or an SVG, by ``path``'s suffix) as bytes, to be written by the caller."""
    from ..presentation.figures.cost_of_a_token import deployment_frontier

    kind = path.rsplit(".", 1)[-1].lower()
    fig = deployment_frontier(frontier=f, price=price, target=target)
    buffer = io.BytesIO()
    fig.savefig(buffer, format=kind, bbox_inches="tight", **({"dpi": 150} if kind == "png" else {}))
    import matplotlib.pyplot as plt

    plt.close(fig)
    return buffer.getvalue()


def plot_kind(path: str):
    """The format ``path`` names (its suffix), or None where it is not one of :data:`PLOT_FORMATS`."""
    kind = path.rsplit(".", 1)[-1].lower() if "." in path else ""
    return kind if kind in PLOT_FORMATS else None

