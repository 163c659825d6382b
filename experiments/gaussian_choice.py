"""Gaussian choice (DirPG paper, appendix A.3): quadrature of the DirPG objective ``l(p, ε)`` against the classical one.

The agent takes a reward ``x ~ N(0, 1)`` with probability ``p`` and 0 with probability ``1 - p``. The Gaussian draw is
the environment's noise ``S`` (fixed per episode, not controllable); the coin with bias ``p`` is the agent's own
randomness (controllable). DirPG optimises (appendix A.1)

    l(p, ε) = E_{x ~ N(0,1)} [ (1/ε) · log(p · exp(ε x) + 1 - p) ],

the classical risk-sensitive objective treats both sources of randomness alike:

    c(p, ε) = (1/ε) · log E_{x, a}[exp(ε R)] = (1/ε) · log(p · exp(ε² / 2) + 1 - p).

Both have the same expected return (0 for every ``p``), so all the differences come from how they value risk.
The expectation over ``x`` is computed with Gauss–Hermite quadrature (checked against ``scipy.integrate.quad``).

    python -m experiments.gaussian_choice           # a few seconds
    python -m experiments.gaussian_choice --full    # finer grids in p and ε
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import numpy as np
from scipy import integrate

from experiments.common import experiment_parser, positive_int, save_results, setup_run

NAME = "gaussian_choice"
DEFAULT_EPSILONS = (-3.0, -1.0, -0.3, 0.3, 1.0, 3.0)


def hermite_nodes(n: int = 101) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and weights of Gauss–Hermite quadrature for the standard normal: ``E[f(x)] ≈ Σ w_i f(x_i)``.

    :param n: number of nodes
    :return: the nodes ``x_i`` and the weights ``w_i`` (summing to 1)
    """
    nodes, weights = np.polynomial.hermite_e.hermegauss(n)
    return nodes, weights / weights.sum()


def controllable_risk_objective(p: np.ndarray | float, epsilon: float, n_nodes: int = 101) -> np.ndarray:
    """DirPG's objective ``l(p, ε) = E_x[(1/ε) log(p e^{εx} + 1 - p)]`` of the Gaussian choice problem.

    :param p: probability of taking the Gaussian reward, in [0, 1] (array or scalar)
    :param epsilon: the risk parameter ε, non-zero
    :param n_nodes: Gauss–Hermite nodes
    :return: ``l`` for every ``p``
    """
    x, w = hermite_nodes(n_nodes)
    p = np.atleast_1d(np.asarray(p, dtype=np.float64))
    with np.errstate(divide="ignore"):
        log_p, log_q = np.log(p)[:, None], np.log1p(-p)[:, None]
    inner = np.logaddexp(log_p + epsilon * x[None, :], log_q)  # log(p e^{εx} + 1 - p), stable for any ε x
    return (inner @ w) / epsilon


def classical_objective(p: np.ndarray | float, epsilon: float) -> np.ndarray:
    """Classical risk-sensitive objective ``(1/ε) log E[exp(ε R)]`` over the joint law of the choice and ``x``.

    :param p: probability of taking the Gaussian reward (array or scalar)
    :param epsilon: the risk parameter ε, non-zero
    :return: ``c(p, ε) = (1/ε) log(p e^{ε²/2} + 1 - p)`` for every ``p``
    """
    p = np.atleast_1d(np.asarray(p, dtype=np.float64))
    with np.errstate(divide="ignore"):
        return np.logaddexp(np.log(p) + 0.5 * epsilon**2, np.log1p(-p)) / epsilon


def maximisers(p: np.ndarray, values: np.ndarray, tol: float = 1e-9) -> tuple[float, float]:
    """The smallest and the largest ``p`` at which ``values`` is within ``tol`` of its maximum (ties are common here).

    :param p: the grid
    :param values: the objective on the grid
    :param tol: tolerance of a tie
    :return: ``(lowest maximiser, highest maximiser)``
    """
    best = p[values >= values.max() - tol]
    return float(best.min()), float(best.max())


