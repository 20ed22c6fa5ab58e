"""``hotbin heatmap --scheduler`` and ``hotbin serve --scheduler``: the same job on a Dask cluster.

The files are split into contiguous shares, one task each; every task reads its share
with the same DuckDB query as the local job (:class:`hotbin.io.Source`: the same
junk-row rules, the same ``--where``), so the cluster's answer is the local one.
The heatmap runs as passes of tasks: the extent (one aggregate query per share) or
the exact percentiles of ``--clip`` (the selection's ``fn`` and ``merge`` run on the
workers), the categories of ``--by`` (and the rows of each share for first and last),
then :func:`hotbin.heatmap` over the shares as one stream of batches
(:mod:`hotbin.exec.stream`): a task folds its share's batches into the operation's
partials, the client folds the shares' and finishes them once, so the merge rule is the
local job's. Junk rows are counted per share and named by file and line, as locally.
"""
from __future__ import annotations

import logging
import sys
from dataclasses import dataclass, replace

import numpy as np

from ..io import Data, Junk, Source, data_files, need

__all__ = ["on_cluster", "lazy_columns"]


@dataclass(frozen=True)
class _Job:
    """What every task reads: its share of the files below ``base`` and the query's columns."""

    base: str | None
    numbers: tuple
    category: str | None
    where: str | None
    strict: bool
    chunk_rows: int
    project: bool

    def data(self, share):
        src = Source(None, self.numbers, self.category, self.where, self.strict, files=share, base=self.base)
        return src, Data(src, self.chunk_rows)

    def chunks(self, data):
        """The chunks of ``data``, projected with ``--project`` (:mod:`hotbin.cli.stream`)."""
        from .stream import _Chunks

        return _Chunks(data, self.project)


def _connect(scheduler, distributed):
    for name in ("distributed", "distributed.worker", "distributed.scheduler", "distributed.nanny"):
        logging.getLogger(name).setLevel(logging.CRITICAL)  # errors come back as one line
    if scheduler == "local":
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None,
                                           silence_logs=logging.CRITICAL)
        return cluster, distributed.Client(cluster)
    return None, distributed.Client(scheduler, timeout="20s")


def _shares(files, client):
    """The files in contiguous shares, about two per worker thread."""
    threads = sum(client.nthreads().values()) or 1
    k = max(1, min(len(files), 2 * threads))
    return [list(s) for s in np.array_split(np.array(files, dtype=object), k) if len(s)]


