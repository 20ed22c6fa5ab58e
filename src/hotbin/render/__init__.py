"""From counts to pictures: shading, colormaps, PNG encoding, plotting and map projections."""
