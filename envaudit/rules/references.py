"""Upstream places the code checks cite, shared by the modules that declare them (each check's own in its
`references`); each URL at a tag or commit where it names a line, so that what it shows does not move."""

JEP_9419 = "https://docs.jax.dev/en/latest/jep/9419-jax-versioning.html"
INSTALL = "https://docs.jax.dev/en/latest/installation.html"
MEM_ERRORS = "https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/index.html"
PYTHONPATH = "https://docs.python.org/3/using/cmdline.html#envvar-PYTHONPATH"
# From jax 0.5.3 jaxlib skips such a plugin with a RuntimeWarning ("JAX plugin {name} version {v} is installed, but
# it is not compatible with the installed jaxlib version {jaxlib}, so it will not be used."): jax runs without it.
PLUGIN_CHECK = "https://github.com/jax-ml/jax/blob/jax-v0.5.3/jaxlib/plugin_support.py"
JAX_CONFIG = "https://github.com/jax-ml/jax/blob/main/jax/_src/config.py"  # bool_env(), optional_enum_state()
CUDA_CHECK = "https://github.com/jax-ml/jax/blob/jax-v0.4.23/jax/_src/xla_bridge.py"  # _check_cuda_versions
CUDA_MINIMUMS = "https://github.com/jax-ml/jax/blob/jax-v0.10.1/jax_plugins/cuda/__init__.py#L148"  # from 0.6.1
CUDA_MINIMUMS_BEFORE = "https://github.com/jax-ml/jax/blob/jax-v0.4.26/jax/_src/xla_bridge.py#L272"  # single-package
CUDA_PINS = "https://github.com/jax-ml/jax/blob/main/jax_plugins/cuda/plugin_setup.py"  # the with-cuda extra
XID = "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html"
XLA_BRIDGE = "https://github.com/jax-ml/jax/blob/jax-v0.10.1/jax/_src/xla_bridge.py"  # backends()
XLA_REVISION = "001918b7024cf5f020051a9d25d2dd57a5896aaa"  # where the parser was read (collect/xlaflags.py)
PARSE_FLAGS = f"https://github.com/openxla/xla/blob/{XLA_REVISION}/xla/parse_flags_from_env.cc"
TSL_FLAGS = f"https://github.com/openxla/xla/blob/{XLA_REVISION}/third_party/tsl/tsl/util/command_line_flags.cc"
JAX_LIB = "https://github.com/jax-ml/jax/blob/{}/jax{}/lib/__init__.py#L{}"  # check_jaxlib_version, at a tag
XLA_AT_JAX = "https://github.com/openxla/xla/blob/{}/xla/{}#L{}"  # at the XLA commit a jax release pins
XLA_0419, XLA_0414 = "ecb73da4b7b2e3b54aa6d6b7f08a5c662bb19c6e", "9f26b9390f5a5c565a13925731de749be8a760be"
