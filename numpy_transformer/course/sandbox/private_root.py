"""Inside the worker's namespaces (namespaces.py): build the private root, set the limits, run
the worker.

    python -I -S HARNESS/private_root.py PLAN -- python -I -B /nt/harness/worker.py ...

runs as process 1 of the new user, mount, PID and network namespaces that `unshare` made.
PLAN (JSON) holds `root` (an empty folder, or null where the kernel refuses mounts: then
only the limits are set), `binds` ([outside, inside, writable]), `copies` ([outside,
inside]: folders copied into the writable tmpfs), `hide` (folders replaced by empty ones),
`disk_mb` and `processes`.

The private root is a tmpfs (16 MiB, read-only once built) holding read-only binds of the
system and of the Python installation (every site-packages folder hidden; NumPy alone at
/nt/site), the harness (/nt/harness) and the part's task folder (/nt/part, read-only but for
its two result files, each a writable bind of one file). Everything else a part can write
lives in one tmpfs of `disk_mb` MiB: its scratch copy (/nt/student, copied in, not bound:
the grader's disk is never written) and /tmp. Then /dev/null, zero, random and urandom, a
fresh /proc, pivot_root into it, the old root detached, RLIMIT_NPROC set to `processes`
(counted in this user namespace alone since Linux 5.14; not binding where the grader is the
real root, where namespaces.py's cgroup takes over), every capability dropped, no_new_privs,
and exec of the worker. The network namespace holds only a loopback interface, down: no
address at all can be reached, the grading host's 127.0.0.1 included.
"""

import ctypes
import json
import os
import platform
import resource
import shutil
import sys

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT = 1, 2, 4, 8, 32
MS_NOATIME, MS_NODIRATIME, MS_BIND, MS_REC, MS_PRIVATE = 1024, 2048, 4096, 16384, 1 << 18
MS_RELATIME, MNT_DETACH, ST_RELATIME = 1 << 21, 2, 4096
PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "arm64": 41, "riscv64": 41, "ppc64le": 203,
              "s390x": 217}
WRITABLE = "/nt/rw"            # the size-limited tmpfs, while the root is built


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
        if not os.path.exists(target):
            open(target, "a").close()
    _mount(call, outside, target, None, MS_BIND | MS_REC)
    kept = os.statvfs(outside).f_flag
    flags = (MS_REMOUNT | MS_BIND | MS_NOSUID | (0 if writable else MS_RDONLY)
             | (kept & (MS_NODEV | MS_NOEXEC | MS_NOATIME | MS_NODIRATIME))
             | (MS_RELATIME if kept & ST_RELATIME else 0))
    _mount(call, None, target, None, flags)


def _writable_space(call, root, disk_mb):
    """One tmpfs of `disk_mb` MiB seen at root/nt/student and root/tmp (bound from it, then
    its own mount point detached): all a part can write, together, at most `disk_mb`."""
    space = root + WRITABLE
    os.makedirs(space)
    _mount(call, "tmpfs", space, "tmpfs", MS_NOSUID | MS_NODEV,
           f"size={int(disk_mb)}m,mode=755")
    os.makedirs(space + "/student")
    os.makedirs(space + "/tmp")
    os.chmod(space + "/tmp", 0o1777)
    for name, inside in (("tmp", "/tmp"), ("student", "/nt/student")):
        os.makedirs(root + inside)
        _mount(call, space + "/" + name, root + inside, None, MS_BIND)
    call("umount2", space.encode(), MNT_DETACH)
    os.rmdir(space)


def build_root(plan):
    """Mount the private root described by `plan` and pivot into it."""
    libc, call = _libc()
    root = plan["root"]
    _mount(call, None, "/", None, MS_REC | MS_PRIVATE)
    _mount(call, "tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "size=16m,mode=755")
    _writable_space(call, root, plan["disk_mb"])  # first: a Python (a venv) under /tmp is
    for outside, inside, writable in plan["binds"]:           # bound inside its /tmp
        if os.path.islink(outside) and os.path.dirname(outside) == "/":
            os.symlink(os.readlink(outside), root + inside)       # /bin -> usr/bin
        elif os.path.exists(outside) and not writable:
            _bind(call, root, outside, inside, writable)
    for folder in plan["hide"]:
        if os.path.isdir(root + folder):
            _mount(call, "tmpfs", root + folder, "tmpfs", MS_NOSUID | MS_NODEV | MS_RDONLY,
                   "size=4k,mode=755")
    for outside, inside in plan["copies"]:
        shutil.copytree(outside, root + inside, dirs_exist_ok=True)
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
    """`private_root.py PLAN -- COMMAND...`: build the root (where PLAN has one), set the
    process limit, drop privileges, run COMMAND."""
    plan, command = json.loads(argv[0]), argv[2:]
    if plan.get("root"):
        libc = build_root(plan)
        os.chdir("/nt/student" if os.path.isdir("/nt/student") else "/")
        drop_capabilities(libc)
    if plan.get("processes"):
        limit = int(plan["processes"])
        resource.setrlimit(resource.RLIMIT_NPROC, (limit, limit))
    os.execv(command[0], command)


if __name__ == "__main__":
    enter(sys.argv[1:])
