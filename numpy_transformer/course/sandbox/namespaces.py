"""Where a grading worker runs: in a private root of its own, where Linux allows it.

    box = isolation()          # box.level "root", "pid", "user" or "none"; box.line says which
    argv = box.command(python, root_dir, binds, worker_argv)

Level "root" (Linux with unprivileged user namespaces): the worker is started as

    unshare --user --map-root-user --mount --pid --net --fork --kill-child \
        python -I -S HARNESS/private_root.py PLAN -- python -I -B /nt/harness/worker.py ...

and private_root.py, run as a script inside the new namespaces, builds a private root in a
tmpfs before it executes the worker: read-only bind mounts of the system (/usr, of the
Python installation its standard library and programs only, every site-packages folder of
every installation it uses (a virtual environment's base included) replaced by an empty
one, NumPy alone at /nt/site), of the harness (/nt/harness) and of the part's task files
(/nt/part, read-only but for its two result files); the student's scratch copy (/nt/student)
and /tmp in one tmpfs of DISK_MB MiB, /dev/null, zero, random and urandom, a fresh /proc of
the new PID namespace; then pivot_root into it, the old root detached, every capability
dropped (no_new_privs) and RLIMIT_NPROC set. The worker sees nothing else: not the
teacher's package, the grader's temporary folder, the output files or the other copies; it
can write only its scratch copy, /tmp (DISK_MB MiB in all) and its two result files (64 MiB
each, RLIMIT_FSIZE); its network namespace has a loopback interface only, down, so no
address, the grading host's 127.0.0.1 included, can be reached. It is process 1 of its PID
namespace: it can signal no process outside, and when it ends, or when the grader kills
`unshare`, the kernel kills every process it started, double-forked daemons included.

Level "pid" (a kernel that allows user + PID namespaces but refuses the mounts): as
above without the private root (network namespace and RLIMIT_NPROC included): the worker
cannot signal the grader and leaves no process behind, but it reads and writes with the
grader's user. Level "none" (another OS, namespaces refused): the worker runs in a session
of its own, contained in nothing. `line` says which, once per grade output and in its JSON;
limits.py adds the limits of processes, memory, disk and time in force.
"""

import functools
import glob
import json
import os
import shutil
import subprocess
import sys

UNSHARE = ("--user", "--map-root-user", "--mount", "--pid", "--net", "--fork", "--kill-child")
PID_ONLY = ("--user", "--map-root-user", "--pid", "--net", "--fork", "--mount-proc",
            "--kill-child")
INSIDE = "/nt"                       # the worker's folders in the private root
DISK_MB = 256                        # the tmpfs holding all a part can write (level "root")
PROCESSES = 32                       # RLIMIT_NPROC inside the namespaces (threads count)
SCRIPT = "private_root.py"           # run inside the namespaces, from the harness copy
LINES = {"root": "sandbox: user+mount+pid+network namespaces, private root (the worker sees "
                 "only Python, NumPy, the harness and a scratch copy of its folder)",
         "pid": "sandbox: user+pid+network namespaces only ({why}): the worker cannot signal "
                "the grader and leaves no process behind, but it is not isolated from the "
                "grader's files",
         "none": "sandbox: none available ({why}): the worker is not isolated from the "
                 "grader; a submission could read or change the grader's files, signal its "
                 "processes or leave processes behind",
         "user": "sandbox: the unprivileged user {name}{pid} ({why}): the worker reads and "
                 "writes only what that user may (the grader closes its folders to it), "
                 "cannot signal the grader, and every process of that user is killed after "
                 "each part"}
USER = "NT_GRADER_USER"              # as root, the unprivileged user the workers run as
PROBE = f"import sys; sys.path.append('{INSIDE}/site'); import numpy"
LAYOUT = ("import json, os, sys, sysconfig, numpy; print(json.dumps({'prefixes': sorted({"
          "sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}), 'numpy': "
          "os.path.dirname(os.path.dirname(os.path.realpath(numpy.__file__))), 'stdlib': "
          "sysconfig.get_path('stdlib')}))")


