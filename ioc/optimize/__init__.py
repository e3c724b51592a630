"""The direct problem: sub-costs with exact gradients from the engine's structured
Jacobians (``costs``), the motion problem on a clamped B-spline (``problem``: samples,
boundary conditions, limits, the cost and its Gauss-Newton blocks) and its solver
(``direct``: damped Gauss-Newton and a Newton polish).

May import: other libraries, cmtm, kinematic_trees, the top of ioc (ioc.choices, ioc._blas)
and ioc.spline; nothing of a later group.
"""
