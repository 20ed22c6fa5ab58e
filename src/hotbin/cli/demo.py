"""``hotbin heatmap --demo``: a generated data set that needs only numpy and numba."""
from __future__ import annotations

import numpy as np

__all__ = ["demo", "demo_points", "DEMO_POINTS"]

#: points in the --demo data set
DEMO_POINTS = 4_000_000


def demo(args):
    """A seeded, skewed point set: dense city centres over sparse countryside and roads."""
    from ..heatmap import heatmap

    x, y = demo_points(DEMO_POINTS, args.seed)
    hm = heatmap(x, y, width=args.width, height=args.height, project=args.project,
                 x_range=args.x_range or (None if args.clip else (0.0, 100.0)),
                 y_range=args.y_range or (None if args.clip else (0.0, 100.0)), clip=args.clip,
                 backend=args.backend)
    return hm, x.size


def demo_points(n=DEMO_POINTS, seed=2026):
    """``n`` float32 points in ``[0, 100)^2`` that pile up like people on a map.

    A coastline (the sea stays empty), cities of Pareto-distributed sizes with
    dense cores and heavy-tailed suburbs, villages, roads joining each city to
    its nearest neighbours, and a thin countryside that thickens near cities.
    """
    rng = np.random.default_rng(seed)

    def coast(x):  # land is below this wavy line (y < coast(x))
        return 78 - 0.22 * x + 6 * np.sin(x / 9.0) + 2.5 * np.sin(x / 3.1 + 1)

    ncity = 14
    cx = rng.uniform(8, 92, 4 * ncity)
    cy = rng.uniform(6, 90, 4 * ncity)
    keep = cy < coast(cx) - 4
    centres = np.stack([cx[keep], cy[keep]], axis=1)[:ncity]
    ncity = len(centres)
    size = np.sort(rng.pareto(1.1, ncity) + 1)[::-1]
    share = size / size.sum()
    n_rural, n_village, n_road = n // 16, n // 20, n // 10
    n_city = n - n_rural - n_village - n_road
    xs, ys = [], []
    for (x0, y0), k, s in zip(centres, rng.multinomial(n_city, share), size):
        r = 0.3 * s ** 0.45  # core radius grows with the city
        core = k * 2 // 5
        xs.append(x0 + rng.normal(0, r, core))
        ys.append(y0 + rng.normal(0, r * 0.8, core))
        sub = k - core  # suburbs: heavy-tailed, a little elongated
        ang = rng.uniform(0, 2 * np.pi, sub)
        dist = r * 1.2 * rng.standard_exponential(sub) ** 1.6
        xs.append(x0 + dist * np.cos(ang) * 1.25)
        ys.append(y0 + dist * np.sin(ang))
    # villages: many small clumps, more of them near cities
    nv = 400
    home = centres[rng.choice(ncity, nv, p=share ** 0.3 / (share ** 0.3).sum())]
    vpos = home + rng.normal(0, 14, (nv, 2))
    vsize = rng.pareto(1.5, nv) + 1
    vspread = rng.uniform(0.05, 0.12, nv) * np.sqrt(vsize)
    for (x0, y0), k, r in zip(vpos, rng.multinomial(n_village, vsize / vsize.sum()), vspread):
        xs.append(x0 + rng.normal(0, r, k))
        ys.append(y0 + rng.normal(0, r, k))
    # roads: each city to its two nearest neighbours, gently curved
    d = np.hypot(*(centres[:, None, :] - centres[None, :, :]).transpose(2, 0, 1))
    np.fill_diagonal(d, np.inf)
    roads = {tuple(sorted((i, int(j)))) for i in range(ncity) for j in np.argsort(d[i])[:2]}
    roads = sorted(roads)
    lengths = np.array([d[i, j] for i, j in roads])
    for (i, j), k in zip(roads, rng.multinomial(n_road, lengths / lengths.sum())):
        t = rng.uniform(0, 1, k)
        (ax, ay), (bx, by) = centres[i], centres[j]
        nx, ny = (ay - by) / d[i, j], (bx - ax) / d[i, j]
        bend = np.sin(np.pi * t) * rng.normal(0, 0.08) * d[i, j]
        xs.append(ax + t * (bx - ax) + bend * nx + rng.normal(0, 0.06, k))
        ys.append(ay + t * (by - ay) + bend * ny + rng.normal(0, 0.06, k))
    # countryside: half uniform, half around the cities
    xs.append(rng.uniform(0, 100, n_rural // 2))
    ys.append(rng.uniform(0, 100, n_rural // 2))
    near = centres[rng.choice(ncity, n_rural - n_rural // 2)]
    spread = rng.normal(0, 1, near.shape) * 10
    xs.append(near[:, 0] + spread[:, 0])
    ys.append(near[:, 1] + spread[:, 1])
    x = np.concatenate(xs)
    y = np.concatenate(ys)
    land = y < coast(x)
    x, y = x[land].astype(np.float32), y[land].astype(np.float32)
    order = rng.permutation(x.size)
    return x[order], y[order]
