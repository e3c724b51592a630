"""ioc: the optimization layer (B-spline motions, costs, direct and inverse problems) and
the ``cmtm`` command line."""