class Sandbox:
    """How the workers of this machine run: `level`, `line` (the protections in force)."""

    def __init__(self, level, why="", tool=None, user=None, network=True):
        self.level, self.tool, self.user, self.why = level, tool, user, why
        self.network = network and tool is not None   # a network namespace of its own
        self.line = LINES[level].format(why=why, name=user and user.pw_name,
                                        pid=" in user+pid+network namespaces" if tool
                                        else "")
        if not self.network:
            self.line = self.line.replace("+network", "")

    def become(self):
        """In the worker's process before exec: the unprivileged user, where there is one."""
        if self.user is not None:
            os.setgroups([])
            os.setgid(self.user.pw_gid)
            os.setuid(self.user.pw_uid)

    def hand_over(self, shared, owned):
        """Let the user reach `shared` folders (traverse, read) and own `owned` ones."""
        if self.user is None:
            return
        for folder in shared:
            os.chmod(folder, 0o711)
        for top in owned:
            for folder, _, names in os.walk(top):
                for path in [folder, *(os.path.join(folder, n) for n in names)]:
                    os.chown(path, self.user.pw_uid, self.user.pw_gid, follow_symlinks=False)

    def sweep(self, python):
        """Kill every process of the user (kill(-1) sent as that user), where there is one."""
        if self.user is not None:
            subprocess.run([python, "-I", "-S", "-c", "import os; os.kill(-1, 9)"],
                           preexec_fn=self.become, stdin=subprocess.DEVNULL,
                           capture_output=True, timeout=60)

    def command(self, python, root_dir, binds, worker_argv):
        """argv of a worker; `binds` {inside name: (outside path, mode)}, mode False (read
        only), True (writable) or "copy" (copied into the writable tmpfs); `root_dir` an
        empty folder for the private root (level "root" only)."""
        if self.level == "none" or (self.level == "user" and self.tool is None):
            return [python, *worker_argv]
        here = os.path.join(str(binds["harness"][0]), SCRIPT)
        plan = {"root": None, "processes": PROCESSES}
        if self.level == "root":
            plan.update(root=str(root_dir), disk_mb=DISK_MB, hide=hidden_folders(python),
                        binds=system_binds(python) + [
                            [str(out), f"{INSIDE}/{name}", mode] for name, (out, mode)
                            in binds.items() if mode != "copy"],
                        copies=[[str(out), f"{INSIDE}/{name}"]
                                for name, (out, mode) in binds.items() if mode == "copy"])
        words = [w for w in (UNSHARE if self.level == "root" else PID_ONLY)
                 if self.network or w != "--net"]
        return [self.tool, *words, python, "-I", "-S", here, json.dumps(plan), "--",
                python, *worker_argv]


@functools.lru_cache(maxsize=None)
def layout(python):
    """The installation of the workers' `python`, as that interpreter reports it: its
    prefixes (a virtual environment's and its base's), its standard library and the
    site-packages folder holding NumPy."""
    done = subprocess.run([python, "-I", "-c", LAYOUT], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=120)
    if done.returncode != 0:
        said = (done.stderr.strip().splitlines() or [f"status {done.returncode}"])[-1]
        raise OSError(f"the workers' Python {python} cannot import NumPy: {said[:200]}")
    return json.loads(done.stdout)


def _installation_trees(python):
    """The folders of the workers' Python to bind: of each prefix its lib (the standard
    library, lib-dynload, the shared libraries) and the folders of the interpreter itself,
    never the prefix whole (a conda base holds envs/ and pkgs/, full of packages)."""
    found = layout(python)
    trees = [os.path.dirname(os.path.abspath(python)),
             os.path.dirname(os.path.realpath(python)), found["stdlib"]]
    for prefix in found["prefixes"]:
        trees += [os.path.join(prefix, "lib"), os.path.join(prefix, "lib64")]
    return trees


