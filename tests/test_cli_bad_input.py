"""Odd input across every command: no traceback, one line on standard error
naming the option (or the file) and what it accepts, exit status 2, nothing
on standard output and nothing written."""
import os
import subprocess
import sys

import pytest

from speclib.tools import cli
from speclib.tools.commands import options

# the files the odd inputs read: each wrong in its own way (written by the fixture)
FILES = {
    "truncated.json": '{"survival": [0.8, 0.6',  # malformed JSON
    "config.json": '{"hidden_size": "big"}',  # a model config with a field of the wrong type
    "chip.yaml": "vendor: NVIDIA\nmemory_bandwidth_TBps: -3\n",  # a chip missing fields, one negative
    "calibration.json": '{"roofline_factor": 1}',  # a calibration missing its fixed times
    "steps.csv": "not,a,csv\n1,2\n",  # step costs without the columns
    "result.json": '{"x": 1}',  # a benchmark result no tool wrote
}

# (argv, what the one line must name): thirty odd inputs and more, across the commands
ODD = [
    ("gamma --batch 8 --seq 512 --alpha 0.5 --model gpt-9", "--model"),  # unknown model
    ("gamma --batch 8 --seq 512 --alpha 0.5 --hardware tpu9", "--hardware"),  # unknown chip
    ("gamma --batch 8 --seq 512 --alpha 0.5 --engine tgi", "--engine"),  # unknown engine
    ("gamma --batch 8 --seq 512 --alpha 0.5 --engine TRT", "--engine"),  # the old spelling
    ("gamma --batch 8 --seq 512 --alpha 1.5", "--alpha"),  # alpha out of range
    ("gamma --batch eight --seq 512 --alpha 0.5", "--batch"),  # not a number
    ("gamma --batch 8 --seq -512 --alpha 0.5", "--seq"),  # negative
    ("gamma --batch 8 --seq 512 --alpha nan", "--alpha"),
    ("gamma --batch 8 --seq 512 --alpha 0.5 --model-config missing.json", "--model-config"),  # missing file
    ("gamma --batch 8 --seq 512 --alpha 0.5 --model-config truncated.json", "--model-config"),  # malformed JSON
    ("gamma --batch 8 --seq 512 --alpha 0.5 --model-config config.json", "hidden_size"),
    ("gamma --batch 8 --seq 512 --alpha 0.5 --hardware-config chip.yaml", "--hardware-config"),
    ("gamma --batch 8 --seq 512 --acceptance truncated.json", "--acceptance"),
    ("gamma --batch 8 --seq 512 --acceptance missing.json", "--acceptance"),
    ("gamma --batch 8 --seq 512 --alpha 0.5 --calibration calibration.json", "--calibration"),
    ("gamma --batch 8 --seq 512 --alpha 0.5 --calibration missing.json", "--calibration"),
    ("gamma --batch 8 --seq 512 --alpha 0.5 --model llama-3-70b --hardware h200 --tp 3", "--tp"),
    ("gamma --batch 8 --seq 512 --alpha 0.5 --tp -2", "--tp"),
    ("gamma --batch 8 --seq 512 --alpha 0.5 --model deepseek-r1 --hardware b200 --tp 16", "--tp"),  # past HGX's 8
    ("gamma --batch 8 --seq 512 --alpha 0.5 --tp 8 --interconnect nvlink9", "--interconnect"),  # no such network
    ("schedule --alpha 0.5 --max-batch 8 --model deepseek-r1 --hardware h200 --tp 16 --interconnect nvlink4", "--tp"),
    ("gamma --batch 64 --seq 8192 --alpha 0.7 --model llama-3-70b --hardware h200 --step-time calibrated", "--seq"),
    ("sweep --batch 1,-4 --seq 512 --alpha 0.5", "--batch"),
    ("sweep --batch 1 --seq 512 --alpha 0.5 --model gpt-9", "--model"),
    ("schedule --alpha 0.5 --max-batch 0", "--max-batch"),
    ("schedule --alpha 0.5 --max-batch -64", "--max-batch"),
    ("schedule --alpha 0.5 --max-batch 64 --engine table", "--format table"),
    ("schedule --alpha 0.5 --max-batch 64 --format yaml", "--format"),
    ("schedule --alpha 0.5 --max-batch 64 --step-costs steps.csv", "--step-costs"),
    ("schedule --alpha 0.5 --max-batch 64 --step-costs missing.csv", "--step-costs"),
    ("schedule --alpha 0.5 --max-batch 64 --engine vllm --method eagle9", "--method"),
    ("schedule --alpha 0.5 --max-batch 64 --max-ranges 0", "--max-ranges"),
    ("schedule --alpha -0.5 --max-batch 64", "--alpha"),
    ("schedule --alpha 0.5 --max-batch 64 --output no-such-dir/x.json", "--output"),
    ("profile --seq 4096 --max-batch -3", "--max-batch"),
    ("profile --seq 4096 --max-batch 8 --hardware tpu9", "--hardware"),
    ("fit result.json --model deepseek-v3 --hardware h200 --output out.json", "result.json"),
    ("fit missing.json --model deepseek-v3 --hardware h200 --output out.json", "missing.json"),
    ("fit result.json --model deepseek-v3 --hardware h200 --output out.json --engine tgi", "--engine"),
    ("acceptance missing.prom", "missing.prom"),
    ("acceptance truncated.json", "truncated.json"),
    ("acceptance result.json --gamma -2", "--gamma"),
    ("frontier --alpha 0.6 --concurrency -4,8", "--concurrency"),  # argparse alone would say "expected one argument"
    ("frontier --alpha 0.6 --concurrency 0", "--concurrency"),
    ("frontier --alpha 0.6 --workload 9k", "--workload"),
    ("frontier --alpha 0.6 --price-per-gpu-hour -1", "--price-per-gpu-hour"),
    ("frontier --alpha 0.6 --plot out.gif", "--plot"),
    ("frontier --alpha 2", "--alpha"),
    ("presets --hardware-only --models-only", "--models-only"),
]


