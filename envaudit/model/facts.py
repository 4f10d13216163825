"""What a fact is: every field of the snapshot, its type and its meaning, defined once and checked from the types.

Rules, the judge and the formats read facts that a live audit measured, a plan or a bug report stated, or a saved
report carries from a node last month; `check` reads them from a file a user hands us. So each group of facts is a
`TypedDict` here (as pypa/packaging's `Environment`): mypy holds every reader to these names and types, and the
loader validates a document against the same annotations (`typecheck.problem`), so a wrong type deep inside (`"gpus":
true`) is one line of bad input, never a crash in a rule. Statuses are `Literal`s; where the facts come from is
`Facts.origin`, not a status. Every field may be missing or null; a field not declared here is carried unread.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict

from envaudit.model.exitcodes import BadInput
from envaudit.model.typecheck import problem

Origin = Literal["live", "plan", "hook", "triage"]  # measured here; stated by a plan; the import hook; a bug report
JaxStatus = Literal["ok", "unknown", "skipped", "absent", "import_error", "crash", "timeout", "error"]
Environment = Literal["venv", "virtualenv", "uv", "conda", "pixi", "system"]
NvidiaStatus = Literal["ok", "unknown", "absent", "error", "timeout", "crash"]
XlaFlagsStatus = Literal["ok", "unset", "unknown"]
FACT_KEYS = ("packages", "python", "platform", "nvidia", "jax", "env")  # required in a document; the rest default


class ReportError(BadInput, ValueError):
    """A report (or facts document) that is not of schema envaudit/report/v1; the message is one line."""


class PythonFacts(TypedDict, total=False):
    version: str  # "3.11.9"
    implementation: str
    executable: str
    prefix: str
    virtualenv: bool
    conda: bool
    # what made the environment: a venv, virtualenv or uv venv (their pyvenv.cfg says which), a conda or pixi
    # environment (conda-meta/), or none (the system's interpreter): its installer installs the fixes
    environment: Environment
    pip: bool  # pip imports in it (a uv venv has none): else a fix installs with uv, or ensurepip first
    uv: bool  # a uv command runs there (the environment's own, or on PATH): a uv venv's fixes need it
    pythonpath: str  # PYTHONPATH's entries, made absolute as sys.path holds them
    user_site: str  # the user site-packages when it is on sys.path, else ""
    home: str  # the home directory of the user it ran as (what a report shared in public replaces by ~)
    leftovers: list[str]  # what an interrupted pip left in its site directories (`~axlib-0.10.2.dist-info`)


class Ptxas(TypedDict, total=False):  # the first ptxas on PATH (collect/toolkit.py), read, never run
    path: str | None  # None: PATH has no ptxas
    version: str | None  # "12.2.140", from its toolkit's version.json (cuda_nvcc) or version.txt; None: unknown
    source: str  # the file the version was read from, or why it is unknown


class TpuHost(TypedDict, total=False):  # the TPU chips on the host's PCI bus (collect/tpu.py), only where there are
    chips: int  # Google TPU functions on the PCI bus, as jax counts them (jax/_src/hardware_utils.py)
    version: str | None  # "v5e", from their PCI device id; None: an id jax's table does not know
    device_files: int  # the chips' device files this process can see (/dev/accel*, /dev/vfio/<group>)
    transparent_hugepages: str | None  # the mode the kernel has selected ("always", "madvise", "never"); None: no
    # /sys/kernel/mm/transparent_hugepage/enabled (a container without it), which jax reads as not enabled


class PlatformFacts(TypedDict, total=False):
    system: str
    release: str
    machine: str
    libc: str | None
    cpu_model: str | None
    cpu_physical_cores: int | None
    cpu_logical_cores: int | None
    memory_total_bytes: int | None
    psutil_error: str
    ptxas: Ptxas  # XLA prefers a ptxas on PATH to the nvidia-cuda-nvcc wheel's in some releases
    tpu: TpuHost  # only on a host with TPU chips on its PCI bus


class Process(TypedDict, total=False):
    pid: int
    used_memory_bytes: int | None


class GPU(TypedDict, total=False):  # one NVML device (collect/nvml.py); None: NVML could not say, see `unavailable`
    index: int
    name: str
    uuid: str
    serial: str
    pci_bus_id: str  # "00000000:3B:00.0"
    compute_capability: str | None  # "9.0"
    memory_total_bytes: int
    memory_used_bytes: int
    ecc_enabled: bool
    ecc_uncorrected_volatile: int
    ecc_uncorrected_aggregate: int
    retired_pages_pending: bool
    remap_pending: bool
    remap_failure: bool
    persistence_mode: bool
    mig_enabled: bool
    mig_devices: int
    throttle_reasons: list[str]
    compute_processes: list[Process]
    unavailable: dict[str, str]  # field -> NVML's message
    lost: bool  # NVML says the GPU is lost (NVML_ERROR_GPU_IS_LOST): fallen off the bus, or otherwise inaccessible


class NvidiaFacts(TypedDict, total=False):
    # timeout: NVML did not answer in time (a hung driver); crash: asking NVML killed the process that asked (by
    # `signal`); error: NVML's error, or the process that asked ended without an answer (`returncode`)
    status: NvidiaStatus
    message: str | None
    driver_version: str | None
    cuda_driver_version: str | None
    nvml_version: str | None
    gpus: list[GPU]
    gpus_exact: bool  # False: a plan or a report that does not say how many GPUs there are
    returncode: int | None  # the exit status of the process that asked NVML, when it ended without an answer
    signal: str  # the signal that killed it ("SIGSEGV"), when one did
    error_code: int  # NVML's own error code, where asking it ended in an NVML error (18: driver/library mismatch)


class Device(TypedDict, total=False):  # one jax device, as jax.devices() shows it
    id: int
    platform: str
    device_kind: str
    compute_capability: str | None
    local_hardware_id: int | None


class DeviceMemory(TypedDict, total=False):  # a device's allocator statistics after the probes
    id: int
    peak_bytes_in_use: int
    bytes_in_use: int
    bytes_limit: int


ImportStatus = Literal["ok", "error", "needs", "not_tried"]


class ImportOutcome(TypedDict, total=False):  # one import the imports probe tried (probes/imports.py)
    distribution: str  # the installed distribution it belongs to (canonical name; "jax" for jax.scipy.*)
    version: str
    module: str  # what was imported
    status: ImportStatus  # needs: an optional dependency it needs is not installed (not a failure); not_tried:
    # the probe's time was spent (unknown)
    error: str  # the exception as Python's last traceback line prints it
    where: str  # the library's own line that raised it ("haiku/_src/base.py:23")
    undeclared: str  # the distribution it imports, declares nowhere and does not find (objax 1.8.0: six)
    warnings: list[str]  # jax's deprecation warnings the import raised
    seconds: float
    stderr: list[str]  # where the import killed the process: the last lines it wrote on stderr (its own words)
    # a module no import of its library reached, imported because its code uses, at its import, a jax name the jax
    # there lacks (probes/calls/_uses.py): that name and its line ("jax.numpy.DeviceArray (jaxline/experiment.py:39)")
    read: str
    # of a distribution's top-level module: how many of its files name jax or flax in their path (its JAX part:
    # diffusers 0.18.2's modeling_flax_utils.py and 27 more; 0.42.1, which dropped Flax, none)
    jax_files: int


CallStatus = Literal["ok", "error", "not_tried", "skip", "timeout"]


class CallOutcome(TypedDict, total=False):  # one smoke call the imports probe made (probes/calls/: a file, a block)
    distribution: str  # the installed distribution whose call it is (canonical name)
    version: str
    call: str  # what users call ("diffrax.diffeqsolve")
    status: CallStatus  # skip: not applicable here (its import failed, Keras on another backend); not_tried: the
    # probe's time was spent (unknown); timeout: it was made and did not return within its share of the bound
    error: str  # the exception as Python's last traceback line prints it; why it was skipped or not tried
    where: str  # the library's own line that raised it ("jaxopt/_src/base.py:241")
    seconds: float
    stderr: list[str]  # where the call killed the process: the last lines it wrote on stderr
    # a call read, not made: the function's code (`where`) uses this jax name, which the jax there lacks (resolving
    # it raised `error`; probes/calls/_uses.py)
    read: str


class JaxFacts(TypedDict, total=False):  # what jax reported in the child process (child/jaxfacts.py)
    status: JaxStatus  # how the child ended; "unknown" where no child ran (a plan, the hook, a bug report)
    message: str | None
    stage: str | None  # the last stage reached: start, import, imported, devices, first_use, environment_info
    duration_s: float
    jax_version: str
    jaxlib_version: str
    backend: str
    platform: str  # cpu, cuda, rocm, tpu
    platform_version: str
    devices: list[Device]
    x64: bool
    default_matmul_precision: str | None  # None: jax's default
    cuda_libraries: dict[str, int | str]  # library -> version jax loaded (or the error asking for it)
    cuda_version: str | None
    cudnn_version: str | None
    returncode: int | None
    signal: str  # the signal that killed the child
    child_env: dict[str, str]  # what envaudit set in the child's environment
    child_pids: list[int]
    device_memory: list[DeviceMemory]
    cpu_fraction: float  # the share of a CPU the child used, when it timed out
    idle_cpus: float  # the CPUs it may use (its affinity) that sat idle meanwhile
    throttled_fraction: float  # the share of that time a CPU quota held its cgroup
    wait_fraction: float  # the time its threads were runnable and waited for a CPU, per second (schedstat)
    printed_kib_s: float  # what it printed on its stderr meanwhile, KiB per second (a flood had its CPU)
    other_python: str  # --quick of another interpreter (--python): the one whose jax was not started
    cpus: int  # how many CPUs it may use
    cpu_s: float  # the CPU seconds it used meanwhile
    cost_s: float  # the declared cost of what it was doing (state.JAX_START_S)
    environment_info: str  # jax.print_environment_info() as jax printed it (its nvidia-smi bounded), for bug reports
    undefined_extras: list[str]  # extras of jax a plan or report asks for that its release does not define
    imports: list[ImportOutcome]  # what importing the libraries that depend on jax gave (the imports probe)
    calls: list[CallOutcome]  # what each imported library's smoke call gave (the imports probe)


class Unsatisfied(TypedDict, total=False):  # a declared requirement the installed versions do not meet
    package: str
    requires: str
    installed: str | None


class Duplicate(TypedDict, total=False):  # one distribution installed twice on sys.path
    name: str
    versions: list[str]
    locations: list[str]


class XlaFlag(TypedDict, total=False):  # one argument XLA reads from XLA_FLAGS, in its order (collect/xlaflags.py)
    shown: str  # the argument as a report may show it (redact.py: a value that may be a secret hidden)
    name: str  # the flag it names ("--NAME" or "--NAME=VALUE"); "" where it names none ("-x", "--=1", "--")
    defined: bool | None  # whether the installed jaxlib defines a flag of that name; None: its files could not say
    kind: str | None  # that flag's type, its DebugOptions field's ("bool", "int32", "string", ...); None: not known
    value_ok: bool | None  # whether tsl parses its value (or its absence) for that type; None: not judged


class XlaFlagsFacts(TypedDict, total=False):  # XLA_FLAGS as XLA reads it, against the installed jaxlib
    # ok: read (`entries`); unset: no XLA_FLAGS or an empty one; unknown: what could not be read, in `message`
    status: XlaFlagsStatus
    message: str | None
    variable: str | None  # the value these facts describe, as `env` shows it: facts of another value say nothing
    source: Literal["value", "file"]  # the flags are the value itself, or (not starting with "-") the file it names
    file_opens: bool | None  # for a file: whether XLA can open it (False: jax ends at its first use); None: unknown
    entries: list[XlaFlag]  # what XLA parses, in order, up to where its parse stops
    ignored: int  # the words after that, which XLA never reads (it stops at the first not starting with "-")
    flags_defined: int  # how many flags the jaxlib's shared objects define (a superset: collect/xlaflags.py)
    read_from: list[str]  # the shared objects they were read from


class InstallFacts(TypedDict, total=False):  # a plan's stack installed here, in a throwaway environment
    # installed: the installer took it (what importing showed is in `jax`); refused: it could not install it
    status: Literal["installed", "refused"]
    message: str  # the installer's own reason, one line, where it refused
    installer: str  # what installed it ("uv")
    python: str  # the Python it was installed for


# what kind of failure an error line shows (rules/raised.py): the environment's, the program's (a value or type it
# or a library's check of its arguments refused), or the program's own choice of jax's platforms
ErrorShape = Literal["environment", "program", "configuration"]


class Quoted(TypedDict):
    line: int
    text: str


class Message(Quoted, total=False):
    """A message the environment printed, as a bug report quotes it: its text and the line it starts on; whether a
    log marked its line as information (glog's I0919, logging's INFO:); for an error line no signature reads
    (`Facts.errors`), its shape."""

    informational: bool
    shape: ErrorShape


@dataclass(frozen=True)
class Facts:
    """A JSON-serialisable snapshot of the audited environment, each group of facts a plain dict."""

    packages: dict[str, str] = field(default_factory=dict)  # canonical name -> version
    python: PythonFacts = field(default_factory=lambda: PythonFacts())
    platform: PlatformFacts = field(default_factory=lambda: PlatformFacts())
    nvidia: NvidiaFacts = field(default_factory=lambda: NvidiaFacts(status="unknown"))
    jax: JaxFacts = field(default_factory=lambda: JaxFacts(status="unknown"))
    env: dict[str, str] = field(default_factory=dict)  # the variables that matter (scope.py), redacted
    requirements: list[Unsatisfied] = field(default_factory=list)
    duplicates: list[Duplicate] = field(default_factory=list)
    requires: dict[str, list[str]] = field(default_factory=dict)  # each audited package's requirements on the others
    origin: Origin = "live"
    installers: dict[str, str] = field(default_factory=dict)  # canonical name -> its INSTALLER (pip, uv, conda)
    # the audited distributions installed by name (REQUESTED: pip's and uv's mark), not pulled in by another: what
    # the user chose, which a fix keeps where one can (judge/fixplan.py)
    requested: list[str] = field(default_factory=list)
    xla_flags: XlaFlagsFacts = field(default_factory=lambda: XlaFlagsFacts(status="unknown"))
    messages: list[Message] = field(default_factory=list)  # messages a bug report quotes (rules/signatures.py)
    errors: list[Message] = field(default_factory=list)  # error lines a bug report quotes that no signature reads
    install: InstallFacts = field(default_factory=lambda: InstallFacts())  # a plan's stack installed here (built)
    # the extras a plan's requirements ask of each distribution but jax (`tensorflow-probability[jax]==0.25.0`):
    # what the release declares under them is required too (jax's extras are modelled as what they install)
    extras: dict[str, list[str]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {k: v if isinstance(v, str) else v.copy() for k, v in vars(self).items()}  # the fields, in order

    @classmethod
    def from_dict(cls, data: object, mode: str = "") -> Facts:
        """`mode`: the report's, which tells a 0.2.0 document's "planned" apart (a plan, or a pasted bug report)."""
        if not isinstance(data, dict):
            raise ReportError("facts must be a JSON object")
        if missing := [k for k in FACT_KEYS if k not in data]:
            raise ReportError(f"facts lack the key(s) {', '.join(missing)}")
        obj = _before_origin(data, mode)
        if found := problem(obj, FactsDocument, "facts"):
            raise ReportError(found)
        defaults = cls()
        read = {k: obj[k] if obj.get(k) is not None else getattr(defaults, k) for k in vars(defaults)}
        # each requirement once: a package's requirements are a set (a document that repeats one 3,000 times made
        # every state a plan tried read it again: 89 s to check one report)
        read["requires"] = {name: list(dict.fromkeys(reqs)) for name, reqs in read["requires"].items()}
        return cls(**read)


class FactsDocument(TypedDict, total=False):  # Facts as JSON: what `problem` checks a loaded document against
    packages: dict[str, str]
    python: PythonFacts
    platform: PlatformFacts
    nvidia: NvidiaFacts
    jax: JaxFacts
    env: dict[str, str]
    requirements: list[Unsatisfied]
    duplicates: list[Duplicate]
    requires: dict[str, list[str]]
    origin: Origin
    installers: dict[str, str]
    requested: list[str]
    xla_flags: XlaFlagsFacts
    messages: list[Message]
    errors: list[Message]
    install: InstallFacts
    extras: dict[str, list[str]]


def _before_origin(data: dict[str, Any], mode: str) -> dict[str, Any]:
    """A 0.2.0 document said its origin in a status ("planned", shared by plans and bug reports, told apart by the
    report's mode; "hook")."""
    jax, nvidia = data.get("jax"), data.get("nvidia")
    if "origin" in data or not isinstance(jax, dict) or not isinstance(nvidia, dict):
        return data  # a document of today, or one that `problem` will reject
    planned, hooked = "planned" in (jax.get("status"), nvidia.get("status")), jax.get("status") == "hook"
    origin = ("triage" if mode == "triage" else "plan") if planned else "hook" if hooked else "live"
    jax = {**jax, "status": "unknown"} if jax.get("status") in ("planned", "hook") else jax
    nvidia = {**nvidia, "status": "ok"} if nvidia.get("status") == "planned" else nvidia
    return {**data, "jax": jax, "nvidia": nvidia, "origin": origin}
