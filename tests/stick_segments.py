"""Stick-figure segments for the figure tests: the segments every stick figure must draw,
computed from cmtm.link_poses alone, those a drawn polyline holds, and their matching."""
import numpy as np

import cmtm

EXACT = 1e-12
"""The drawn points are link_poses' numbers moved by one 3x3 product at most: round-off."""


def expected_segments(model, q):
    """Every segment of the stick figure at q (nv,) from cmtm.link_poses alone: link
    origin -> its parent's origin (the base origin for a root), and each leaf link's origin
    -> its tip (the farthest merged frame's origin, else twice the centre of mass)."""
    T = cmtm.link_poses(model, q)
    origin = T[:, :3, 3]
    segments = [(np.zeros(3) if parent < 0 else origin[parent], origin[i])
                for i, parent in enumerate(model.parent)]
    for leaf in sorted(set(range(model.nv)) - set(model.parent.tolist())):
        merged = [np.asarray(p) for _, link, _, p in model.frames if link == leaf]
        offset = max(merged, key=np.linalg.norm) if merged else 2.0 * model.com[leaf]
        if np.any(offset):
            segments.append((origin[leaf], T[leaf, :3, :3] @ offset + origin[leaf]))
    return np.array(segments)                                # (segments, 2, dim)


def drawn_segments(polyline):
    """The segments of a polyline (P, dim) with NaN gaps: consecutive finite points."""
    finite = np.all(np.isfinite(polyline), axis=1)
    return np.array([(polyline[k], polyline[k + 1]) for k in range(len(polyline) - 1)
                     if finite[k] and finite[k + 1]])


def assert_same_segments(drawn, expected, tolerance=EXACT):
    """Each expected segment matches one drawn segment within ``tolerance``, and no drawn
    segment is left over."""
    assert len(drawn) == len(expected), (len(drawn), len(expected))
    left = list(drawn)
    for segment in expected:
        errors = [np.max(np.abs(candidate - segment)) for candidate in left]
        best = int(np.argmin(errors))
        assert errors[best] <= tolerance, f"segment {segment.tolist()} not drawn"
        left.pop(best)