@pytest.fixture
def odd_files(tmp_path, monkeypatch):
    for name, text in FILES.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_there_are_thirty_odd_inputs_across_every_command():
    assert len(ODD) >= 30
    assert {line.split()[0] for line, _ in ODD} == {c.__name__.rpartition(".")[2] for c in cli.SUBCOMMANDS}


@pytest.mark.parametrize("line, named", ODD, ids=[line for line, _ in ODD])
def test_odd_input_is_one_line_exit_2_and_nothing_written(odd_files, capsys, line, named):
    before = sorted(os.listdir(odd_files))
    status = cli.main(line.split())  # a traceback here fails the test
    out, err = capsys.readouterr()
    assert status == options.EXIT_USAGE
    assert out == ""
    assert err.endswith("\n") and err.count("\n") == 1, err
    assert err.startswith(f"speclib {line.split()[0]}: error: ") and named in err, err
    assert "Traceback" not in err and "reserve=None" not in err  # the command line has no reserve=None
    assert sorted(os.listdir(odd_files)) == before  # nothing written, not even a temporary file


def test_every_library_advice_the_command_line_rewrites_is_one_the_library_gives():
    # LIBRARY_ADVICE swaps the library's words for the command line's: each phrase must still be the library's
    import speclib

    dep = speclib.Deployment("llama-3-70b", "h200")
    with pytest.raises(ValueError) as caught:
        dep.check_holds(8192 * 64)
    assert any(phrase in str(caught.value) for phrase in options.LIBRARY_ADVICE)
    assert "reserve=None" not in options.speclib_error(caught.value)


def test_a_real_process_prints_no_traceback(odd_files):
    # the installed entry point as a shell runs it, for a handful of the odd inputs
    for line, _ in ODD[::9]:
        done = subprocess.run([sys.executable, "-m", "speclib", *line.split()], capture_output=True, text=True,
                              cwd=odd_files, timeout=120)
        assert done.returncode == 2 and done.stdout == "" and done.stderr.count("\n") == 1, (line, done.stderr)
        assert "Traceback" not in done.stderr
