"""The dashboard shows each survey's respondent link and a printable QR code of it."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import segno

from deniable.aggregator.web.respond import CSP


def test_the_survey_page_shows_the_link_and_its_qr_code(researcher):
    html = researcher.get("/surveys/habits").get_data(as_text=True)
    assert 'id="respondent-link" href="/s/habits">http://localhost/s/habits</a>' in html
    assert "/surveys/habits/qr.svg" in html and "#invitation=" in html  # invite-only: says how


def test_the_qr_code_is_an_svg_of_the_respondent_link(researcher):
    response = researcher.get("/surveys/habits/qr.svg")
    assert response.status_code == 200 and response.mimetype == "image/svg+xml"
    svg = ET.fromstring(response.data)
    assert svg.tag.endswith("svg")
    expected = segno.make("http://localhost/s/habits", error="m")
    side = (expected.symbol_size(scale=8, border=4))[0]
    assert svg.get("width") == str(side)  # the link's own symbol, not another text's
    assert researcher.get("/surveys/nope/qr.svg").status_code == 404


def test_the_qr_code_needs_a_login(client):
    response = client.get("/surveys/habits/qr.svg")
    assert response.status_code == 302 and "/login" in response.headers["Location"]


def test_the_respondent_page_is_public_strict_and_cookieless(client):
    response = client.get("/s/habits")
    assert response.status_code == 200
    assert response.headers["Content-Security-Policy"] == CSP
    assert "Set-Cookie" not in response.headers
    html = response.get_data(as_text=True)
    assert "<script>" not in html and " style=" not in html  # no inline script or style
    assert re.search(r'type="module" src="/static/v/[0-9a-f]{16}/respond.js"', html)
    assert 'name="smokes" value="yes"' in html and 'name="party" value="B"' in html
    assert "What is sent" in html  # deniable explain's words
    missing = client.get("/s/nope")
    assert missing.status_code == 404 and "No such survey" in missing.get_data(as_text=True)
    assert "Set-Cookie" not in missing.headers
