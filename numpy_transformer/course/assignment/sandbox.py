"""Where a grading worker runs: in a private root of its own, where Linux allows it.

    box = isolation()          # box.level "root", "pid" or "none"; box.line says which
    argv = box.command(python, root_dir, binds, worker_argv)

Level "root" (Linux with unprivileged user namespaces): the worker is started as

    unshare --user --map-root-user --mount --pid --fork --kill-child \
        python -I -S HARNESS/sandbox.py PLAN -- python -I -B /nt/harness/worker.py ...

and this file, run as a script inside the new namespaces, builds a private root in a
tmpfs before it executes the worker: read-only bind mounts of the system (/usr, the
Python installation with every site-packages folder replaced by an empty one, NumPy
alone at /nt/site), of the harness (/nt/harness) and of the part's task files (/nt/part,
writable for the results), the student's scratch copy read-write (/nt/student), /dev/null,
zero, random and urandom, a fresh /proc of the new PID namespace and a small /tmp; then
pivot_root into it, the old root detached, and every capability dropped (no_new_privs).
The worker sees nothing else: not the teacher's package, the grader's temporary folder,
the output files or the other copies, and it can write only its scratch copy, its part's
folder and /tmp. It is process 1 of its PID namespace: it can signal no process outside,
and when it ends, or when the grader kills `unshare`, the kernel kills every process it
started, double-forked daemons included.

Level "pid" (a kernel that allows user + PID namespaces but refuses the mounts): as
above without the private root: the worker cannot signal the grader and leaves no
process behind, but it reads and writes with the grader's user. Level "none" (another
OS, namespaces refused): the worker runs in a session of its own, contained in nothing.
`line` says which, once per grade output and in its JSON.
"""

import ctypes
import functools
import glob
import json
import os
import platform
import shutil
import subprocess
import sys

UNSHARE = ("--user", "--map-root-user", "--mount", "--pid", "--fork", "--kill-child")
PID_ONLY = ("--user", "--map-root-user", "--pid", "--fork", "--mount-proc", "--kill-child")
INSIDE = "/nt"                       # the worker's folders in the private root
LINES = {"root": "sandbox: user+mount+pid namespaces, private root (the worker sees only "
                 "Python, NumPy, the harness and a scratch copy of its folder)",
         "pid": "sandbox: user+pid namespaces only ({why}): the worker cannot signal the "
                "grader and leaves no process behind, but it is not isolated from the "
                "grader's files",
         "none": "sandbox: none available ({why}): the worker is not isolated from the "
                 "grader; a submission could read or change the grader's files, signal its "
                 "processes or leave processes behind",
         "user": "sandbox: the unprivileged user {name}{pid} ({why}): the worker reads and "
                 "writes only what that user may (the grader closes its folders to it), "
                 "cannot signal the grader, and every process of that user is killed after "
                 "each part"}
USER = "NT_GRADER_USER"              # as root, the unprivileged user the workers run as
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT = 1, 2, 4, 8, 32
MS_NOATIME, MS_NODIRATIME, MS_BIND, MS_REC, MS_PRIVATE = 1024, 2048, 4096, 16384, 1 << 18
MS_RELATIME, MNT_DETACH, ST_RELATIME = 1 << 21, 2, 4096
PROBE = f"import sys; sys.path.append('{INSIDE}/site'); import numpy"
PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "arm64": 41, "riscv64": 41, "ppc64le": 203,
              "s390x": 217}


class Sandbox:
    """How the workers of this machine run: `level`, `line` (the protections in force)."""

    def __init__(self, level, why="", tool=None, user=None):
        self.level, self.tool, self.user, self.why = level, tool, user, why
        self.line = LINES[level].format(why=why, name=user and user.pw_name,
                                        pid=" in user+pid namespaces" if tool else "")

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
        """argv of a worker; `binds` {inside name: (outside path, writable)}, `root_dir` an
        empty folder for the private root (level "root" only)."""
        if self.level == "none" or (self.level == "user" and self.tool is None):
            return [python, *worker_argv]
        if self.level in ("pid", "user"):
            return [self.tool, *PID_ONLY, python, *worker_argv]
        plan = {"root": str(root_dir), "binds": system_binds(python) + [
            [str(out), f"{INSIDE}/{name}", writable] for name, (out, writable) in binds.items()],
            "hide": hidden_folders(python)}
        here = os.path.join(str(binds["harness"][0]), "sandbox.py")
        return [self.tool, *UNSHARE, python, "-I", "-S", here, json.dumps(plan), "--",
                python, *worker_argv]


def system_binds(python):
    """[outside, inside, writable] of what any Python with NumPy needs, read-only."""
    import numpy
    site = os.path.dirname(os.path.dirname(os.path.realpath(numpy.__file__)))
    trees = ["/usr", "/bin", "/lib", "/lib64", "/lib32", "/sbin", sys.base_prefix, sys.prefix,
             os.path.dirname(os.path.dirname(os.path.realpath(python)))]
    binds, seen = [], set()
    for tree in trees:
        if os.path.isdir(tree) and os.path.realpath(tree) not in seen:
            seen.add(os.path.realpath(tree))
            binds.append([tree, tree, False])
    binds += [[os.path.join(site, name), f"{INSIDE}/site/{name}", False]
              for name in ("numpy", "numpy.libs") if os.path.isdir(os.path.join(site, name))]
    return binds + [[f, f, False] for f in ("/etc/ld.so.cache",) if os.path.isfile(f)]


