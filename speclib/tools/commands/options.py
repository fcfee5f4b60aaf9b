"""What every ``speclib`` command shares on the way in: bad input
(:class:`UsageError`, reported as one line, exit status 2), the option
groups (:func:`add_model_options`), the parsing of option values
(:func:`parse_grid`) and the one :class:`~speclib.Deployment` the options
describe (:func:`deployment`)."""
from __future__ import annotations

import argparse
import json
import re
import sys

import numpy as np

from ... import presets
from ...core import calibrated as _cal
from ...core import capacity as _capacity
from ...core import cost as _cost
from ...core import deployment as _deployment
from ...core.deployment import Deployment
from ...core.step import ROOFLINES

EXIT_USAGE = 2

#: speclib's parameter names -> the options that set them, for error messages.
OPTION_FOR_PARAMETER = {
    "B": "--batch",
    "S": "--seq",
    "alpha": "--alpha",
    "c_draft": "--draft-cost",
    "gamma_max": "--gamma-max",
    "roofline": "--roofline",
    "max_batch": "--max-batch",
    "max_ranges": "--max-ranges",
    "max_k": "--max-k",
    "query_bytes": "--query-bytes",
    "seq": "--seq",
    "survival": "--acceptance",
    "batches": "--batch",
    "step_time": "--step-time",
    "tp": "--tp",
    "interconnect": "--interconnect",
    "engine": "--engine",
    "reserve": "--reserve",
    "context": "--seq",
    "batch": "--batch",
    "method": "--method",
    "draft_model": "--draft-model",
    "workload": "--workload",
    "concurrencies": "--concurrency",
    "gamma": "--gamma",
    "price_per_gpu_hour": "--price-per-gpu-hour",
    "min_tokens_per_user": "--min-tokens-per-user",
    "weights": "--weights",
    "kv_cache": "--kv-cache",
    "activations": "--activations",
    "drafter_weights": "--drafter-weights",
}

#: The ranges speclib accepts, as its error messages state them (a test holds
#: the two in step); used when a value is not a number at all.
OPTION_RANGES = {
    "--batch": "a number in (0, inf)",
    "--seq": "a number in (0, inf)",
    "--alpha": "a number in [0, 1]",
    "--draft-cost": "a number in [0, inf)",
    "--gamma-max": "an integer in [0, 4096]",
    "--max-batch": "an integer in [1, 1000000]",
    "--max-ranges": "an integer in [1, 64]",
    "--max-k": "an integer in [0, 4096]",
    "--tp": "an integer in [1, 1024]",
    "--ep": "an integer in [1, inf)",
    "--reserve": "a number in [0, 1)",
    "--gamma": "an integer in [1, 4096]",
    "--price-per-gpu-hour": "a number in (0, inf)",
    "--min-tokens-per-user": "a number in (0, inf)",
}

_RANGE = re.compile(r"^\s*([^:]+):([^:]+):(log|lin)?(\d+)\s*$", re.IGNORECASE)


class UsageError(Exception):
    """Bad input: reported as one line, exit status 2."""


#: A value that starts with a minus and a digit: a negative number or a list
#: of them (argparse reads only a plain negative number as a value, not "-4,8").
_NEGATIVE_VALUE = re.compile(r"^-[\d.]")


class Parser(argparse.ArgumentParser):
    """argparse with its errors raised as one line instead of usage + message."""

    def error(self, message):  # noqa: D401 - argparse's hook
        raise UsageError(f"{self.prog}: error: {' '.join(message.split())}")

    def parse_known_args(self, args=None, namespace=None):
        return super().parse_known_args(None if args is None else joined_values(args), namespace)


def joined_values(argv) -> list:
    """``argv`` with each option's value that starts with a minus and a digit
    joined to it (``--concurrency -4,8`` as ``--concurrency=-4,8``), so that
    the option's own check, not argparse's "expected one argument", reads it."""
    argv = list(argv)
    out, i = [], 0
    while i < len(argv):
        word = argv[i]
        if (isinstance(word, str) and word.startswith("--") and "=" not in word and i + 1 < len(argv)
                and isinstance(argv[i + 1], str) and _NEGATIVE_VALUE.match(argv[i + 1])):
            out.append(f"{word}={argv[i + 1]}")
            i += 2
            continue
        out.append(word)
        i += 1
    return out


