"""How a plan runs: the plan and executor protocol, the local executor, Dask, batches and grids."""
