"""Running the app: uvicorn on a socket bound here, in the foreground or on a background thread.

The socket is bound before uvicorn starts, so ``port=0`` picks a free port and the address is
known (and printed) at once. On a loopback address the app answers only requests for this
machine's names (against DNS rebinding), and connections that do not send a request in time
are closed (:mod:`hotbin.serve.guard`).
"""
from __future__ import annotations

import ipaddress
import socket
import threading
import time
import webbrowser
from contextlib import contextmanager

import uvicorn

from .guard import HEAD_TIMEOUT, MOST_WAITING, HostGuard, guarded_protocol, loopback_host

__all__ = ["run", "background", "start_background", "bind", "is_loopback", "url_of"]


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (``port=0``: a free one)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto named: asyncio sets TCP_NODELAY only on sockets whose proto says TCP; without it
    # a response's body waits for the ACK of its headers (Nagle + delayed ACK: 40 ms)
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError:
        sock.close()
        raise
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    host = f"[{host}]" if ":" in host else host
    if host in ("0.0.0.0", "[::]"):
        host = "127.0.0.1" if host == "0.0.0.0" else "[::1]"
    return f"http://{host}:{port}/"


def _server(app, sock, log_level, head_timeout, most_waiting):
    """uvicorn serving ``app`` on ``sock``: the Host checked when ``sock`` is on a loopback
    address, request heads due within ``head_timeout`` seconds, at most ``most_waiting``
    connections waiting for one (:mod:`hotbin.serve.guard`). No limit on connections beyond
    that: renders are bounded by the app's worker, and a count of connections would let idle
    ones lock everybody out."""
    if is_loopback(sock.getsockname()[0]):
        app = HostGuard(app, loopback_host)
    config = uvicorn.Config(app, log_level=log_level, access_log=False, lifespan="off",
                            http=guarded_protocol(head_timeout, most_waiting), timeout_keep_alive=5)
    return uvicorn.Server(config)


def run(app, host="127.0.0.1", port=8000, open_browser=True, on_ready=None, log_level="warning",
        sock=None, head_timeout=HEAD_TIMEOUT, most_waiting=MOST_WAITING):
    """Serve ``app`` until interrupted (Ctrl-C) on ``sock``, else on a socket bound to
    ``host:port``. ``on_ready(url)`` is called once listening. A connection that has not sent a
    complete request head ``head_timeout`` seconds after it opened (or after its previous
    response) is closed, as is the one waiting longest when more than ``most_waiting`` wait."""
    sock = bind(host, port) if sock is None else sock
    url = url_of(sock)
    if on_ready is not None:
        on_ready(url)
    if open_browser:
        threading.Timer(0.5, webbrowser.open, (url,)).start()
    _server(app, sock, log_level, head_timeout, most_waiting).run(sockets=[sock])


def start(app, host="127.0.0.1", log_level="warning", head_timeout=HEAD_TIMEOUT,
          most_waiting=MOST_WAITING):
    """A real uvicorn serving ``app`` on a free port of ``host`` on a thread, once it listens:
    ``(url, stop)``. ``stop()`` (idempotent) ends the server, its thread and the app's render
    thread, and closes the socket. ``head_timeout`` and ``most_waiting`` as :func:`run`."""
    sock = bind(host, 0)
    server = _server(app, sock, log_level, head_timeout, most_waiting)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True,
                              name=f"hotbin-serve-{sock.getsockname()[1]}")
    lock = threading.Lock()

    def stop():
        with lock:
            server.should_exit = True
            if thread.is_alive() and thread is not threading.current_thread():
                thread.join(10)
            sock.close()
            worker = getattr(getattr(app, "state", None), "worker", None)
            if worker is not None:  # the render thread: idle once the server has stopped
                worker.close()
                worker._pool.shutdown(wait=True)

    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            stop()
            raise RuntimeError("the server did not start")
        time.sleep(0.01)
    return url_of(sock), stop


def start_background(dataset, shading=None, *, host="127.0.0.1", log_level="warning", **options):
    """Serve ``dataset`` (a :class:`hotbin.serve.Dataset`) on a free port of ``host`` (default
    this machine only) on a thread: ``(url, stop)``, as :func:`start`. ``shading`` and
    ``options`` go to :func:`hotbin.serve.app.create_app`. What ``hotbin.explore`` runs in a
    notebook's kernel."""
    from .app import create_app
    from .params import Shading

    app = create_app(dataset, Shading() if shading is None else shading, **options)
    return start(app, host=host, log_level=log_level)


@contextmanager
def background(app, host="127.0.0.1", log_level="warning", head_timeout=HEAD_TIMEOUT,
               most_waiting=MOST_WAITING):
    """A real uvicorn serving ``app`` on a free port of ``host`` on a thread; yields its URL.
    ``head_timeout`` and ``most_waiting`` as :func:`run`."""
    url, stop = start(app, host, log_level, head_timeout, most_waiting)
    try:
        yield url
    finally:
        stop()


def start_background(data, shading=None, host="127.0.0.1", frame_ancestors="*", **kwargs):
    """Serve :class:`~hotbin.serve.dataset.Dataset` ``data`` on a free port of ``host`` on a
    thread; returns ``(url, stop)``, ``stop()`` ending the server (for a notebook's widget,
    which cannot hold a ``with`` block open, and shows the page in a frame: ``frame_ancestors``
    as :func:`hotbin.serve.app.create_app`). ``kwargs`` go to :func:`background`."""
    from .app import create_app
    from .params import Shading

    app = create_app(data, shading or Shading(), frame_ancestors=frame_ancestors)
    ctx = background(app, host, **kwargs)
    url = ctx.__enter__()
    done = []

    def stop():
        if not done:
            done.append(True)
            ctx.__exit__(None, None, None)

    return url, stop