def quad_objective(p: float, epsilon: float) -> float:
    """``l(p, ε)`` by adaptive quadrature (``scipy.integrate.quad``), a check of the Gauss–Hermite values.

    :param p: probability of taking the Gaussian reward
    :param epsilon: the risk parameter ε
    :return: ``l(p, ε)``
    """

    def integrand(x: float) -> float:
        inner = np.logaddexp(np.log(p) + epsilon * x, np.log1p(-p)) if 0 < p < 1 else (epsilon * x if p == 1 else 0.0)
        return float(inner / epsilon * np.exp(-0.5 * x * x) / np.sqrt(2 * np.pi))

    value, _ = integrate.quad(integrand, -np.inf, np.inf)
    return value


def main(argv: Sequence[str] | None = None) -> dict:
    """Evaluate both objectives on a grid of ``p`` for several ε, find their maximisers, plot and save.

    :param argv: command line (default: ``sys.argv[1:]``)
    :return: the results written to JSON
    """
    parser = experiment_parser(__doc__)
    parser.add_argument("--epsilons", type=float, nargs="+", default=list(DEFAULT_EPSILONS), help="ε values to plot")
    parser.add_argument("--grid", type=positive_int, default=None, help="points in p (default 201, --full 2001)")
    args = parser.parse_args(argv)
    started = setup_run(args)
    n_grid = args.grid or (2001 if args.full else 201)
    p = np.linspace(0.0, 1.0, n_grid)
    n_eps = 30 if args.full else 12
    eps_sweep = np.concatenate([-np.geomspace(4, 0.05, n_eps), np.geomspace(0.05, 4, n_eps)])

    curves = {}
    for eps in args.epsilons:
        ell, cls = controllable_risk_objective(p, eps), classical_objective(p, eps)
        curves[f"{eps:g}"] = {
            "l": ell.tolist(),
            "classical": cls.tolist(),
            "argmax_l": maximisers(p, ell),
            "max_l": float(ell.max()),
            "argmax_classical": maximisers(p, cls),
            "l_at_p1": float(ell[-1]),
            "classical_at_p1": float(cls[-1]),
        }
    argmax_l = [maximisers(p, controllable_risk_objective(p, e)) for e in eps_sweep]
    argmax_c = [maximisers(p, classical_objective(p, e)) for e in eps_sweep]
    checks = [(pp, ee) for pp in (0.1, 0.5, 0.9) for ee in (-3.0, 0.3, 3.0)]
    max_quad_error = max(abs(quad_objective(pp, ee) - controllable_risk_objective(pp, ee)[0]) for pp, ee in checks)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
    colors = plt.cm.coolwarm(np.linspace(0, 1, len(args.epsilons)))
    for color, eps in zip(colors, args.epsilons):
        c = curves[f"{eps:g}"]
        axes[0].plot(p, c["l"], color=color, label=f"ε={eps:g}")
        axes[1].plot(p, c["classical"], color=color, label=f"ε={eps:g}")
    axes[0].set(title="DirPG objective l(p, ε) (controllable risk)", xlabel="p = P(take the N(0,1) reward)", ylabel="value")
    axes[1].set(title="classical (1/ε) log E[exp(εR)]", xlabel="p", ylabel="value")
    for k, (marker, fill) in enumerate((("o", "full"), ("o", "none"))):
        axes[2].plot(eps_sweep, [a[k] for a in argmax_l], marker, ms=5, fillstyle=fill, color="C0",
                     label="argmax l (DirPG)" if k == 0 else "argmax l: tie")  # fmt: skip
        axes[2].plot(eps_sweep, [a[k] for a in argmax_c], "x", ms=5, color="C1", label="argmax classical" if k == 0 else None)
    axes[2].set(title="optimal p vs ε", xlabel="ε", ylabel="optimal p")
    axes[2].set_xscale("symlog", linthresh=0.05)
    for ax in axes:
        ax.axhline(0, color="grey", lw=0.5)
        ax.legend(fontsize=7)
    fig.tight_layout()

    data = {
        "experiment": NAME,
        "scale": "full" if args.full else "default",
        "p": p.tolist(),
        "epsilons": args.epsilons,
        "curves": curves,
        "epsilon_sweep": eps_sweep.tolist(),
        "argmax_l": argmax_l,
        "argmax_classical": argmax_c,
        "max_abs_error_vs_quad": float(max_quad_error),
        "quadrature": "Gauss-Hermite, 101 nodes",
    }
    save_results(args.out, NAME, data, fig, started)
    plt.close(fig)
    return data


if __name__ == "__main__":
    main(sys.argv[1:])
