"""The smoke calls read from READMEs (derive/tables/readme_calls.py, derive/sources/quickstart.py): which block of
a real README is a self-contained quickstart and why the others are not, what a measurement keeps, and the table
and the probe's file it generates; offline, nothing run. Each README text is quoted from the release's long
description on PyPI (the URL above it), as the derivation reads it."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from derive import generated
from derive.sources import quickstart, readme_code
from derive.tables import readme_calls
from derive.tables.readme_calls import Kept, Library, Rejected

ROOT = Path(__file__).resolve().parents[2]

# https://pypi.org/project/interpax/0.3.16/ (README lines 33-46: a reST code-block)
INTERPAX = """Usage
=====

.. code-block:: python

    import jax.numpy as jnp
    import numpy as np
    from interpax import interp1d

    xp = jnp.linspace(0, 2 * np.pi, 100)
    xq = jnp.linspace(0, 2 * np.pi, 10000)
    f = lambda x: jnp.sin(x)
    fp = f(xp)

    fq = interp1d(xq, xp, fp, method="cubic")
    np.testing.assert_allclose(fq, f(xq), rtol=1e-6, atol=1e-5)

"""

# https://pypi.org/project/jax-md/0.2.29/ (README lines 72-74)
JAX_MD = """from jax_md import space
box_size = 25.0
displacement_fn, shift_fn = space.periodic(box_size)
"""

# https://pypi.org/project/dm-pix/0.4.5/ (README lines 51-56)
DM_PIX = """import dm_pix as pix

# Load an image into a NumPy array with your preferred library.
image = load_image()

flip_left_right_image = pix.flip_left_right(image)
"""

# https://pypi.org/project/evojax/0.2.17/ (README lines 12-17: an unmarked fence holding the citation)
EVOJAX = """@article{evojax2022,
  title={EvoJAX: Hardware-Accelerated Neuroevolution},
  author={Tang, Yujin and Tian, Yingtao and Ha, David},
  journal={arXiv preprint arXiv:2202.05008},
  year={2022}
}
"""

# https://pypi.org/project/tensorly/0.10.0/ (README lines 73-80): NumPy's backend, tensorly's default
TENSORLY = """import tensorly as tl
import numpy as np


