"""A command and its output as the last part of the book shows them: the
command broken into shell continuation lines that a shell reads back as the
same words, prose wrapped to the column without losing a word, a table's
rows kept whole."""
import shlex

import pytest

from speclib.presentation.figures.your_deployment import Terminal, command_lines, is_table_row, output_lines
from speclib.tools.cli import run_line

LINES = [
    "speclib schedule --model-config config.json --hardware-config h20.yaml --acceptance curve.json#survival_lower "
    "--seq 1536 --max-batch 32 --draft-cost 0.05 --calibration h20-step.json --engine vllm --method eagle3",
    "speclib fit base-c*.json spec-k4-c*.json --model-config config.json --hardware-config h20.yaml --output x.json",
    "speclib presets",
]


@pytest.mark.parametrize("line", LINES)
@pytest.mark.parametrize("width", [76, 50])
def test_a_broken_command_reads_back_as_the_same_words(line, width):
    lines = command_lines(line, width)
    assert lines[0].startswith("$ ") and all(len(x) <= width for x in lines)
    assert all(x.endswith(" \\") for x in lines[:-1]) and not lines[-1].endswith("\\")
    # a shell joins a backslash-newline: the words are the command's own
    assert shlex.split("\n".join(lines)[2:].replace("\\\n", " ")) == shlex.split(line)


def test_prose_is_wrapped_without_losing_a_word_and_tables_are_kept():
    status, printed = run_line("speclib presets --hardware-only")
    assert status == 0
    prose = "mean acceptance length  3.2400 tokens per verify step (the bonus token included: 1 + 2.2400 " \
            "accepted drafts), the interval wider than its count says"
    text = printed + "  " + prose + "\n"
    out = output_lines(text, 60)
    assert " ".join(out).split() == text.split()  # every word, in order
    rows = [line for line in printed.splitlines() if is_table_row(line)]
    assert rows and all(row in out for row in rows)  # each row of the chip table whole
    assert all(len(line) <= 60 for line in out if not is_table_row(line))
    assert any(line.startswith("    ") for line in out)  # the wrapped prose's continuation, indented


def test_the_terminal_block_escapes_html():
    block = Terminal("speclib x --a <b>", "1 < 2 & 3\n")
    assert block.text() == "$ speclib x --a <b>\n1 < 2 & 3"
    assert "&lt;b&gt;" in block._repr_html_() and "1 &lt; 2 &amp; 3" in block._repr_html_()