def system_binds(python):
    """[outside, inside, writable] of what any Python with NumPy needs, read-only: the
    system, the standard library (site-packages hidden: hidden_folders), NumPy alone."""
    site = layout(python)["numpy"]
    trees = ["/usr", "/bin", "/lib", "/lib64", "/lib32", "/sbin", *_installation_trees(python)]
    binds, seen = [], set()
    for tree in trees:
        if os.path.isdir(tree) and os.path.realpath(tree) not in seen:
            seen.add(os.path.realpath(tree))
            binds.append([tree, tree, False])
    binds += [[os.path.join(site, name), f"{INSIDE}/site/{name}", False]
              for name in ("numpy", "numpy.libs") if os.path.isdir(os.path.join(site, name))]
    return binds + [[f, f, False] for f in ("/etc/ld.so.cache",) if os.path.isfile(f)]


def hidden_folders(python):
    """Folders replaced by empty ones: every site-packages or dist-packages folder of every
    bound tree (the workers' Python, its base installation, the system's: a teacher may have
    installed the reference into any of them), the grader's own, and the teacher's package
    wherever it is."""
    import site
    import sysconfig
    found = set(site.getsitepackages() + [sysconfig.get_paths()["purelib"]])
    for tree in ["/usr/lib", "/usr/lib64", "/usr/local/lib", *_installation_trees(python)]:
        for pattern in ("python3*/*-packages", "*-packages"):
            found.update(glob.glob(os.path.join(tree, pattern)))
    found.add(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    return sorted({form for f in found if os.path.isdir(f)            # as given and resolved
                   for form in (os.path.abspath(f), os.path.realpath(f))})


def _probe(tool, words, python, user=None, network=True):
    """'' when `python -c ''` runs under these unshare words (and in a private root), or why
    not."""
    import tempfile
    with tempfile.TemporaryDirectory(prefix="nt-sandbox-probe-") as tmp:
        harness = os.path.join(tmp, "harness")
        os.mkdir(harness)
        shutil.copyfile(os.path.join(os.path.dirname(os.path.abspath(__file__)), SCRIPT),
                        os.path.join(harness, SCRIPT))
        os.mkdir(os.path.join(tmp, "root"))
        box = Sandbox("root" if words == UNSHARE else ("user" if user else "pid"),
                      tool=tool, user=user, network=network)
        box.hand_over([tmp, harness], [])
        argv = box.command(python, os.path.join(tmp, "root"), {"harness": (harness, False)},
                           ["-I", "-c", PROBE])
        try:
            done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True,
                                  timeout=60, preexec_fn=box.become)
        except (OSError, subprocess.TimeoutExpired) as err:
            return f"unshare failed: {err}"
    said = done.stderr.decode(errors="replace").strip().splitlines()
    return "" if done.returncode == 0 else ("unshare refused: " + (
        said[-1][:200] if said else f"status {done.returncode}"))


@functools.lru_cache(maxsize=None)
def isolation(python=None):
    """The Sandbox of this machine, probed once per process."""
    tool, python = shutil.which("unshare"), python or sys.executable
    if not sys.platform.startswith("linux") or tool is None:
        return as_user(Sandbox("none", "unshare (util-linux) is not available"), python)
    refused = _probe(tool, UNSHARE, python)
    if not refused:
        return Sandbox("root", tool=tool)
    if not _probe(tool, UNSHARE, python, network=False):     # all but the network namespace
        return Sandbox("root", f"network namespace refused: {refused}", tool, network=False)
    for network in (True, False):
        if not _probe(tool, PID_ONLY, python, network=network):
            return as_user(Sandbox("pid", f"mount namespace refused: {refused}", tool,
                                   network=network), python)
    return as_user(Sandbox("none", refused), python)


def as_user(box, python):
    """`box`, or, when running as root with NT_GRADER_USER naming an unprivileged user who
    can run Python and NumPy, the Sandbox running the workers as that user."""
    import pwd
    name = os.environ.get(USER, "")
    if not name or os.geteuid() != 0:
        return box
    try:
        user = pwd.getpwnam(name)
    except KeyError:
        return Sandbox(box.level, f"{box.why}; no user {name}", box.tool, network=box.network)
    for tool in ([box.tool] if box.tool else []) + [None]:
        if user.pw_uid != 0 and not _probe(tool, PID_ONLY, python, user, box.network):
            return Sandbox("user", box.why, tool, user, network=box.network)
    return Sandbox(box.level, f"{box.why}; the user {name} cannot run Python here", box.tool,
                   network=box.network)
