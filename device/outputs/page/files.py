"""The status page's own files (``device/outputs/page/static``) and how they are served."""

from __future__ import annotations

from importlib import resources

STATIC_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
}
PAGE_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
# The page that tells a browser without the token how to give it: no script, no style;
# its one form asks for the token on this same site (GET ?token=, traded for a cookie).
REFUSED_CSP = "default-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

# Where index.html carries the state it was served with: a JSON data block, which no
# browser runs (so the CSP's script-src does not apply to it), rendered by app.js at load.
STATE_SLOT = b'<script type="application/json" id="state-now">null</script>'
# Inside a <script> element only "</script" (or "<!--") can end or confuse it; JSON never
# needs <, > or & outside its strings, and inside them these escapes mean the same text.
_HTML_SAFE = str.maketrans(
    {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
)


def json_for_html(text: str) -> str:
    """JSON text made safe to sit inside an HTML <script> data block (same value parsed)."""
    return text.translate(_HTML_SAFE)


def page_with_state(page: bytes, state_json: str) -> bytes:
    """index.html with the current state in its data block (the page unchanged without one)."""
    filled = STATE_SLOT.replace(b">null<", f">{json_for_html(state_json)}<".encode(), 1)
    return page.replace(STATE_SLOT, filled, 1)


def unauthorized_page(*, wrong_token: bool) -> str:
    """The 401 page for a browser. Fixed text: nothing of the request (path, query, the
    token tried) is ever put in it."""
    said = "<p><strong>The token in the address was not accepted.</strong></p>\n"
    wrong = said if wrong_token else ""
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Lookout: token needed</title>
</head>
<body>
<h1>This Lookout page needs its access token</h1>
{wrong}<p>The token is the one the device was given (<code>--http-token-file</code>,
<code>LOOKOUT_HTTP_TOKEN</code> or <code>--http-token</code>).</p>
<form method="get">
<label>Token <input type="password" name="token" autocomplete="current-password" required></label>
<button type="submit">Open</button>
</form>
<p>Or open this address once with <code>?token=&lt;token&gt;</code> at its end: the browser
then keeps a session cookie, and the token leaves the address bar.</p>
<p>Scripts send the header <code>Authorization: Bearer &lt;token&gt;</code> with each request.</p>
</body>
</html>
"""


def static_files() -> dict[str, tuple[bytes, str]]:
    files: dict[str, tuple[bytes, str]] = {}
    for entry in (resources.files("device.outputs.page") / "static").iterdir():
        suffix = "." + entry.name.rsplit(".", 1)[-1] if "." in entry.name else ""
        if entry.is_file() and suffix in STATIC_TYPES:
            files[entry.name] = (entry.read_bytes(), STATIC_TYPES[suffix])
    return files


__all__ = [
    "PAGE_CSP",
    "STATE_SLOT",
    "STATIC_TYPES",
    "json_for_html",
    "page_with_state",
    "static_files",
]
