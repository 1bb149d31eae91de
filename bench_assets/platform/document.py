"""The document model every rendered report shares: blocks, their markdown and self-contained HTML, and figures.

A report builds one list of blocks (`Heading`, `Paragraph`, `Bullets` of `Item`s, `Table` of `Cell`s, `Image`)
and renders it twice, with `to_markdown` and `to_html`, so its two pages never disagree on content. The HTML page
is self-contained: one stylesheet, a head whose Content-Security-Policy lets nothing but inline styles and embedded
images load (the page works offline and by mail), and every image embedded as a data URI. Plots are drawn with
`blank_figure` inside `plot_context()` and saved with `figure_png`, which gives the same bytes on every run.

Pure (no Dagster import); matplotlib is imported inside functions, because the code location imports the
renderers and must stay light. What the numbers say and how they are formatted stays in each family's renderer.
"""

from __future__ import annotations

import base64
import html
import io
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# ---------------------------------------------------------------------------------------------- blocks


@dataclass(frozen=True)
class Heading:
    text: str
    level: int = 2


@dataclass(frozen=True)
class Paragraph:
    text: str
    markup: bool = False  # our own prose using **bold** and `code`; data never goes into such a paragraph


@dataclass(frozen=True)
class Item:
    """One bullet: a bold lead, its text, and optional sub-bullets."""

    lead: str
    text: str
    sub: tuple[str, ...] = ()


@dataclass(frozen=True)
class Bullets:
    items: tuple[Item, ...]


@dataclass(frozen=True)
class Cell:
    """A table cell: its text, optionally in bold, and a suffix shown after it in plain type (a mark, a count)."""

    text: str
    bold: bool = False
    suffix: str = ""


@dataclass(frozen=True)
class Table:
    headers: tuple[str, ...]
    rows: tuple[tuple[Cell, ...], ...]
    numeric: frozenset[int] = frozenset()  # column indexes aligned right (markdown) and in tabular figures (HTML)


@dataclass(frozen=True)
class Image:
    """A plot: `key` names its PNG among the renderer's images and files; `alt` doubles as its caption."""

    key: str
    alt: str


Block = Heading | Paragraph | Bullets | Table | Image
MarkdownEscape = Callable[[Any], str]


def table(headers: Sequence[str], rows: Sequence[Sequence[str | Cell]], numeric: Sequence[int] = ()) -> Table:
    """A `Table` from plain values and `Cell`s; a plain value becomes a `Cell` of its text."""
    cells = tuple(tuple(c if isinstance(c, Cell) else Cell(str(c)) for c in row) for row in rows)
    return Table(tuple(headers), cells, frozenset(numeric))


# ---------------------------------------------------------------------------------------------- markdown


def md_literal(text: Any) -> str:
    """Text that markdown shows as it is: backslashes, HTML specials and every markdown special (*_`[]|) escaped,
    whitespace collapsed to single spaces."""
    escaped = md_html_safe(text)
    for ch in "*_`[]":
        escaped = escaped.replace(ch, "\\" + ch)
    return escaped


def md_html_safe(text: Any) -> str:
    """Text safe in a markdown page and table: backslashes, HTML specials and pipes escaped, whitespace collapsed;
    other markdown specials (*_`[]) keep their meaning."""
    s = str(text).replace("\\", "\\\\").replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return " ".join(s.replace("|", "\\|").split())


