"""Pictures of motions: stick figures and the drawing rules they share (``drawing``),
matplotlib figures (``plots``) and the self-contained plotly motion page (``view``).

May import: other libraries, cmtm, kinematic_trees, the top of ioc (ioc.choices, ioc._blas),
ioc.spline, ioc.optimize, ioc.files and ioc.inverse; nothing of a later group.
"""
