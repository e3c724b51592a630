"""Sub-costs of the direct and inverse problems (cmtm_math.md §10, DESIGN.md).

Every sub-cost is c = 1/2 sum_m omega_m |y(t_m)|^2 over quadrature nodes t_m with weights
omega_m, where y is a raw time derivative of one of three stacks:

==========================  =========================  ==========================================
name                        y (raw derivatives)        needs q up to
==========================  =========================  ==========================================
joint_velocity              q'                         q'
joint_acceleration          q''                        q''
joint_jerk                  q'''                       q'''
link_velocity               nu (body twist, all links) q'
link_acceleration           nu'                        q''
link_jerk                   nu''                       q'''
joint_torque                tau (gravity included)     q''
joint_torque_rate           tau'                       q'''
==========================  =========================  ==========================================

General form: ``STACK:r`` is the r-th time derivative of the stack named by its order-0 term,
``joint_velocity:3`` = q'''' (snap), ``link_velocity:3`` = nu''', ``joint_torque:2`` = tau''
(torque acceleration). Link terms may keep a subset of links: ``link_velocity[link2,link3]``.

A term is evaluated in *stack space*: its value y_m (N, d) and its Jacobian
``Jy[m] = d y_m / d q_stack[m]`` of shape (N, d, K, nv) with respect to the raw stack
q, q', ..., q^(K-1) at the same sample (structured Jacobians of the engine, cmtm_math §7);
the optimization layer chains it to spline control points (ioc.problem).
"""
import re
from dataclasses import dataclass

import numpy as np

import cmtm

STACKS = {"joint_velocity": ("joint", 1), "link_velocity": ("link", 0),
          "joint_torque": ("torque", 0)}
"""Order-0 term of each stack: (kind, derivative of the base quantity it is)."""

NAMED_TERMS = {"joint_velocity": ("joint", 1), "joint_acceleration": ("joint", 2),
               "joint_jerk": ("joint", 3), "link_velocity": ("link", 0),
               "link_acceleration": ("link", 1), "link_jerk": ("link", 2),
               "joint_torque": ("torque", 0), "joint_torque_rate": ("torque", 1)}
"""name -> (kind, r): y = q^(r) (joint), nu^(r) (link), tau^(r) (torque)."""

INPUT_DEPTH = {"joint": 0, "link": 1, "torque": 2}
"""y^(r) of a kind depends on q up to q^(r + depth) (cmtm_math §7.1)."""

_TERM_SYNTAX = re.compile(r"^(?P<base>[a-z_]+)(?::(?P<r>\d+))?(?:\[(?P<links>[^\]]*)\])?$")


@dataclass(frozen=True)
class CostTerm:
    """One sub-cost: y = (kind's quantity)^(derivative) at every quadrature node.

    kind : "joint" (q), "link" (body twists nu of ``links``) or "torque" (tau)
    derivative : r, the raw time-derivative order of that quantity
    links : indices of the links whose twists enter (link terms), all links by default
    """
    name: str
    kind: str
    derivative: int
    links: tuple = ()

    @property
    def top_order(self):
        """Highest raw derivative of q the term depends on."""
        return self.derivative + INPUT_DEPTH[self.kind]


def parse_term(spec, model):
    """A :class:`CostTerm` from a name of the table above, its general form ``STACK:r``,
    or a link term with a subset ``link_velocity[link1,link3]``; ValueError otherwise."""
    if not isinstance(spec, str):
        raise ValueError(f"cost: expected a cost name, got {spec!r}")
    match = _TERM_SYNTAX.match(spec.strip())
    known = ", ".join(list(NAMED_TERMS) + [f"{s}:r" for s in STACKS])
    if not match or match["base"] not in NAMED_TERMS:
        raise ValueError(f"cost: expected one of {known}, got {spec!r}")
    kind, r = NAMED_TERMS[match["base"]]
    if match["r"] is not None:
        if match["base"] not in STACKS:
            raise ValueError(f"cost: the ':r' form takes a stack name ({', '.join(STACKS)}), "
                             f"got {spec!r}")
        r += int(match["r"])
    links = tuple(range(model.nv))
    if match["links"] is not None:
        if kind != "link":
            raise ValueError(f"cost: a link subset applies to link terms only, got {spec!r}")
        links = _link_indices(model, match["links"], spec)
    return CostTerm(spec.strip(), kind, r, links if kind == "link" else ())


def _link_indices(model, text, spec):
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in model.link_names]
    if not names or unknown:
        raise ValueError(f"cost {spec!r}: expected link names of the model "
                         f"({', '.join(model.link_names)}), got {', '.join(unknown) or 'none'}")
    return tuple(sorted({model.link_names.index(name) for name in names}))


def split_names(text):
    """Cost names of a comma-separated string, split at the commas outside brackets so
    that link subsets such as ``link_velocity[link1,link3]`` stay whole."""
    return [name.strip() for name in re.split(r",(?![^\[]*\])", text) if name.strip()]


