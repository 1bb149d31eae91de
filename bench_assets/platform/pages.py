"""The page frame every rendered report shares: one stylesheet, a head whose Content-Security-Policy lets nothing
but inline styles and embedded images load (the page works offline and by mail), and embedded figures."""

from __future__ import annotations

import base64
import html

CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto; max-width: 1300px;
       padding: 0 1em; color: #222; line-height: 1.45; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; }
th { background: #f3f3f3; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tbody tr:nth-child(even) { background: #fafafa; }
img { max-width: 100%; height: auto; }
figure { margin: 0.5em 0 1.5em; }
figcaption { color: #555; font-size: 0.9em; }
"""


def page_start(title: str) -> list[str]:
    return ["<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
            '<meta http-equiv="Content-Security-Policy" '
            "content=\"default-src 'none'; img-src data:; style-src 'unsafe-inline'\">",
            f"<title>{html.escape(title)}</title>", f"<style>{CSS}</style>", "</head>", "<body>"]


PAGE_END = ["</body>", "</html>"]


def figure(alt: str, png: bytes) -> str:
    uri = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
    return f'<figure><img alt="{html.escape(alt)}" src="{uri}"><figcaption>{html.escape(alt)}</figcaption></figure>'
