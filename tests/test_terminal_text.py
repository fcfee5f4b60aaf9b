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


def test_the_shell_shows_a_command_once_with_what_it_printed(tmp_path, monkeypatch):
    """A chapter's command runs in the shell's own folder on a copy of the public file, the caller's working
    directory untouched; the block holds the command once, then the output; a failure it did not expect raises."""
    from speclib.presentation.figures.your_deployment import PUBLIC
    from speclib.tools.shell import Shell

    monkeypatch.chdir(tmp_path)
    name = "vllm-club3090-105-qwen3.6-27b-mtp-k6.log"
    shell = Shell(name)
    block = shell.run(f"speclib acceptance {name} --output curve.json")
    text = block.text()
    assert text.startswith(f"$ speclib acceptance {name}") and text.count("$ speclib") == 1
    assert "525 drafts" in text and shell.path("curve.json").is_file() and not (tmp_path / "curve.json").exists()
    assert (shell.path(name).read_bytes() == (PUBLIC / name).read_bytes()) and str(tmp_path) == __import__("os").getcwd()
    refused = shell.run("speclib acceptance sglang-decode.log", status=2)  # not copied: refused in one line
    assert refused.text().splitlines()[1].startswith("speclib acceptance: error:")
    with pytest.raises(RuntimeError, match="exited with status 2, not 0"):
        shell.run("speclib acceptance nothing.log")
    with pytest.raises(ValueError, match="files must be"):
        Shell("no-such-file.log")
    root = shell.root
    shell.close()
    assert not root.exists()


def test_the_public_sweep_table_is_the_sources_numbers():
    import json

    from speclib.presentation.figures.your_deployment import PUBLIC, public_sweep_table

    quoted = json.loads((PUBLIC / "vllm-pr24243-minicpm3-eagle3-sweep.json").read_text())["quoted"]
    complete = sorted((r for r in quoted if r["speedup"] is not None), key=lambda r: r["concurrency"])
    table = public_sweep_table()
    assert [row[0] for row in table.rows] == [1, 10] == [r["concurrency"] for r in complete]
    for row, r in zip(table.rows, complete):
        assert row[2:] == (r["baseline_seconds"], r["speculative_seconds"], r["speedup"], r["mean_acceptance_length"])
        assert round(row[2] / row[3], 2) == row[4]  # the speed-up is the two times' ratio
    assert "measured" in table.caption
