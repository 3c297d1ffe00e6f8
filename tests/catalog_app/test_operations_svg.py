"""The Operations page's SVG plots: parsed as XML, with the shapes, scale and escaping they promise."""
import xml.etree.ElementTree as ET
from datetime import datetime, timedelta, timezone

import pytest

from catalog_app.operations.svg import BOTTOM, HEIGHT, TOP, Series, bar_chart, line_chart, nice_ceiling

NS = {"svg": "http://www.w3.org/2000/svg"}
MINUTES = [datetime(2026, 12, 6, 3, 0, tzinfo=timezone.utc) + timedelta(minutes=m) for m in range(60)]


@pytest.mark.parametrize(("value", "ceiling"), [
    (0, 1), (-3, 1), (float("nan"), 1), (0.3, 0.5), (1, 1), (1.01, 2), (2.2, 2.5), (3, 5), (7, 10), (10, 10),
    (1234, 2000), (0.0042, 0.005),
])
def test_nice_ceiling(value, ceiling):
    assert nice_ceiling(value) == pytest.approx(ceiling)


def test_a_line_chart_draws_runs_lines_and_lone_values_dots():
    values = (None, 1.0, 2.0, None, 4.0) + (None,) * 55
    svg = ET.fromstring(line_chart(name="chart-x", minutes=MINUTES, series=[Series("GET /a", values)], unit=" ms"))
    group = svg.find("svg:g", NS)
    assert group.get("data-series") == "GET /a" and group.get("class") == "s0"
    assert group.get("data-values").split(",")[:5] == ["", "1", "2", "", "4"]
    assert len(group.findall("svg:polyline", NS)) == 1 and len(group.findall("svg:circle", NS)) == 1
    dot = group.find("svg:circle", NS)
    assert float(dot.get("cy")) == pytest.approx(TOP + (HEIGHT - TOP - BOTTOM) * 0.2)  # 4 on a 0..5 scale
    labels = [t.text for t in svg.findall("svg:text", NS)]
    assert "5 ms" in labels and {"03:00", "03:10", "03:50"} <= set(labels)


def test_the_scale_tops_out_at_the_round_ceiling_of_the_largest_value():
    svg = ET.fromstring(line_chart(name="c", minutes=MINUTES[:2], series=[Series("s", (0.0, 8.0))], unit=""))
    points = svg.find("svg:g/svg:polyline", NS).get("points").split()
    (_, y0), (_, y1) = (map(float, p.split(",")) for p in points)
    assert y0 == pytest.approx(HEIGHT - BOTTOM) and y1 == pytest.approx(TOP + (HEIGHT - TOP - BOTTOM) * 0.2)


def test_labels_are_escaped():
    hostile = '"><script>alert(1)</script>'
    markup = line_chart(name="c", minutes=MINUTES[:3], series=[Series(hostile, (1.0, 2.0, 3.0))], unit="<u>")
    markup += bar_chart(name="b", bars=[(hostile, 3)], unit="")
    assert "<script>" not in markup
    ET.fromstring(f"<div>{markup}</div>")  # still well-formed
    bars = ET.fromstring(bar_chart(name="b", bars=[(hostile, 3)], unit=""))
    assert bars.find("svg:g", NS).get("data-series") == hostile


def test_bars_scale_to_the_largest():
    svg = ET.fromstring(bar_chart(name="q", bars=[("enrichment", 5), ("lexical", 0), ("maintenance", 2)], unit=""))
    widths = [float(r.get("width")) for r in svg.findall(".//svg:rect", NS)]
    assert widths[1] == 0 and widths[0] == pytest.approx(widths[2] * 2.5)
