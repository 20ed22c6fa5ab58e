"""Core rules of hotbin: binning, reductions, ranges, array helpers; no executor, no backend."""