tensor = tl.tensor(np.arange(24).reshape((3, 4, 2)), dtype=tl.float64)
unfolded = tl.unfold(tensor, mode=0)
tl.fold(unfolded, mode=0, shape=tensor.shape)
"""

REJECTED = [
    pytest.param(  # https://pypi.org/project/dynamax/1.0.3/ (README lines 128-154, an excerpt)
        "import jax.random as jr\nimport matplotlib.pyplot as plt\n"
        "from dynamax.hidden_markov_model import GaussianHMM\n"
        "key1, key2 = jr.split(jr.PRNGKey(0))\nhmm = GaussianHMM(3, 2)\ntrue_params, _ = hmm.initialize(key1)\n"
        "plt.plot([1, 2])\n",
        ["dynamax"],
        "plot",
        id="dynamax-plots",
    ),
    pytest.param(  # https://pypi.org/project/blackjax/1.7.1/ (README lines 55-81, an excerpt)
        "import jax\nimport blackjax\nnuts = blackjax.nuts(lambda x: -x**2, 1e-3, jax.numpy.ones(1))\n"
        "state = nuts.init(1.0)\nrng_key = jax.random.key(0)\nstep = jax.jit(nuts.step)\nfor i in range(100):\n"
        "    nuts_key = jax.random.fold_in(rng_key, i)\n    state, _ = step(nuts_key, state)\n",
        ["blackjax"],
        "loop",
        id="blackjax-100-steps",
    ),
    pytest.param(  # https://pypi.org/project/augmax/0.4.1/ (README lines 21-34)
        "import jax\nimport augmax\n\ntransform = augmax.Chain(\n  augmax.RandomCrop(256, 256),\n"
        "  augmax.HorizontalFlip(),\n  augmax.Rotate(),\n)\n\nimage = ...\n\nrng = jax.random.PRNGKey(27)\n\n"
        "transformed_image = transform(rng, image)\n",
        ["augmax"],
        "placeholder",
        id="augmax-elided-image",
    ),
    pytest.param(  # https://pypi.org/project/jwave/0.2.1/ (README lines 49-71, an excerpt)
        "from jwave import FourierSeries\nfrom jwave.geometry import Domain\n"
        "from jwave.utils import load_image_to_numpy\nN, dx = (256, 256), (0.1e-3, 0.1e-3)\ndomain = Domain(N, dx)\n"
        'p0 = load_image_to_numpy("docs/assets/images/jwave.png", image_size=N)/255.\n'
        "p0 = FourierSeries(p0, domain)\n",
        ["jwave"],
        "file",
        id="jwave-reads-a-png",
    ),
    pytest.param(  # https://pypi.org/project/navix/4.0.0/ (README lines 63-81, an excerpt)
        "import jax\nimport navix as nx\n\ndef run(seed):\n  env = nx.make('MiniGrid-Empty-8x8-v0')\n"
        "  key = jax.random.PRNGKey(seed)\n  actions = jax.random.randint(key, (N_TIMESTEPS,), 0, 4)\n"
        "  return actions\n\nrun(0)\n",
        ["navix"],
        "fragment",
        id="navix-uses-a-constant-shown-elsewhere",
    ),
    pytest.param(  # https://pypi.org/project/easydel/0.3.0/ (README lines 266-313, an excerpt)
        "import easydel as ed\nimport jax.numpy as jnp\n\n# Load model and tokenizer\n"
        'model_id = "meta-llama/Llama-3.1-8B-Instruct"\n'
        "model = ed.AutoEasyDeLModelForCausalLM.from_pretrained(\n    model_id,\n    dtype=jnp.float16,\n)\n",
        ["easydel"],
        "network",
        id="easydel-pretrained",
    ),
    pytest.param(DM_PIX, ["dm_pix"], "fragment", id="dm-pix-load-image"),
    pytest.param(EVOJAX, ["evojax"], "syntax", id="evojax-citation"),
    pytest.param(  # https://pypi.org/project/mctx/0.0.71/ (README lines 100-101): mctx never imported
        "policy_output = mctx.gumbel_muzero_policy(params, rng_key, root, recurrent_fn,\n"
        "                                          num_simulations=32)\n",
        ["mctx"],
        "no-import",
        id="mctx-not-imported",
    ),
    pytest.param(  # https://pypi.org/project/treescope/0.1.10/ (README line 62)
        "import treescope\n", ["treescope"], "no-call", id="treescope-imported-only"
    ),
]


@pytest.mark.parametrize(("code", "modules"), [(INTERPAX, ["interpax"]), (JAX_MD, ["jax_md"])])
def test_a_quickstart_that_stands_alone_is_a_candidate(code: str, modules: list[str]) -> None:
    block = next(readme_code.blocks(code), None) if code.startswith("Usage") else readme_code.Block(code, 1, 3)
    assert block is not None
    assert quickstart.reject(block.code, modules) is None


@pytest.mark.parametrize(("code", "modules", "reason"), REJECTED)
def test_a_block_that_is_not_a_quickstart_says_why(code: str, modules: list[str], reason: str) -> None:
    found = quickstart.reject(code, modules)
    assert found is not None and found.reason == reason, found
    assert str(found).startswith(quickstart.REASONS[reason])


def test_a_block_of_a_library_whose_jax_is_optional_must_name_jax() -> None:
    assert quickstart.reject(TENSORLY, ["tensorly"]) is None  # jax required: its calls run jax
    said = quickstart.reject(TENSORLY, ["tensorly"], optional_jax=True)
    assert said is not None and said.reason == "no-jax"  # NumPy's backend: no jax would run
    on_jax = TENSORLY.replace("import numpy as np\n", "import numpy as np\ntl.set_backend('jax')\n")
    assert quickstart.reject(on_jax, ["tensorly"], optional_jax=True) is None


def test_a_loop_of_a_few_steps_and_a_name_the_block_binds_itself_are_its_own() -> None:
    code = "import jax_md\nsteps = 10\ninput = jax_md.space.free()\nfor i in range(steps):\n    print(input)\n"
    assert quickstart.reject(code, ["jax_md"]) is None
    many = code.replace("steps = 10", "steps = 10 * 100")
    said = quickstart.reject(many, ["jax_md"])
    assert said is not None and said.reason == "loop" and "1000 steps" in said.detail


def test_the_readme_s_reason_is_the_block_that_came_closest() -> None:
    readme = f"# lib\n\n```bash\npip install dm-pix\n```\n\n```\n{EVOJAX}```\n\n```python\n{DM_PIX}```\n"
    choice = readme_calls.choose("dm-pix", readme, ["dm_pix"])
    assert choice.candidates == [] and choice.rejected is not None
    assert choice.rejected.reason == "fragment"  # the citation parses not at all; dm-pix's block calls pix
    assert "README lines 17-22" in choice.rejected.detail and "`load_image`" in choice.rejected.detail
    first = readme_calls.choose("jax-md", f"```python\n{DM_PIX}```\n\n```python\n{JAX_MD}```\n", ["jax_md", "dm_pix"])
    assert [(b.first, b.last) for b in first.candidates] == [(11, 13)] and first.rejected is None
    assert readme_calls.choose("x", "", ["x"]).rejected == Rejected("x", "no-readme")
    assert readme_calls.choose("x", "Words only.\n", ["x"]).rejected == Rejected("x", "no-code")


def test_the_extra_that_brings_jax_and_the_python_a_release_accepts() -> None:
    # https://pypi.org/pypi/cvxpylayers/1.2.0/json (requires_dist): `all` also asks for Apple's MLX, `jax` for jax
    cvxpylayers = [
        "cvxpy>=1.9.0",
        'jax>=0.4.0; extra == "all"',
        'mlx-metal>=0.27.1; extra == "all"',
        'torch>=2.0.0; extra == "all"',
        'jax>=0.4.0; extra == "jax"',
        'jaxlib>=0.4.0; extra == "jax"',
        'mlx>=0.27.1; extra == "mlx"',
    ]
    assert readme_calls.jax_extra(cvxpylayers) == "jax" and not readme_calls.requires_jax(cvxpylayers)
    # https://pypi.org/pypi/interpax/0.3.16/json: jax required
    interpax = ["equinox<0.14,>=0.11.0", "jax<0.13,>=0.5.0", 'scipy<1.19,>=1.10.0; extra == "test"']
    assert readme_calls.jax_extra(interpax) == "" and readme_calls.requires_jax(interpax)
    # Requires-Python of efax 2.6.0, pytensor 3.3.8 and interpax 0.3.16
    assert readme_calls.python_for("<3.16,>=3.13", ["3.11", "3.12"]) == ""
    assert readme_calls.python_for("<3.15,>=3.12", ["3.11", "3.12"]) == "3.12"
    assert readme_calls.python_for(">=3.11", ["3.11", "3.12"]) == "3.11"


def _blocks() -> list[readme_code.Block]:
    return [readme_code.Block(DM_PIX, 10, 15), readme_code.Block(JAX_MD, 20, 22)]


def test_the_first_block_that_ran_quickly_and_wrote_nothing_is_kept() -> None:
    lib = Library("jax-md", ["jax_md"], "")
    ran = {"jax": "0.10.1", "version": "0.2.29", "import_s": 3.0}
    tried = [{"status": "raised", "error": "NameError: name 'load_image' is not defined", "seconds": 0.1}]
    found = readme_calls.judged(
        lib, "0.2.29", _blocks(), ran | {"results": [*tried, {"status": "ok", "seconds": 0.4}]}, "3.11"
    )
    assert isinstance(found, Kept) and found.code == JAX_MD and found.call == "jax_md.space.periodic"
    assert found.source == "https://pypi.org/project/jax-md/0.2.29/ (README lines 20-22)" and found.jax == "0.10.1"
    slow = readme_calls.judged(
        lib, "0.2.29", _blocks(), ran | {"results": [*tried, {"status": "ok", "seconds": 60.0}]}, "3.11"
    )
    assert isinstance(slow, Rejected) and slow.reason == "slow" and len(slow.tried) == 2
    wrote = {"status": "ok", "seconds": 0.4, "written": ["out.npy"]}
    writes = readme_calls.judged(lib, "0.2.29", _blocks(), ran | {"results": [*tried, wrote]}, "3.11")
    assert isinstance(writes, Rejected) and writes.reason == "writes" and "out.npy" in writes.why()
    raised = readme_calls.judged(lib, "0.2.29", _blocks()[:1], ran | {"results": tried}, "3.11")
    assert isinstance(raised, Rejected) and raised.reason == "raised" and "load_image" in raised.why()
    refused = readme_calls.judged(lib, "0.2.29", _blocks(), {"failed": "install", "said": "no wheel\nfor it"}, "3.11")
    assert isinstance(refused, Rejected) and refused.why() == f"{readme_calls.MEASURED['install']} (no wheel for it)"


def test_the_program_that_measures_a_block_is_python() -> None:
    compile(readme_calls.HARNESS, "<harness>", "exec")  # a broken one rejects every library, as not importing


def test_the_table_reads_back_every_block_as_it_ran() -> None:
    code = "import jax_md\nprint('''quoted''', \"twice\", 'a\\\\b')\nx = 1  # it's\n"
    kept = Kept("jax-md", "0.2.29", "0.10.1", "3.11", 0.5, ["jax_md"], "jax_md.space.free", "https://x (lines)", code)
    rejected = [Rejected("dm-pix", "fragment", "README lines 51-56: line 4: `load_image`")]
    table = tomllib.loads(readme_calls.render([kept], rejected, "2026-12-01", "3.11"))
    assert table["library"][0]["code"] == code and table["library"][0]["seconds"] == 0.5
    assert table["rejected"] == [{"package": "dm-pix", "reason": "fragment", "why": rejected[0].why()}]
    plain = "import jax_md\nx = jax_md.space.free()\n"
    assert readme_calls.toml_text(plain) == "'''\n" + plain + "'''"


def test_the_probe_s_file_is_generated_from_the_table_and_a_hand_written_call_wins() -> None:
    path = generated.README_CALLS
    assert path.read_text(encoding="utf-8") == generated.readme_calls(), "python -m derive refresh writes it"
    with generated.README_CALLS_TABLE.open("rb") as handle:
        table = tomllib.load(handle)
    mine = readme_calls.hand_written()
    assert mine and not mine & {row["package"] for row in table.get("library", [])}
    assert not mine & {row["package"] for row in table.get("rejected", [])}  # not even read: theirs is written
    blocks = json.loads(path.read_text(encoding="utf-8"))["blocks"]
    for name, block in blocks.items():  # each kept block is still what the selection chooses
        assert quickstart.reject(block["code"], block["modules"]) is None, name
        assert block["seconds"] <= readme_calls.MAX_SECONDS, name