def hidden_folders(python):
    """Folders replaced by empty ones: every site-packages (the teacher's package may be
    installed there), and the teacher's package wherever it is."""
    import site
    import sysconfig
    found = set(site.getsitepackages() + [sysconfig.get_paths()["purelib"]])
    for pattern in ("/usr/lib/python3*/*-packages", "/usr/local/lib/python3*/*-packages",
                    os.path.join(sys.prefix, "lib", "python3*", "site-packages")):
        found.update(glob.glob(pattern))
    found.add(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    return sorted({form for f in found if os.path.isdir(f)            # as given and resolved
                   for form in (os.path.abspath(f), os.path.realpath(f))})


def _probe(tool, words, python, user=None):
    """'' when `python -c ''` runs under these unshare words (and in a private root), or why
    not."""
    import tempfile
    with tempfile.TemporaryDirectory(prefix="nt-sandbox-probe-") as tmp:
        harness = os.path.join(tmp, "harness")
        os.mkdir(harness)
        shutil.copyfile(os.path.abspath(__file__), os.path.join(harness, "sandbox.py"))
        os.mkdir(os.path.join(tmp, "root"))
        box = Sandbox("root" if words == UNSHARE else ("user" if user else "pid"),
                      tool=tool, user=user)
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
    if not _probe(tool, PID_ONLY, python):
        return as_user(Sandbox("pid", f"mount namespace refused: {refused}", tool), python)
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
        return Sandbox(box.level, f"{box.why}; no user {name}", box.tool)
    for tool in ([box.tool] if box.tool else []) + [None]:
        if user.pw_uid != 0 and not _probe(tool, PID_ONLY, python, user):
            return Sandbox("user", box.why, tool, user)
    return Sandbox(box.level, f"{box.why}; the user {name} cannot run Python here", box.tool)


# ----- inside the namespaces: build the private root, then run the worker -------------


def _libc():
    libc = ctypes.CDLL(None, use_errno=True)

    def call(name, *args):
        if getattr(libc, name)(*args) != 0:
            errno = ctypes.get_errno()
            raise OSError(errno, f"{name}{args[:2]}: {os.strerror(errno)}")
    return libc, call


def _mount(call, source, target, fstype, flags, data=None):
    call("mount", *(None if s is None else s.encode() for s in (source, target, fstype)),
         ctypes.c_ulong(flags), None if data is None else data.encode())


def _bind(call, root, outside, inside, writable):
    """Bind `outside` at root+inside, read-only unless `writable` (keeping the flags the
    kernel locks: nosuid, nodev, noexec, atime)."""
    target = root + inside
    if os.path.isdir(outside):
        os.makedirs(target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        open(target, "a").close()
    _mount(call, outside, target, None, MS_BIND | MS_REC)
    kept = os.statvfs(outside).f_flag
    flags = (MS_REMOUNT | MS_BIND | MS_NOSUID | (0 if writable else MS_RDONLY)
             | (kept & (MS_NODEV | MS_NOEXEC | MS_NOATIME | MS_NODIRATIME))
             | (MS_RELATIME if kept & ST_RELATIME else 0))
    _mount(call, None, target, None, flags)


def build_root(plan):
    """Mount the private root described by `plan` and pivot into it."""
    libc, call = _libc()
    root = plan["root"]
    _mount(call, None, "/", None, MS_REC | MS_PRIVATE)
    _mount(call, "tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "size=16m,mode=755")
    os.makedirs(root + "/tmp")          # first: a Python (a venv) under /tmp is bound inside it
    _mount(call, "tmpfs", root + "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=64m,mode=1777")
    for outside, inside, writable in plan["binds"]:
        if os.path.islink(outside) and os.path.dirname(outside) == "/":
            os.symlink(os.readlink(outside), root + inside)       # /bin -> usr/bin
        elif os.path.exists(outside) and not writable:
            _bind(call, root, outside, inside, writable)
    for folder in plan["hide"]:
        if os.path.isdir(root + folder):
            _mount(call, "tmpfs", root + folder, "tmpfs", MS_NOSUID | MS_NODEV | MS_RDONLY,
                   "size=4k,mode=755")
    for outside, inside, writable in plan["binds"]:
        if writable:
            _bind(call, root, outside, inside, writable)
    for device in ("null", "zero", "random", "urandom"):
        _bind(call, root, f"/dev/{device}", f"/dev/{device}", True)
    os.makedirs(root + "/proc")
    _mount(call, "proc", root + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    os.chdir(root)
    number = PIVOT_ROOT.get(platform.machine())
    if number is None or libc.syscall(number, b".", b".") != 0:
        raise OSError(ctypes.get_errno(), "pivot_root failed")
    call("umount2", b".", MNT_DETACH)
    os.chdir("/")
    _mount(call, None, "/", None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
    return libc


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


def drop_capabilities(libc):
    """No capability left, none regained by exec (bounding set empty, no_new_privs)."""
    for cap in range(64):
        libc.prctl(24, cap, 0, 0, 0)                 # PR_CAPBSET_DROP
    libc.prctl(47, 4, 0, 0, 0)                       # PR_CAP_AMBIENT_CLEAR_ALL
    data = (ctypes.c_uint32 * 6)()
    if libc.capset(ctypes.byref(_CapHeader(0x20080522, 0)), data) != 0:
        raise OSError(ctypes.get_errno(), "capset failed")
    if libc.prctl(38, 1, 0, 0, 0) != 0:              # PR_SET_NO_NEW_PRIVS
        raise OSError(ctypes.get_errno(), "no_new_privs failed")


def enter(argv):
    """`sandbox.py PLAN -- COMMAND...`: build the root, drop privileges, run COMMAND."""
    plan, command = json.loads(argv[0]), argv[2:]
    libc = build_root(plan)
    os.chdir(f"{INSIDE}/student" if os.path.isdir(f"{INSIDE}/student") else "/")
    drop_capabilities(libc)
    os.execv(command[0], command)


if __name__ == "__main__":
    enter(sys.argv[1:])