def parse_terms(specs, model):
    """Cost terms from a comma-separated string or a sequence of names."""
    if isinstance(specs, str):
        specs = split_names(specs)
    try:
        specs = list(specs)
    except TypeError:
        raise ValueError(f"costs: expected cost names (a comma-separated string or a "
                         f"sequence), got {specs!r}") from None
    terms = tuple(parse_term(spec, model) for spec in specs)
    if not terms:
        raise ValueError("costs: expected at least one cost name, got none")
    return terms


def stack_orders(terms):
    """K: number of raw orders q, ..., q^(K-1) the terms need together."""
    return 1 + max(term.top_order for term in terms)


def engine_order(terms):
    """Order k of the one engine call shared by the link and torque terms (None if none)."""
    dynamic = [term.derivative for term in terms if term.kind != "joint"]
    return max(dynamic) if dynamic else None


def engine_quantities(terms):
    """The engine quantities of the link and torque terms: "link_velocity", "joint_torque"
    (in that order) as some term needs them."""
    return tuple(quantity for kind, quantity in (("link", "link_velocity"),
                                                 ("torque", "joint_torque"))
                 if any(term.kind == kind for term in terms))


def engine_units(terms):
    """The units of ``cmtm.precompile`` whose kernels :func:`term_values` runs for these
    terms with the structured Jacobians: none for joint terms alone; else ``cmtm.motion``'s
    and those of ``cmtm.jacobians`` of the engine quantities."""
    k = engine_order(terms)
    if k is None:
        return []
    return ["motion", *cmtm.compile_cache.jacobian_units(engine_quantities(terms), k)]


JACOBIAN_SOURCES = {"structured": cmtm.jacobians, "finite_differences": cmtm.reference.fd_jacobians}
"""Where the stack Jacobians come from: the structured engine (default) or central finite
differences of the engine's motion (``cmtm.reference.fd_jacobians``: for comparisons)."""


def term_values(model, terms, q_stack, jacobians=True, source="structured", values=True):
    """Value y (N, d) and stack Jacobian Jy (N, d, K, nv) of every term at every sample
    (Jy is None with ``jacobians=False``, which skips the Jacobian pass; ``source`` names
    an entry of JACOBIAN_SOURCES; with ``values=False`` the link and torque terms' y is
    None, which skips the engine's motion pass: the Newton Hessian's differences).

    q_stack : (N, K, nv) float64 raw derivatives, K = stack_orders(terms).
    One call of ``cmtm.motion`` and one of ``cmtm.jacobians`` serve all link and torque
    terms together (gravity-free link twists, torques with gravity: cmtm_math §3.3).
    """
    N, K, nv = q_stack.shape
    k = engine_order(terms)
    motion = J = None
    if k is not None:
        quantities = engine_quantities(terms)
        with_torque = "joint_torque" in quantities
        engine_stack = _padded(q_stack, k + (3 if with_torque else 2))
        if values:
            motion = cmtm.motion(model, engine_stack, order=k, dynamics=with_torque,
                                 world=False)
        if jacobians:
            J = JACOBIAN_SOURCES[source](model, engine_stack, quantities, order=k)
    return [_term_value(term, q_stack, motion, J, jacobians) for term in terms]


def _padded(q_stack, n_orders):
    """The stack with zero derivatives appended up to ``n_orders``: a term of a lower order
    than the shared engine call does not depend on them (cmtm_math §7.1)."""
    if q_stack.shape[1] >= n_orders:
        return q_stack[:, :n_orders]
    padded = np.zeros((q_stack.shape[0], n_orders, q_stack.shape[2]))
    padded[:, :q_stack.shape[1]] = q_stack
    return padded


def _term_value(term, q_stack, motion, jacobians, with_jacobian):
    N, K, nv = q_stack.shape
    r = term.derivative
    if term.kind == "joint":
        y = q_stack[:, r, :]
        if not with_jacobian:
            return y, None
        Jy = np.zeros((N, nv, K, nv))
        Jy[:, np.arange(nv), r, np.arange(nv)] = 1.0
        return y, Jy
    if term.kind == "link":
        rows = (6 * np.asarray(term.links)[:, None] + np.arange(6)).ravel()
        y = None if motion is None else motion.v_L[:, r][:, term.links, :].reshape(N, -1)
        if not with_jacobian:
            return y, None
        J = jacobians["link_velocity"][:, r]
        J = J[:, rows] if len(rows) < J.shape[1] else J
    else:
        y = None if motion is None else motion.tau[:, r]
        if not with_jacobian:
            return y, None
        J = jacobians["joint_torque"][:, r]
    if J.shape[2] == K:        # the stack has the engine's input orders: J as it is
        return y, J
    Jy = np.zeros(J.shape[:2] + (K, nv))
    n = min(K, J.shape[2])
    Jy[:, :, :n] = J[:, :, :n]
    return y, Jy
