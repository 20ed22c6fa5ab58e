"""xarray integration that loads without xarray: :mod:`hotbin.xr.hook` registers the accessor."""
