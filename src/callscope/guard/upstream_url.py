"""The one rule for upstream URLs (:func:`upstream_url`): the agent's request target only ever
becomes the *path* of a URL whose scheme, host and port are the configured upstream's. A
target that is not an absolute path (``@127.0.0.1:9/x``, ``http://elsewhere/``), or that has a
``.`` or ``..`` segment, percent-encoded or not (``/v1/../../etc/passwd``), is refused
(:class:`BadTarget`), so no request can reach another host, port or path root; so is a target
over :data:`MAX_TARGET_CHARS` characters, one with a fragment (``#``), a space or a control
character, and a segment that is ``.`` or ``..`` before a path parameter (``/v1/..;/admin``,
which Tomcat and Spring read as the parent folder). The way back is the same rule: a redirect
whose ``Location`` names the upstream's own origin becomes a path on the proxy
(:func:`proxied_location`), so no redirect leads a client past the proxy. And how an upstream
URL may be printed or stored (:func:`redacted_url`)."""

from __future__ import annotations

import re
from urllib.parse import unquote_to_bytes, urlsplit

import httpx

#: a request target at most this long (nginx's default line buffer is 8 KiB); longer: 400
MAX_TARGET_CHARS = 8 * 1024
#: characters no request target may hold: a fragment, spaces, control characters
_BAD_TARGET_CHAR = re.compile(r"[#\x00-\x20\x7f]")
#: bytes no request path may hold once percent-decoded: control characters
_BAD_TARGET_BYTE = re.compile(rb"[\x00-\x1f\x7f]")


class BadTarget(ValueError):
    """A request target that would leave the configured upstream."""


def redacted_url(url: str) -> str:
    """``url`` as it may be printed or stored (issue 47 point 15): a password in it and the
    value of every query parameter replaced by ``***``
    (``http://user:PASS@host/v1?api_key=sk-1`` is ``http://user:***@host/v1?api_key=***``).

    >>> redacted_url("http://u:p@127.0.0.1:8080/v1?api_key=sk-1&x")
    'http://u:***@127.0.0.1:8080/v1?api_key=***&x=***'
    """
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError):
        return "<an upstream URL that does not parse>"
    user = parsed.username
    userinfo = f"{user}:***@" if parsed.password else (f"{user}@" if user else "")
    port = f":{parsed.port}" if parsed.port else ""
    query = "&".join(f"{k}=***" for k in parsed.params)
    return f"{parsed.scheme}://{userinfo}{parsed.host}{port}{parsed.path}" + (
        f"?{query}" if query else ""
    )


def upstream_url(base: httpx.URL, target: str) -> httpx.URL:
    """The upstream URL of the agent's request ``target`` (its path and query): ``base``'s
    scheme, host and port, ``base``'s path joined with the target's path (an agent's ``/v1/...``
    under a base that already ends in ``/v1`` loses its own ``/v1``), the target's query.
    Raises :class:`BadTarget` for a target that is not an absolute path or has a ``.`` or
    ``..`` segment (see the module docstring): under ``http://127.0.0.1:8080/v1``,
    ``/v1/chat/completions?a=1`` is ``http://127.0.0.1:8080/v1/chat/completions?a=1`` and
    ``@127.0.0.1:9/x`` is refused."""
    if len(target) > MAX_TARGET_CHARS:
        raise BadTarget(f"the request target is over {MAX_TARGET_CHARS} characters")
    if _BAD_TARGET_CHAR.search(target) is not None:
        raise BadTarget("the request target must not have a '#', spaces or control characters")
    path, _, query = target.partition("?")
    if not path.startswith("/") or path.startswith("//"):
        raise BadTarget("the request target must be a path starting with '/'")
    for segment in path.split("/"):
        if unquote_to_bytes(segment).split(b";", 1)[0] in (b".", b".."):
            raise BadTarget("the request path must not have '.' or '..' segments")
    if "\\" in path or "%5c" in path.lower() or "%2f" in path.lower():
        raise BadTarget("the request path must not have encoded or back slashes")
    if "%25" in path or _BAD_TARGET_BYTE.search(unquote_to_bytes(path)) is not None:
        # ``..%252f`` is ``..%2f`` to a server that decodes twice; ``%00`` ends a C string
        raise BadTarget("the request path must not have encoded '%' or control characters")
    root_bytes, _, base_query = base.raw_path.partition(b"?")
    root = root_bytes.decode("ascii").rstrip("/")
    if root.endswith("/v1") and (path == "/v1" or path.startswith("/v1/")):
        path = path[3:]
    # the configured upstream's own query (an ``api_key=`` some servers take) goes with
    # every request, before the agent's
    query = "&".join(q for q in (base_query.decode("ascii"), query) if q)
    try:
        raw = (root + path).encode("ascii") + (b"?" + query.encode("ascii") if query else b"")
        return base.copy_with(raw_path=raw)
    except (UnicodeEncodeError, httpx.InvalidURL) as exc:
        raise BadTarget(f"the request target is not a valid URL path: {exc}") from None


#: the port a URL names when it names none
_DEFAULT_PORTS = {"http": 80, "https": 443}


def proxied_location(base: httpx.URL, location: str) -> str | None:
    """An upstream redirect's ``Location`` as the proxy relays it: one on the upstream's own
    origin (``base``'s scheme, host and port; absolute, ``//host/...`` or a path) under
    ``base``'s path becomes the proxy path :func:`upstream_url` maps there, relative to the
    proxy (the client resolves it against the proxy's own URL), with its query; one on the
    upstream's origin outside ``base``'s path, which no proxy path reaches, is ``None``
    (refused); any other is relayed as it is. Before, a redirect to
    ``http://upstream/v1/chat/completions`` led a client that follows redirects to upstream
    itself, past every check.

    >>> base = httpx.URL("http://127.0.0.1:8080/v1")
    >>> proxied_location(base, "http://127.0.0.1:8080/v1/chat/completions?a=1")
    '/v1/chat/completions?a=1'
    >>> proxied_location(base, "http://127.0.0.1:8080/admin") is None
    True
    >>> proxied_location(base, "https://login.example/")
    'https://login.example/'
    """
    try:
        parts = urlsplit(location.strip())
        port = parts.port
    except ValueError:
        return location  # no URL a client would follow
    scheme = (parts.scheme or base.scheme).lower()
    if parts.netloc:
        host = (parts.hostname or "").lower()
        own = (
            scheme == base.scheme
            and host == base.host.lower()
            and (port or _DEFAULT_PORTS.get(scheme)) == (base.port or _DEFAULT_PORTS.get(scheme))
        )
    else:  # a path: on the proxy's origin already, only its path may need mapping
        own = not parts.scheme and parts.path.startswith("/")
    if not own:
        return location
    root = base.raw_path.partition(b"?")[0].decode("ascii").rstrip("/")
    path = parts.path or "/"
    if root and path != root and not path.startswith(root + "/"):
        return location if not parts.netloc else None
    rest = path[len(root) :]
    mapped = ("/v1" if root.endswith("/v1") else "") + rest or "/"
    return mapped + (f"?{parts.query}" if parts.query else "")