def on_cluster(args, files, base, numbers, where):
    """``(Heatmap, points, Junk, notes)``: the heatmap of ``files`` computed on ``args.scheduler``."""
    distributed = need("distributed", "--scheduler", extra="dask")
    need("dask", "--scheduler", extra="dask")
    job = _Job(base, tuple(numbers), args.by, where, args.strict, args.chunk_rows, bool(args.project))
    cluster, client = _connect(args.scheduler, distributed)
    try:
        return _heatmap(args, job, client, _shares(files, client))
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def _heatmap(args, job, client, shares):
    from ..exec.stream import Batches
    from ..heatmap import heatmap
    from ..render.project import CRS, mercator
    from ..core.ranges import data_range, percentile_ranges
    from .stream import _Labels

    ranges = [args.x_range, args.y_range]
    if args.project:
        ranges = [None if r is None else tuple(float(v) for v in mercator(*((np.asarray(r), 0.0) if k == 0
                  else (0.0, np.asarray(r))))[k]) for k, r in enumerate(ranges)]
    closed = tuple(r is None for r in ranges)
    auto = [k for k, r in enumerate(ranges) if r is None]
    said = []
    extent = [] if args.clip else auto  # --clip: the percentile passes instead
    ordered = args.agg[0] in ("first", "last")  # the shares' rows number the points: count them
    scans = client.gather(client.map(_scan, shares, job=job, auto=extent, rows=ordered, pure=False)) \
        if extent or args.by or ordered else []
    if auto and args.clip:
        def run_pass(fn, merge):
            return merge(client.gather(client.map(_select, shares, job=job, auto=auto, fn=fn, merge=merge,
                                                  pure=False)))

        found = percentile_ranges(run_pass, len(auto), args.clip)
    elif auto:
        found = []
        for k in range(len(auto)):
            ends = [s["extent"][k] for s in scans if s["extent"][k] is not None]
            found.append((min(e[0] for e in ends), max(e[1] for e in ends)) if ends else None)
        unit = " degrees (points on the Web Mercator map only)" if args.project else ""
        for k, e in zip(auto, found):
            if e is not None:
                said.append(f"{'xy'[k]} range from the data: {e[0]:.10g}, {e[1]:.10g}{unit}")
        if args.project:
            found = [None if e is None else tuple(float(v) for v in mercator(*((np.asarray(e), 0.0) if k == 0
                     else (0.0, np.asarray(e))))[k]) for k, e in zip(auto, found)]
    for k, ext in zip(auto, found if auto else []):
        ranges[k] = (0.0, 1.0) if ext is None else data_range(*ext, "xy"[k])
    labels = None
    if args.by:
        kind = next((s["kind"] for s in scans if s["kind"] is not None), None)
        labels = _Labels({v for s in scans for v in s["labels"]}, kind)
    firsts = np.cumsum([0] + [s["rows"] for s in scans])[:-1].tolist() if ordered else [0] * len(shares)
    source = _Shares(client, shares, job, firsts)
    batches = Batches(source)
    cols = [batches.column(k) for k in range(len(job.numbers))]
    by = None if labels is None else batches.column(len(cols), np.int64, labels.indices, labels.labels)
    hm = heatmap(cols[0], cols[1], cols[2] if len(cols) > 2 else None, agg=args.agg[0], by=by, width=args.width,
                 height=args.height, x_range=ranges[0], y_range=ranges[1], closed=closed, backend=args.backend,
                 q=args.q)
    hm = replace(hm, x_name=args.x, y_name=args.y, crs=CRS if args.project else hm.crs)
    parts = source.parts
    notes = list(dict.fromkeys(n for p in parts for n in p["notes"])) + said
    return hm, batches.rows, _junk(parts, args.strict), notes


class _Shares:
    """The shares as one source of the stream executor (:mod:`hotbin.exec.stream`): a worker folds
    a share's batches (its rows numbered from ``firsts[i]``, the rows of the shares before it),
    the executor folds the shares' partials and finishes them once; ``parts``: each share's
    notes and junk rows in the last pass."""

    def __init__(self, client, shares, job, firsts):
        self.client, self.shares, self.job, self.firsts, self.parts = client, shares, job, firsts, []

    def fold(self, op, columns, backend, offload):
        """``[(partials or None, rows)]`` of ``op`` over each share's batches."""
        reads = [(c.read, c.dtype) for c in columns]
        self.parts = self.client.gather(self.client.map(_fold, self.shares, self.firsts, job=self.job, op=op,
                                                        reads=reads, backend=backend, offload=offload,
                                                        pure=False))
        return [(p["partials"], p["rows"]) for p in self.parts]


def _junk(parts, strict):
    """The shares' junk rows as one :class:`hotbin.io.Junk` (shares in file order)."""
    junk = Junk(strict)
    for s in parts:
        rows, first, kinds = s["junk"]
        junk.rows += rows
        junk.first += first[:junk.SHOW - len(junk.first)]
        junk.kinds |= kinds
    return junk


def _scan(share, job, auto, rows=False):
    """A task: the extent of the axes ``auto``, the categories and (with ``rows``) the rows of a share."""
    src, data = job.data(share)
    with src:
        extent = data.extent(auto, lonlat=job.project) if auto or rows else []
        labels, kind = [], None
        if job.category:
            from ..io.read import quote

            col = src.table(f"SELECT DISTINCT {quote(job.category)} FROM src").column(0)
            labels, kind = [v for v in col.to_pylist() if v is not None], col.type
        j = src.junk
        return {"extent": extent, "labels": labels, "kind": kind, "notes": src.notes, "rows": data.total,
                "junk": (j.rows, j.first, j.kinds)}