# --- parsing values -------------------------------------------------------------
def _number(option: str, text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise UsageError(f"{option} must be {OPTION_RANGES[option]}; got {text.strip()!r}") from None


def typed(option: str, convert):
    """An argparse ``type`` whose error names the accepted range."""

    def parse(text: str):
        try:
            return convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {OPTION_RANGES[option]}; got {text!r}") from None

    parse.__name__ = option  # argparse names the type in some messages
    return parse


def parse_grid(option: str, text: str, *, counts: bool = False) -> np.ndarray:
    """Values of a sweep axis: comma-separated numbers and ranges.

    A range is ``START:STOP:N`` or ``START:STOP:linN`` (N evenly spaced points,
    both ends included) or ``START:STOP:logN`` (N log-spaced points). With
    ``counts`` (batch sizes, context lengths) the points of a range are rounded
    to whole numbers and repeats dropped; numbers written out are kept as given.
    """
    values = []
    for item in text.split(","):
        if not item.strip():
            raise UsageError(f"{option}: empty item in {text!r} (give numbers or START:STOP:N ranges)")
        if ":" not in item:
            values.append(_number(option, item))
            continue
        match = _RANGE.match(item)
        if not match:
            raise UsageError(f"{option}: range {item.strip()!r} must be START:STOP:N, START:STOP:linN or START:STOP:logN")
        start, stop = _number(option, match[1]), _number(option, match[2])
        n = int(match[4])
        if not 1 <= n <= 100_000:
            raise UsageError(f"{option}: range {item.strip()!r} must have N in [1, 100000] points; got {n}")
        if (match[3] or "lin").lower() == "log":
            if not (start > 0 and stop > 0):
                raise UsageError(f"{option}: log range {item.strip()!r} needs START > 0 and STOP > 0")
            points = np.geomspace(start, stop, n)
        else:
            points = np.linspace(start, stop, n)
        if counts:
            points = np.unique(np.round(points)) if start <= stop else np.unique(np.round(points))[::-1]
        values.extend(points.tolist())
    return np.asarray(values, dtype=float)


def split_names(text: str) -> list:
    return [name.strip() for name in text.split(",") if name.strip()]


#: What speclib's messages advise in the library's words, as the command line
#: says it (a test holds each library phrase to the message that has it):
#: the command line has no option that turns the memory check off.
LIBRARY_ADVICE = {
    "(give more GPUs with tp, a shorter context, or reserve=None to price every sequence without a memory check)":
        "(give more GPUs with --tp, or a shorter --seq)",
    "(give more GPUs: tp)": "(give more GPUs: --tp)",
}


def speclib_error(exc: ValueError) -> str:
    """speclib's message with its parameter name swapped for the CLI option
    (and its advice, :data:`LIBRARY_ADVICE`)."""
    message = str(exc)
    for library, cli in LIBRARY_ADVICE.items():
        message = message.replace(library, cli)
    head, _, rest = message.partition(" ")
    name, colon = (head[:-1], ":") if head.endswith(":") else (head, "")
    if name in OPTION_FOR_PARAMETER:
        return f"{OPTION_FOR_PARAMETER[name]}{colon} {rest}"
    return message


def model_config(path):
    """The model of --model-config's Hugging Face config.json."""
    try:
        return presets.from_hf_config(path)
    except ValueError as exc:
        raise UsageError(f"--model-config: {exc}") from None


def hardware_config(path):
    """The chip of --hardware-config's JSON or YAML file."""
    try:
        return presets.from_hardware_config(path)
    except ValueError as exc:
        raise UsageError(f"--hardware-config: {exc}") from None


def models(args) -> list:
    if args.model_config is not None:
        if args.model is not None:
            raise UsageError("--model-config: give either --model or --model-config, not both")
        return [model_config(args.model_config)]
    try:
        return [presets.model(name) for name in split_names(args.model or presets.DEFAULT_MODEL.name)]
    except ValueError as exc:
        raise UsageError(f"--model: {exc}") from None


def model_label(args, model) -> str:
    """The model as the headers name it: the one --model asked for, with its
    preset's architecture beside it where that is another model's
    (``--model deepseek-r1``: "DeepSeek-R1 (DeepSeek-V3 architecture)");
    the preset's name otherwise."""
    served = served_model(args, model)
    return model.name if served == model.name else f"{served} ({model.name} architecture)"


def served_model(args, model) -> str:
    """The model --model asked for, as it is named (``deepseek-r1``:
    "DeepSeek-R1"); the preset's name where it names the preset itself."""
    asked = getattr(args, "model", None)
    if asked is None or getattr(args, "model_config", None) is not None:
        return model.name
    return presets.served_name(asked) or model.name


def drafters(args) -> list:
    """The --drafter presets (None: the paper's constant --draft-cost)."""
    if args.drafter is None:
        return [None]
    if args.draft_cost is not None:
        raise UsageError("--drafter: give either --draft-cost (the paper's constant drafter cost) or --drafter (a "
                         "drafter priced by its own roofline), not both")
    try:
        return [presets.drafter(name) for name in split_names(args.drafter)]
    except ValueError as exc:
        raise UsageError(f"--drafter: {exc}") from None


def hardware(args) -> list:
    config = getattr(args, "hardware_config", None)
    if config is not None:
        if args.hardware is not None:
            raise UsageError("--hardware-config: give either --hardware or --hardware-config, not both")
        return [hardware_config(config)]
    try:
        return [presets.hardware(name) for name in split_names(args.hardware or presets.DEFAULT_HARDWARE.name)]
    except ValueError as exc:
        raise UsageError(f"--hardware: {exc}") from None


def deployment(args, model=None, chip=None, drafter=None) -> Deployment:
    """The one :class:`~speclib.Deployment` the options describe: --model,
    --hardware and --drafter (or the given ``model``, ``chip`` and
    ``drafter``), --tp, --interconnect, --engine (its calibration name,
    :data:`CALIBRATION_ENGINE`), --step-time (or the
    --calibration read into it), --roofline, --draft-cost (sweep's is a grid,
    priced per row), --query-bytes and --reserve."""
    if model is None:
        model, chip, drafter = one_model(args)
    calibrated_by = CALIBRATION_ENGINE[engine(args)]
    c_draft = None if args.command == "sweep" else args.draft_cost
    if args.drafter_weights is not None and drafter is None:
        raise UsageError("--drafter-weights: the precision of a --drafter's weights; give --drafter (a drafter "
                         "preset)")
    if args.interconnect is not None:
        try:
            presets.interconnect(args.interconnect)
        except ValueError as exc:
            raise UsageError(f"--interconnect: {exc}") from None
    try:
        return Deployment(model, chip, tp=args.tp, engine=calibrated_by, step_time=args.step_time, roofline=args.roofline,
                          drafter=drafter, c_draft=c_draft, query_bytes=args.query_bytes, reserve=args.reserve,
                          ep=args.ep, dp_attention=args.dp_attention, attention=args.attention,
                          interconnect=args.interconnect,
                          **precision(args))
    except ValueError as exc:
        raise UsageError(speclib_error(exc)) from None


def precision(args) -> dict:
    """The precision options (:func:`add_precision_options`) as
    :class:`~speclib.Deployment` fields; None keeps the checkpoint's."""
    return {name: getattr(args, name, None) for name in PRECISION_FIELDS}


#: The Deployment fields the precision options set, each by the option of its name.
PRECISION_FIELDS = ("weights", "kv_cache", "activations", "drafter_weights")


def add_precision_options(parser, *, drafter: bool = True):
    """The precision served, one option group on every command that prices
    a deployment: the decoder weights, their GEMMs' activations, the KV
    cache and (``drafter``) the drafter's weights, each defaulting to the
    checkpoint's own (the preset's, or the --model-config's
    quantization_config). Every header says what was priced."""
    group = parser.add_argument_group("precision served (default: the checkpoint's own; the header says which)")
    group.add_argument("--weights", choices=presets.PRECISIONS, type=str.lower, help="the decoder weights' precision "
                       "(projections and experts): fp4, fp8 or bf16 (default: the checkpoint's: the preset's, or "
                       "--model-config's quantization_config; DeepSeek-V3/R1 are fp8 as served)")
    group.add_argument("--kv-cache", choices=tuple(presets.KV_BYTES), type=str.lower, help="the KV cache's "
                       "precision: bf16 or fp8 (default: the checkpoint's dtype; an engine's --kv-cache-dtype fp8 "
                       "is fp8)")
    group.add_argument("--activations", choices=presets.PRECISIONS, type=str.lower, help="the precision the "
                       "GEMMs' activations are quantised to: a GEMM runs at the wider of its weights' and its "
                       "activations' rate, so fp4 experts with --activations fp8 (W4A8) run at the fp8 rate "
                       "(default: as each GEMM's weights, W4A4 for fp4 experts, as the paper prices them)")
    if drafter:
        group.add_argument("--drafter-weights", choices=presets.PRECISIONS, type=str.lower, help="the --drafter's "
                           "weights' precision (default: the drafter preset's)")


def one_model(args):
    """The one model, chip and drafter of a command that prices one deployment."""
    (model, *more), (chip, *chips), (drafter, *others) = models(args), hardware(args), drafters(args)
    if more:
        raise UsageError(f"--model: {args.command} takes one model")
    if chips:
        raise UsageError(f"--hardware: {args.command} takes one chip")
    if others:
        raise UsageError(f"--drafter: {args.command} takes one drafter")
    return model, chip, drafter


def seq_list(args, *, default="4096"):
    text = default if args.seq is None else args.seq
    values = parse_grid("--seq", text, counts=True)
    if any(not (v > 0) for v in values):
        raise UsageError(f"--seq must be {OPTION_RANGES['--seq']}; got {text!r}")
    return [float(v) for v in values]


#: --engine's values, one spelling on every command (any case accepted).
ENGINES = _cal.ENGINE_OPTIONS
#: The engine a command prices with where --engine is not given.
DEFAULT_ENGINE = "vllm"
#: The calibration's name of each --engine (the fixed time per step it
#: prices a calibrated step with; a chip without its own for that engine
#: takes its vendor's, which one line on standard error says).
CALIBRATION_ENGINE = {option: name for name, option in _cal.ENGINE_SPELLING.items()}


def engine_value(text: str) -> str:
    """--engine's value in its one spelling (vllm, sglang, trtllm; any case)."""
    key = text.strip().lower()
    if key not in ENGINES:
        extra = (" (the neutral table: speclib schedule --format table)" if key == "table" else "")
        raise argparse.ArgumentTypeError(f"must be one of {', '.join(ENGINES)} (any case){extra}; got {text!r}")
    return key


engine_value.__name__ = "--engine"


def engine(args) -> str:
    """The engine a command prices with: --engine, else :data:`DEFAULT_ENGINE`."""
    return getattr(args, "engine", None) or DEFAULT_ENGINE


def positive(option: str, value):
    if value is not None and not value > 0:
        raise UsageError(f"{option} must be {OPTION_RANGES[option]}; got {value:g}")
    return value


def add_model_options(parser, *, several: bool, engine_help: str = ""):
    noun = "name(s), comma-separated" if several else "name"
    parser.add_argument("--model", help=f"model preset {noun} (default {presets.DEFAULT_MODEL.name}; see 'speclib presets')")
    parser.add_argument("--model-config", metavar="PATH", help="a Hugging Face style config.json to build the model from, instead of --model")
    parser.add_argument("--hardware", help=f"hardware preset {noun} (default {presets.DEFAULT_HARDWARE.name})")
    parser.add_argument("--hardware-config", metavar="PATH", help="a chip that is not a preset: a JSON or YAML file "
                        "of its numbers (vendor, memory_bandwidth_TBps, hbm_capacity_GB, bf16_TFLOPS, fp8_TFLOPS, "
                        "fp4_TFLOPS), instead of --hardware")
    parser.add_argument("--gamma-max", type=typed("--gamma-max", int), default=64, metavar="N", help="longest draft length searched, 0..4096 (default 64)")
    parser.add_argument(
        "--drafter", metavar="NAME" + (",..." if several else ""),
        help=f"a drafter priced by its own roofline instead of --draft-cost: {', '.join(presets.drafter_names())} "
        "(prices the whole model's step in seconds)",
    )
    parser.add_argument(
        "--roofline", choices=ROOFLINES, default="per-component",
        help="how a step's components compose: per-component (the paper, default) or aggregate (one roofline per "
        "precision stream, as the sequel's simulator charges; prices the whole model's step)",
    )
    parser.add_argument(
        "--query-bytes", action="store_true",
        help="count the query bytes in attention's cost (the paper's ledger leaves them out; default off)",
    )
    parser.add_argument(
        "--step-time", choices=_deployment.STEP_TIMES, default="roofline",
        help="how every step (verify and drafter) is timed: roofline (the lower bound, default) or calibrated (the "
        "roofline with a chip factor, a fixed time per step, a time per sequence and per extra verified position, "
        "fitted on measured decoding and speculative runs on B200, H100, H200, MI300X, MI325X, MI355X; prices "
        "the whole model's step) or measured (each part read from NVIDIA's kernel tables measured for the chip and "
        "--engine, aiconfigurator-core 0.12.0, the roofline where no table holds a part: the header says which; "
        "no host work per step)",
    )
    parser.add_argument("--tp", type=typed("--tp", int), default=1, metavar="N",
                        help="GPUs the model is split over (tensor parallel, 1..1024, default 1): sets the memory "
                        "check, and the calibrated step's share per GPU")
    parser.add_argument("--interconnect", metavar="NAME",
                        help="the network joining the --tp GPUs, an interconnect preset (any case: "
                        f"{', '.join(presets.interconnect_names())}; default the chip's own): its domain bounds "
                        "--tp and the step's all-reduces are priced over it (GB200's NVL72 joins 72)")
    parser.add_argument("--ep", type=typed("--ep", int), default=1, metavar="N",
                        help="GPUs of the --tp group the routed experts are split over, whole (expert parallelism; "
                        "divides --tp and the experts; default 1)")
    parser.add_argument("--dp-attention", action="store_true",
                        help="split attention by sequence over the --tp GPUs (data-parallel attention: each GPU "
                        "holds its own sequences' caches and the attention weights whole)")
    parser.add_argument("--attention", choices=_cost.ATTENTIONS, default=_cost.DEFAULT_ATTENTION,
                        help="how DeepSeek-V4's attention is priced and held: served (compressed, as its config "
                        "serves it; the default of every command and of speclib.Deployment) or paper (every layer "
                        "MLA over the whole context, as the paper prices it, reproducing its figures); other models "
                        "are the same either way. The output's header says which")
    parser.add_argument("--calibration", metavar="FILE",
                        help="price every step with this calibration (as 'speclib fit' writes it) instead of "
                        "--step-time: implies a calibrated step")
    parser.add_argument("--engine", type=engine_value, metavar="{vllm,sglang,trtllm}",
                        help=engine_help or "the serving engine, any case: its fixed time per step prices "
                        "--step-time calibrated (default vllm; trtllm measured on B200 and H200 only; a chip "
                        "without its own for an engine takes its vendor's, which one line on standard error says)")
    parser.add_argument("--reserve", type=typed("--reserve", float), default=_capacity.DEFAULT_RESERVE,
                        metavar="F", help="fraction of each GPU's HBM kept free in the memory check (default 0.1, "
                        "vLLM's default)")
    add_precision_options(parser)


ACCEPTANCE_HELP = ("a survival curve instead of --alpha: what 'speclib acceptance --output' writes, a JSON list, a "
                   "JSON object's 'survival' (or FILE#KEY), numbers separated by commas, or vLLM's /metrics scrape "
                   "or log itself")


def apply_calibration(args) -> None:
    """--calibration FILE: the step is priced with that calibration."""
    path = getattr(args, "calibration", None)
    if path:
        from speclib.calibration import own_fit

        try:
            args.step_time = own_fit.read_calibration(path)
        except ValueError as exc:
            raise UsageError(f"--calibration {exc}") from None


def read_acceptance_file(path):
    """The survival curve ``--acceptance`` names: a curve file (a JSON list,
    a JSON object's ``survival`` or ``FILE#KEY``, numbers separated by commas;
    what ``speclib acceptance --output`` writes) or an engine's own file (a
    vLLM /metrics scrape or log line, read by
    :func:`speclib.evidence.engine_metrics.read_engine_metrics`)."""
    from speclib.evidence import engine_metrics
    from .. import schedule as _schedule

    text_path = str(path).partition("#")[0]
    try:
        with open(text_path, encoding="utf-8") as stream:
            text = stream.read()
        json.loads(text)
    except (OSError, UnicodeDecodeError):
        text = ""  # the curve reader says what is wrong with the file
    except ValueError:  # not JSON: an engine's file, or numbers separated by commas
        if engine_metrics.sniff(text):
            return engine_metrics.read_engine_metrics(text_path).survival
    return _schedule.read_acceptance(path)


def apply_acceptance(args) -> None:
    """--acceptance FILE: the survival curve, read once (``args.acceptance_curve``)."""
    path = getattr(args, "acceptance", None)
    args.acceptance_curve = None
    if path is None or args.command == "acceptance":
        return
    if getattr(args, "alpha", None) is not None:
        raise UsageError("--acceptance: give either --alpha (i.i.d. acceptance) or --acceptance (a survival curve), "
                         "not both")
    try:
        args.acceptance_curve = read_acceptance_file(path)
    except ValueError as exc:
        raise UsageError(f"--acceptance: {exc}") from None


def report(message: str) -> int:
    """``message`` on standard error as one line; the exit status of bad input."""
    print(" ".join(message.split()), file=sys.stderr)
    return EXIT_USAGE
