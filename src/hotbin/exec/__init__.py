"""How an operation runs: operations as data (ops), the executor protocol, the local executor, Dask,
batches and grids."""
