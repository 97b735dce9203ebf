"""The pieces every published page is made of: the page shell (one stylesheet, one small script,
the navigation), markdown rendered to HTML, and tables whose rows a filter box can narrow.

Every table is in the HTML as sent: the pages read without JavaScript. The script only adds a
filter box above each table marked ``data-filter`` (rows kept whose text holds every word typed)."""

from __future__ import annotations

import re
from html import escape
from pathlib import Path

from markdown_it import MarkdownIt

STATIC = Path(__file__).resolve().parent / "static"
ASSETS = ("site.css", "site.js")
NAV = (
    ("index.html", "Pick"),
    ("latest.html", "Latest matrix"),
    ("changelog.html", "Changelog"),
    ("behaviours.html", "Behaviours"),
    ("field.html", "Field reports"),
    ("dataset.html", "Dataset"),
)
_MARKDOWN = MarkdownIt("commonmark", {"html": False}).enable("table")


def page(title: str, body: str, depth: int = 0) -> str:
    """A whole page at ``depth`` folders below the site's root (links and assets made relative)."""
    up = "../" * depth
    nav = " · ".join(f'<a href="{up}{href}">{escape(text)}</a>' for href, text in NAV)
    return (
        "<!doctype html>\n<html lang=en><head><meta charset=utf-8>"
        '<meta name=viewport content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)} · misfit-bench</title>"
        f'<link rel=stylesheet href="{up}site.css"><script defer src="{up}site.js"></script></head>\n'
        f"<body><nav>{nav}</nav><main>\n<h1>{escape(title)}</h1>\n{body}\n</main></body></html>\n"
    )


def markdown(text: str) -> str:
    """Markdown (tables included) as HTML; raw HTML in the text is shown as text, never run."""
    return _MARKDOWN.render(text)


def table(header: list[str], rows: list[list[str]], *, raw: bool = False, caption: str = "") -> str:
    """A filterable table; header and cells are escaped unless ``raw`` (already HTML)."""
    cell = (lambda text: text) if raw else escape
    head = "".join(f"<th>{cell(name)}</th>" for name in header)
    body = "\n".join("<tr>" + "".join(f"<td>{cell(value)}</td>" for value in row) + "</tr>" for row in rows)
    title = f"<caption>{escape(caption)}</caption>" if caption else ""
    opened = f"<div class=scroll><table data-filter>{title}<thead><tr>{head}</tr></thead>"
    return f"{opened}<tbody>\n{body}\n</tbody></table></div>"


def slug(text: str) -> str:
    """A file or anchor name from an SDK, release or scenario name."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-") or "-"


def link(href: str, text: str) -> str:
    return f'<a href="{escape(href)}">{escape(text)}</a>'
