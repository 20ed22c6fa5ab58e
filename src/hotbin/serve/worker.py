"""One render at a time, off the event loop, with a bounded queue; jobs nobody waits for are dropped.

Aggregating all the points already uses every core (the cpu backend's threads, or the GPU),
so renders run one after another on a single thread: the event loop stays free to answer
the page, its assets and the requests served from the cache. At most ``max_pending`` jobs
wait; past that a request is refused at once (:class:`Busy`, HTTP 503) instead of piling up.
A job whose client went away before it started (the page aborts a stale view's request when
the view changes: the latest view wins) is skipped without computing anything.
"""
from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

__all__ = ["Worker", "Busy", "Gone"]


class Busy(Exception):
    """Too many requests are waiting already."""


class Gone(Exception):
    """The client left before its answer was ready."""


class Worker:
    """Runs functions one at a time on a thread of its own.

    Parameters
    ----------
    max_pending : int
        Jobs that may wait or run at once; more are refused with :class:`Busy`.
    """

    def __init__(self, max_pending: int = 64):
        self.max_pending = max_pending
        self.pending = 0
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="hotbin-render")

    async def run(self, fn, receive=None):
        """``fn()`` on the render thread. With ``receive`` (the ASGI channel of the request),
        a client that disconnects first gets :class:`Gone` and its job is skipped if not begun."""
        if self.pending >= self.max_pending:
            raise Busy(f"{self.pending} requests are waiting; try again shortly")
        left = threading.Event()

        def job():
            return None if left.is_set() else fn()

        self.pending += 1
        fut = asyncio.get_running_loop().run_in_executor(self._pool, job)
        fut.add_done_callback(self._finished)
        if receive is None:
            return await fut
        watch = asyncio.ensure_future(_disconnect(receive))
        try:
            done, _ = await asyncio.wait({fut, watch}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            left.set()
            raise
        finally:
            if not watch.done():
                watch.cancel()
        if fut in done:
            return fut.result()
        left.set()
        raise Gone()

    def _finished(self, fut):
        self.pending -= 1
        if not fut.cancelled():
            fut.exception()  # retrieved: a job whose client left may fail unseen

    def close(self):
        self._pool.shutdown(wait=False, cancel_futures=True)


async def _disconnect(receive):
    """Returns when the client disconnects (the request's body, if any, is read and ignored)."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return