def _select(share, job, auto, fn, merge):
    """A task: one pass of the percentile selection over a share, merged."""
    src, data = job.data(share)
    with src:
        acc = merge([])
        for cols, _ in job.chunks(data):
            acc = merge([acc, fn(*(cols[k] for k in auto))])
        return acc


def _fold(share, first, job, op, reads, backend, offload):
    """A task: the partials of ``op`` over a share's batches (the stream executor's fold, its rows
    numbered from ``first``), its rows, notes and junk rows."""
    from ..core.arrays import to_host
    from ..exec.stream import Batches, Column, Stream

    src, data = job.data(share)
    with src:
        batches = Batches(job.chunks(data), first=first)
        acc = Stream(batches, backend, offload).fold(op, *(Column(batches, r, dt) for r, dt in reads))
        j = src.junk
        return {"partials": None if acc is None else tuple(np.asarray(to_host(p)) for p in acc),
                "rows": batches.rows, "notes": src.notes, "junk": (j.rows, j.first, j.kinds)}


def _load(share, job, labels):
    """A task: the columns of a share in memory (by their place in ``job.numbers``; ``by``
    codes)."""
    src, data = job.data(share)
    with src:
        parts = [cols for cols, _ in data]
    out = {i: np.concatenate([p[i] for p in parts]) if parts else np.zeros(0)
           for i in range(len(job.numbers))}
    if labels is not None:
        codes = [labels.indices(p[-1]) for p in parts]
        out["by"] = np.concatenate(codes).astype(np.int32) if codes else np.zeros(0, np.int32)
    return out, (src.junk.rows, src.junk.first, src.junk.kinds)


def lazy_columns(args):
    """``(columns, labels, description)`` for ``hotbin serve --scheduler``: the needed columns
    of INPUT as dask arrays held on the cluster (its client stays open while the server runs),
    read by the same DuckDB query as locally (rows that cannot be read skipped and counted),
    ``--by`` coded over the labels of every share."""
    distributed = need("distributed", "--scheduler", extra="dask")
    da = need("dask", "--scheduler", module="dask.array", extra="dask")
    from .stream import _Labels

    files, base = data_files(args.input)
    numbers = [c for c in (args.x, args.y, args.value) if c]
    wanted = list(dict.fromkeys(h for h, *_ in args.hist))
    hist = [c for c in wanted if c not in numbers]
    job = _Job(base, tuple(numbers + hist), args.by, None, args.strict, 1 << 20, False)
    _, client = _connect(args.scheduler, distributed)
    shares = _shares(files, client)
    labels = None
    if args.by:
        scans = client.gather(client.map(_scan, shares, job=job, auto=[], pure=False))
        kind = next((s["kind"] for s in scans if s["kind"] is not None), None)
        labels = _Labels({v for s in scans for v in s["labels"]}, kind)
    loaded = client.map(_load, shares, job=job, labels=labels, pure=False)
    info = client.gather(client.map(_lengths, loaded, pure=False))
    junk = Junk(args.strict)
    for _, (rows, first, kinds) in info:
        junk.rows += rows
        junk.first += first[:junk.SHOW - len(junk.first)]
        junk.kinds |= kinds
    if junk.message():
        print(f"hotbin serve: {junk.message()}", file=sys.stderr)
    def column(key, dtype=np.float64):
        pieces = [da.from_delayed(client.submit(_column, f, key, pure=False), shape=(n,), dtype=dtype)
                  for f, (n, _) in zip(loaded, info)]
        return da.concatenate(pieces) if pieces else da.zeros(0, dtype=dtype)

    cols = {k: column(i) for i, k in enumerate(["x", "y", "weight"][:len(numbers)])}
    if args.by:
        cols["by"] = column("by", np.int32)
    if wanted:
        cols["hist"] = {h: column((numbers + hist).index(h)) for h in wanted}
    names = None if labels is None or labels.integer else labels.labels
    return cols, names, f"{len(files)} file(s) on the Dask cluster"


def _lengths(loaded):
    out, junk = loaded
    return len(out[0]), junk


def _column(loaded, key):
    return loaded[0][key]