def _md_prose(text: str) -> str:
    """Our own prose, which may use **bold** and `code`: only HTML-special characters escaped."""
    return " ".join(text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").split())


def _md_cell(cell: Cell, escape: MarkdownEscape) -> str:
    if not cell.text and not cell.suffix:
        return ""
    body = f"**{escape(cell.text)}**" if cell.bold else escape(cell.text)
    return body + (" " if cell.suffix[:1].isspace() else "") + escape(cell.suffix)


def _md_table(t: Table, escape: MarkdownEscape) -> list[str]:
    lines = ["| " + " | ".join(escape(h) for h in t.headers) + " |",
             "|" + "|".join("---:" if i in t.numeric else "---" for i in range(len(t.headers))) + "|"]
    lines += ["| " + " | ".join(_md_cell(c, escape) for c in row) + " |" for row in t.rows]
    return lines


def _md_bullets(bullets: Bullets, escape: MarkdownEscape) -> list[str]:
    lines = []
    for item in bullets.items:
        lines.append(f"- **{escape(item.lead)}** {escape(item.text)}")
        lines += [f"  - {escape(s)}" for s in item.sub]
    return lines


def _md_block(block: Block, image_files: Mapping[str, str], escape: MarkdownEscape) -> list[str]:
    if isinstance(block, Heading):
        return ["#" * block.level + " " + escape(block.text)]
    if isinstance(block, Paragraph):
        return [_md_prose(block.text) if block.markup else escape(block.text)]
    if isinstance(block, Bullets):
        return _md_bullets(block, escape)
    if isinstance(block, Table):
        return _md_table(block, escape)
    return [f"![{escape(block.alt)}]({image_files[block.key]})"]


def to_markdown(blocks: Sequence[Block], image_files: Mapping[str, str], *,
                escape: MarkdownEscape = md_literal) -> str:
    """The blocks as markdown, a blank line after each; `image_files` maps an image key to its PNG's file name.

    `escape` renders the text of headings, paragraphs, bullets, cells and captions: `md_literal` (the default)
    shows data exactly as it is, `md_html_safe` only keeps it from breaking the page and its tables.
    """
    lines: list[str] = []
    for block in blocks:
        lines += _md_block(block, image_files, escape) + [""]
    return "\n".join(lines).rstrip("\n") + "\n"


# ---------------------------------------------------------------------------------------------- HTML

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
PAGE_END = ["</body>", "</html>"]


def page_start(title: str) -> list[str]:
    """The lines of a page up to and including <body>: the stylesheet and a CSP that loads nothing external."""
    return ["<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
            '<meta http-equiv="Content-Security-Policy" '
            "content=\"default-src 'none'; img-src data:; style-src 'unsafe-inline'\">",
            f"<title>{html.escape(title)}</title>", f"<style>{CSS}</style>", "</head>", "<body>"]


def png_data_uri(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def figure_html(alt: str, png: bytes) -> str:
    """An embedded PNG with `alt` as its caption."""
    return (f'<figure><img alt="{html.escape(alt)}" src="{png_data_uri(png)}">'
            f"<figcaption>{html.escape(alt)}</figcaption></figure>")


def _html_prose(text: str) -> str:
    """Escape, then turn our own **bold** and `code` markers into tags."""
    s = html.escape(text)
    s = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", s)
    return re.sub(r"`(.+?)`", r"<code>\1</code>", s)


def _html_bullets(bullets: Bullets) -> list[str]:
    e = html.escape
    lines = ["<ul>"]
    for item in bullets.items:
        sub = "".join(f"<li>{e(s)}</li>" for s in item.sub)
        lines.append(f"<li><strong>{e(item.lead)}</strong> {e(item.text)}" + (f"<ul>{sub}</ul>" if sub else "")
                     + "</li>")
    return lines + ["</ul>"]


def _html_cell(cell: Cell, numeric: bool) -> str:
    body = f"<strong>{html.escape(cell.text)}</strong>" if cell.bold else html.escape(cell.text)
    opening = '<td class="num">' if numeric else "<td>"
    return f"{opening}{body}{html.escape(cell.suffix)}</td>"


def _html_table(t: Table) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in t.headers)
    rows = "".join("<tr>" + "".join(_html_cell(c, i in t.numeric) for i, c in enumerate(row)) + "</tr>\n"
                   for row in t.rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>\n{rows}</tbody></table>"


def _html_block(block: Block, images: Mapping[str, bytes]) -> list[str]:
    if isinstance(block, Heading):
        return [f"<h{block.level}>{html.escape(block.text)}</h{block.level}>"]
    if isinstance(block, Paragraph):
        return [f"<p>{_html_prose(block.text) if block.markup else html.escape(block.text)}</p>"]
    if isinstance(block, Bullets):
        return _html_bullets(block)
    if isinstance(block, Table):
        return [_html_table(block)]
    return [figure_html(block.alt, images[block.key])]


def to_html(blocks: Sequence[Block], images: Mapping[str, bytes], title: str) -> str:
    """The blocks as one self-contained HTML page; `images` maps an image key to its PNG bytes."""
    parts = page_start(title)
    for block in blocks:
        parts += _html_block(block, images)
    parts += PAGE_END
    return "\n".join(parts) + "\n"


# ---------------------------------------------------------------------------------------------- plots


def blank_figure(width: float, height: float) -> Any:
    """A matplotlib Figure of `width` x `height` inches with constrained layout, outside pyplot."""
    from matplotlib.figure import Figure  # no pyplot: no global state, no GUI backend

    return Figure(figsize=(width, height), layout="constrained")


def figure_png(fig: Any, dpi: int) -> bytes:
    """The figure as PNG bytes, the same on every run."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, metadata={"Software": None})  # no version tag: same bytes every run
    return buf.getvalue()


def plot_context() -> Any:
    """The style every report plot is drawn in."""
    import matplotlib.style

    # The built-in style whatever matplotlibrc says, and no mathtext: a "$" in a name is just a character.
    return matplotlib.style.context(["default", {"text.parse_math": False, "font.size": 9}])
