"""What the server turns away before the app sees it: foreign Host names, stalled connections.

**Host names** (DNS rebinding). A page on ``evil.com`` can have the browser resolve
``evil.com`` to 127.0.0.1 and then read a server on this machine with the browser's own
requests, which carry ``Host: evil.com``. So a server listening on a loopback address answers
only requests whose Host is a loopback address (any of 127.0.0.0/8 or ::1, written as an
address, as in the URL the server prints) or ``localhost``: no attacker's name can be one of
those. Other requests get HTTP 400 (:class:`HostGuard`, :func:`loopback_host`).

**Stalled connections** (slowloris). h11 waits for a request head forever, so connections
that open and never finish their request would be held open for as long as their clients
like. Here (:func:`guarded_protocol`) a connection must finish its request head within
``head_timeout`` seconds of opening, or of its previous response (a byte at a time does not
extend it), or it is closed; and at most ``most_waiting`` connections may be waiting for a
request at once: past that, the one waiting longest is closed, so a flood of half-open
connections cannot use up the server's file descriptors and lock new clients out.
"""
from __future__ import annotations

import ipaddress
import re

__all__ = ["HostGuard", "host_of", "loopback_host", "guarded_protocol", "HEAD_TIMEOUT",
           "MOST_WAITING"]

#: seconds a connection has to send a complete request head (a browser sends it at once)
HEAD_TIMEOUT = 10.0
#: connections that may wait for a request head at once (a browser keeps about six per server)
MOST_WAITING = 256

_PORT = re.compile(r"(:[0-9]{0,5})?")


def host_of(value: str) -> str | None:
    """The host of a Host header (lower case, without its port or an IPv6 address's
    brackets), or None when the header is not a host with an optional port."""
    value = value.strip().lower()
    if value.startswith("["):
        host, sep, port = value[1:].partition("]")
        if not sep:
            return None
    else:
        host, sep, port = value.partition(":")
        port = sep + port
    return host if host and _PORT.fullmatch(port) else None


def loopback_host(value: str) -> bool:
    """Whether a Host header names this machine: ``localhost`` or a loopback address."""
    host = host_of(value)
    if host == "localhost":
        return True
    try:
        return host is not None and ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class HostGuard:
    """ASGI middleware: requests whose Host header ``allowed(value)`` refuses get HTTP 400."""

    def __init__(self, app, allowed):
        self.app, self.allowed = app, allowed

    async def __call__(self, scope, receive, send):
        if scope["type"] in ("http", "websocket"):
            value = dict(scope["headers"]).get(b"host", b"").decode("latin-1")
            if not self.allowed(value):
                from starlette.responses import JSONResponse

                response = JSONResponse({"error": f"Host {value!r} is not this server's name"},
                                        status_code=400)
                return await response(scope, receive, send)
        await self.app(scope, receive, send)


def guarded_protocol(head_timeout: float = HEAD_TIMEOUT, most_waiting: int = MOST_WAITING):
    """A uvicorn HTTP protocol (h11) whose connections must send their request heads in time.

    Each call gives a class of its own: the connections waiting for a request are counted
    per server.
    """
    if not (isinstance(head_timeout, (int, float)) and head_timeout > 0):
        raise ValueError(f"head_timeout: expected a positive number of seconds, got {head_timeout!r}")
    if not (isinstance(most_waiting, int) and most_waiting >= 1):
        raise ValueError(f"most_waiting: expected a positive number of connections, got {most_waiting!r}")
    from uvicorn.protocols.http.h11_impl import H11Protocol

    waiting: dict = {}  # connection -> timer closing it; the one waiting longest first

    class Guarded(H11Protocol):
        def connection_made(self, transport):
            super().connection_made(transport)
            self._watch()

        def data_received(self, data):
            super().data_received(data)
            self._watch()

        def on_response_complete(self):
            super().on_response_complete()
            self._watch()

        def connection_lost(self, exc):
            self._served()
            super().connection_lost(exc)

        def _watch(self):
            """Start the clock when the connection waits for its client, stop it when a
            request is being served; the clock never restarts while it runs."""
            if self.transport.is_closing() or not (self.cycle is None or self.cycle.response_complete):
                self._served()
            elif self not in waiting:
                waiting[self] = self.loop.call_later(head_timeout, self._drop)
                while len(waiting) > most_waiting:
                    next(iter(waiting))._drop()

        def _served(self):
            timer = waiting.pop(self, None)
            if timer is not None:
                timer.cancel()

        def _drop(self):
            self._served()
            if not self.transport.is_closing():
                self.transport.close()

    return Guarded
