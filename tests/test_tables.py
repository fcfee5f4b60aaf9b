"""NumberTable, the one renderer behind every table of the library. Expected
strings are written out by hand for tiny inputs."""
import subprocess
import sys

import pytest

from speclib.presentation import tables
from speclib.presentation.tables import NumberTable, number


def test_number_formats_whole_and_fractional_values():
    assert number(12345) == "12,345"
    assert number(3.0) == "3"
    assert number(0.123456) == "0.1235"
    assert number(54321.7) == "54,322"
    assert number(-2.5) == "-2.5"


def test_text_is_right_aligned_by_default():
    table = NumberTable(("B", "value"), ((1, 0.5), (12_345, 2.0), (3, None)), formats=("", ".2f"), caption="demo")
    assert repr(table) == ("demo\n"
                           "     B  value\n"
                           "     1   0.50\n"
                           "12,345   2.00\n"
                           "     3      \u2014")


def test_formats_cover_specs_callables_strings_and_the_default():
    table = NumberTable(("a", "b", "c", "d"), ((0.25, 7, "as is", 1_000_000),),
                        formats=(".0%", lambda v: f"<{v}>", ".3f"))
    assert repr(table) == ("  a    b      c          d\n"
                           "25%  <7>  as is  1,000,000")


def test_alignment_per_column_in_text_and_html():
    table = NumberTable(("name", "n"), (("ab", 5), ("c", 10)), align="l")
    assert repr(table) == ("name   n\n"
                           "ab     5\n"
                           "c     10")
    assert table._repr_html_() == (
        '<table class="speclib-number-table"><thead><tr>'
        '<th style="text-align:left">name</th><th style="text-align:right">n</th></tr></thead><tbody>'
        '<tr><td style="text-align:left">ab</td><td style="text-align:right">5</td></tr>'
        '<tr><td style="text-align:left">c</td><td style="text-align:right">10</td></tr></tbody></table>')


def test_html_escapes_headers_cells_caption_and_class():
    table = NumberTable(("a<b",), (("x & y",),), caption='"q" <c>', css_class="t")
    assert table._repr_html_() == (
        '<table class="speclib-number-table t"><caption>&quot;q&quot; &lt;c&gt;</caption>'
        '<thead><tr><th style="text-align:right">a&lt;b</th></tr></thead>'
        '<tbody><tr><td style="text-align:right">x &amp; y</td></tr></tbody></table>')


def test_empty_table_keeps_its_header():
    table = NumberTable(("x", "yy"), ())
    assert repr(table) == "x  yy"
    assert "<tbody></tbody>" in table._repr_html_()


def test_output_is_deterministic():
    make = lambda: NumberTable(("v",), ((1 / 3,), (2 / 3,)), caption="c")  # noqa: E731
    assert repr(make()) == repr(make()) == "c\n     v\n0.3333\n0.6667"
    assert make()._repr_html_() == make()._repr_html_()


@pytest.mark.parametrize("align", ["lrx", "c", "lll"])
def test_bad_alignment_is_refused_by_name(align):
    with pytest.raises(ValueError, match="align"):
        NumberTable(("a", "b"), (), align=align)


def test_tables_module_does_not_import_matplotlib():
    code = ("import sys, speclib.presentation.tables, speclib.evidence.validation, speclib.core.parallel; "
            "print('matplotlib' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
