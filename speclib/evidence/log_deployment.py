"""What an engine's log says of the deployment that wrote it, as a
:class:`~speclib.Deployment`: so that a schedule for the log's own server is
priced on the engine, the parallel layout and the precisions the log states,
and on nothing it does not state without saying so.

SGLang prefixes every scheduler line with its ranks (``run_scheduler_process``
in ``python/sglang/srt/managers/scheduler.py``, sgl-project/sglang): `` DP{d}``
when the server runs data parallel, `` TP{t}`` when its tensor-parallel group
is wider than one GPU, and, in releases from mid 2025 on, `` EP{e}`` when the
experts are split over more than one (`` PP{p}`` for pipeline stages). Under
data-parallel attention (``--enable-dp-attention``) the DP ranks live inside
one tensor-parallel group, each GPU its own attention rank: a line's DP rank
is its TP rank divided by the attention group's width (tp / dp), so equal DP
and TP ranks on every line mean one GPU per attention rank. Only the first
GPU of an attention group logs its batches (``log_decode_stats`` runs under
``if self.attn_tp_rank == 0``), so the group holds at least (the largest DP
rank + 1) x that width GPUs, and without data-parallel attention a log shows
rank 0 alone and states no width. Plain data parallelism (replicas, each
its own TP group) numbers the TP ranks of every DP rank from 0 again, so a DP
rank seen with more than one TP rank, or a TP rank below its DP rank, is
that, and is refused here (each replica is a deployment of its own). A log
without an EP label says nothing of expert parallelism when its release
predates the label; the deployment then splits the experts by tensor
parallelism, as the engine does by default, and says that it assumed so.

vLLM's ``SpecDecoding metrics:`` lines come from the API server's process
(``(APIServer pid=...)``) and carry no rank: the log states the engine and
nothing of the layout. No log states the chip, the checkpoint's precisions or
the drafter's length; :meth:`LogDeployment.deployment` takes them, and
:attr:`LogDeployment.unstated` lists them.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .._checks import read_text
from ..core.deployment import Deployment

#: The rank labels of an SGLang scheduler line's prefix, after its time stamp.
_SGLANG_PREFIX = re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?P<ranks>(?: (?:DP|PP|TP|EP|ATTN_CP|MOE_DP)\d+)*)\]")
_RANK = re.compile(r"(DP|PP|TP|EP|ATTN_CP|MOE_DP)(\d+)")


@dataclass(frozen=True)
class LogDeployment:
    """The deployment a log states: ``engine`` (a calibrated step's engine
    name), ``tp`` (the GPUs of its tensor-parallel group, the fewest its
    ranks imply; None: not stated), ``dp_attention``, ``ep`` (None: not stated),
    the precisions ``weights`` and ``kv_cache`` (None: not stated, the
    checkpoint's own), the ``ranks`` seen (``(dp, tp, ep)`` per line, None
    where a label is absent), the ``running`` requests per line, and what it
    ``stated`` and left ``unstated``, a phrase each."""

    engine: str
    tp: int | None = None
    dp_attention: bool = False
    ep: int | None = None
    weights: str | None = None
    kv_cache: str | None = None
    ranks: tuple = ()
    running: tuple = ()
    stated: tuple = ()
    unstated: tuple = ()
    source: str = ""

    def deployment(self, model=None, hardware=None, **options) -> Deployment:
        """The :class:`~speclib.Deployment` of ``model`` on ``hardware`` that
        the log describes: its engine, ``tp``, ``dp_attention``, ``ep`` (1
        where the log does not state it) and precisions, with ``options``
        for what no log states (``step_time``, ``drafter`` or ``c_draft``,
        ``attention``, ...). An option that contradicts what the log states
        is a ValueError naming it."""
        stated = {"engine": self.engine, "dp_attention": self.dp_attention}
        if self.tp is not None:
            stated["tp"] = self.tp
        if self.ep is not None:
            stated["ep"] = self.ep
        for name in ("weights", "kv_cache"):
            if getattr(self, name) is not None:
                stated[name] = getattr(self, name)
        for name, value in options.items():
            if name in stated and value != stated[name]:
                raise ValueError(f"{name}: the log states {stated[name]!r} ({self.source}); got {value!r}")
        return Deployment(model, hardware, **{**stated, **options})


def log_deployment(path) -> LogDeployment:
    """What the engine log at ``path`` states of its deployment (see the
    module notes): an SGLang scheduler log's rank labels, or a vLLM log's
    engine alone. A file that is neither, or an SGLang log of plain data
    parallelism, is a ValueError naming the file."""
    text = read_text(path, "the log", "an engine log is UTF-8 text", "empty file (expected an SGLang or vLLM log)")
    name = str(path)
    if "Decode batch" in text:
        return _sglang(text, name)
    if "SpecDecoding metrics:" in text:
        return LogDeployment(
            engine="vLLM", source=name,
            stated=("the engine: vLLM (its 'SpecDecoding metrics:' lines)",),
            unstated=("the tensor-parallel width and layout (the API server's lines carry no rank)",
                      "expert parallelism", "the chip", "the precisions of the weights and the KV cache"))
    raise ValueError(f"{name}: neither an SGLang scheduler log ('Decode batch' lines) nor a vLLM log "
                     "('SpecDecoding metrics:' lines)")


def _sglang(text: str, name: str) -> LogDeployment:
    ranks, running = [], []
    for number, line in enumerate(text.splitlines(), 1):
        if "Decode batch" not in line:
            continue
        match = _SGLANG_PREFIX.match(line.strip())
        if match is None:
            raise ValueError(f"{name}: line {number}: a 'Decode batch' line without SGLang's '[date time ranks]' "
                             "prefix")
        labels = dict((label, int(value)) for label, value in _RANK.findall(match["ranks"]))
        ranks.append((labels.get("DP"), labels.get("TP"), labels.get("EP")))
        count = re.search(r"#running-req: (\d+)", line)
        running.append(int(count[1]) if count else 0)
    dp = {d for d, _, _ in ranks if d is not None}
    tp = {t for _, t, _ in ranks if t is not None}
    ep = {e for _, _, e in ranks if e is not None}
    stated = ["the engine: SGLang (its 'Decode batch' lines)"]
    unstated = ["the chip", "the precisions of the weights and the KV cache"]
    width = None
    dp_attention = False
    if dp:
        # data-parallel attention: one width a (GPUs per attention rank) with every line's DP rank = TP rank // a;
        # replicas number each one's TP ranks from 0, so no width fits them
        widths = [a for a in range(1, max(tp, default=0) + 2)
                  if all(t is not None and t // a == d for d, t, _ in ranks)]
        if not widths:
            raise ValueError(f"{name}: DP ranks that each hold TP ranks of their own: plain data parallelism, "
                             "replicas of one deployment each; give one replica's lines")
        if max(dp) == 0:
            raise ValueError(f"{name}: only DP rank 0 is seen: data-parallel attention and replicas look alike; "
                             "give lines of more than one DP rank")
        dp_attention = True
        a = widths[0]
        width = (max(dp) + 1) * a
        stated.append(f"data-parallel attention inside one tensor-parallel group: DP ranks {_listed(dp)} on TP ranks "
                      f"{_listed(tp)}, " + ("each DP rank on its own GPU" if a == 1 else f"each DP rank on {a} GPUs"))
    if width is not None:
        stated.append(f"a tensor-parallel group of at least {width} GPUs (TP ranks up to {max(tp)})")
    else:  # without DP attention only the group's first rank logs its batches
        unstated.append("the tensor-parallel width (only the first rank of a group logs 'Decode batch' lines)")
    if ep:  # the fewest GPUs the ranks seen imply, a divisor of the group where the group is known
        ep_width = max(ep) + 1
        if width is not None:
            ep_width = min(n for n in range(ep_width, width + 1) if width % n == 0)
        stated.append(f"experts split over {ep_width} GPUs (EP ranks up to {max(ep)})")
    else:
        unstated.append("expert parallelism (no EP label: SGLang labels it from mid 2025 on; the experts are taken "
                        "as split by tensor parallelism, the engine's default)")
        ep_width = None
    if running and any(running):
        stated.append(f"{', '.join(str(r) for r in sorted(set(running)))} running requests per line")
    return LogDeployment(engine="SGLang", tp=width, dp_attention=dp_attention, ep=ep_width, ranks=tuple(ranks),
                         running=tuple(running), stated=tuple(stated), unstated=tuple(unstated), source=name)


def _listed(values) -> str:
    return ", ".join(str(v) for v in sorted(values))


__all__ = ["LogDeployment", "log_deployment"]
