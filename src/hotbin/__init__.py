"""hotbin: histograms, scans and spatial heatmaps that stay fast on skewed data."""
from __future__ import annotations

from .api import backends, bincount, cumsum, histogram, histogram2d, histogram_bin_edges, histogramdd
from .images import channel_histograms, equalize, luminance, luminance_histogram, percentiles
from .hist import Histogram, hist, hist2d
from .heatmap import Heatmap, heatmap
from .widget import explore  # light: anywidget and the server load when it is called

__version__ = "0.1.0"

__all__ = ["__version__", "backends", "bincount", "cumsum", "histogram", "histogram2d", "histogramdd",
           "histogram_bin_edges",
           "luminance", "luminance_histogram", "equalize", "channel_histograms", "percentiles",
           "Histogram", "hist", "hist2d", "Heatmap", "heatmap", "explore"]

from .xr import hook as _xr_hook  # DataArray.hotbin as soon as xarray is imported (hotbin.xr.hook)

_xr_hook.install()
