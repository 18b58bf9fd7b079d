"""The limits of a part's processes taken together (a cgroup where the machine gives one),
and the words that say every limit in force.

    groups = part_groups()          # cgroups of this machine for the parts, or why there are none
    group = groups.make(memory_mb)  # before a part; group.join() in the worker before exec
    group.close()                   # after it: {"oom_kills": n, "forks_refused": n}
    limits_line(box, groups, timeout, total_timeout, memory_mb)   # "limits: ..."

A part's memory limit is RLIMIT_AS, per process, and its process limit RLIMIT_NPROC
(private_root.py, in the part's user namespace). Neither bounds the part as a whole where the
grader is the real root (the kernel exempts root's processes from RLIMIT_NPROC), and
RLIMIT_AS bounds only one process: three children of 1.2 GB each would run under a 2 GiB
limit. So where the grader may make cgroups (cgroup v1's memory and pids hierarchies, or a
cgroup v2 folder whose parent delegates both controllers: as root, or under a systemd
delegation), each part runs in a cgroup of its own with `memory_mb` MiB for all its
processes together (tmpfs files included) and PROCESSES processes (threads count). Where it
may not, the line says so and what bounds the total instead (processes x memory per
process). The probe makes a cgroup, puts a short-lived Python into it and removes it.
"""

import functools
import itertools
import os
import subprocess
import sys
import time

from .namespaces import DISK_MB, PROCESSES

CGROUP = "/sys/fs/cgroup"
MAX_RESULT_MB = 64                  # RLIMIT_FSIZE: the largest file a worker may write
_names = itertools.count()


def _own_folders():
    """{controller: this process's cgroup folder} for memory and pids (v1), or {"v2": folder}."""
    with open("/proc/self/cgroup", encoding="utf-8") as file:
        lines = [line.rstrip("\n").split(":", 2) for line in file]
    found = {}
    for _, controllers, path in lines:
        for name in controllers.split(","):
            if name in ("memory", "pids"):
                mount = os.path.join(CGROUP, name)
                nested = os.path.join(mount, path.lstrip("/"))
                found[name] = nested if os.path.isdir(nested) else mount
    if not found and os.path.isfile(os.path.join(CGROUP, "cgroup.controllers")):
        path = next(p for _, c, p in lines if c == "")
        found["v2"] = os.path.join(CGROUP, path.lstrip("/"))
    return found


class PartGroup:
    """The cgroup folder(s) of one part: memory and process limits of all its processes."""

    FILES = {"memory": ("memory.limit_in_bytes", "memory.oom_control", "oom_kill"),
             "pids": ("pids.max", "pids.events", "max"),
             "v2": (("memory.max", "pids.max"), "memory.events", "oom_kill")}

    def __init__(self, parents, memory_mb):
        self.folders = []
        name = f"nt-part-{os.getpid()}-{next(_names)}"
        try:
            for kind, parent in parents.items():
                folder = os.path.join(parent, name)
                os.mkdir(folder)
                self.folders.append((kind, folder))
                limits = self.FILES[kind][0]
                for limit in (limits if isinstance(limits, tuple) else (limits,)):
                    value = memory_mb << 20 if limit.startswith("memory") else PROCESSES
                    with open(os.path.join(folder, limit), "w", encoding="utf-8") as file:
                        file.write(str(value))
        except OSError:
            self.close()
            raise

    def join(self):
        """In the worker's process, before exec: enter every folder of the group."""
        for _, folder in self.folders:
            with open(os.path.join(folder, "cgroup.procs"), "w", encoding="utf-8") as file:
                file.write(str(os.getpid()))

    def _count(self, kind, folder, file_index=1):
        name, key = self.FILES[kind][file_index], self.FILES[kind][2]
        try:
            with open(os.path.join(folder, name), encoding="utf-8") as file:
                words = dict(line.split()[:2] for line in file if len(line.split()) >= 2)
            return int(words.get(key, 0))
        except (OSError, ValueError):
            return 0

    def close(self):
        """Remove the folders (their processes are dead or dying); what the limits stopped."""
        seen = {"oom_kills": 0, "forks_refused": 0}
        for kind, folder in self.folders:
            if kind in ("memory", "v2"):
                seen["oom_kills"] += self._count(kind, folder)
            if kind in ("pids", "v2"):
                seen["forks_refused"] += self._count("pids", folder)
            for _ in range(100):                 # the killed processes take a moment to go
                try:
                    os.rmdir(folder)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.05)
        self.folders = []
        return seen


class PartGroups:
    """The cgroups this machine lets the grader make: `parents` ({} where none) and `why`."""

    def __init__(self, parents, why=""):
        self.parents, self.why = parents, why

    def make(self, memory_mb):
        return PartGroup(self.parents, memory_mb) if self.parents else None


def _remove_stale(parents):
    """Remove the part cgroups a grader killed before it could remove them (its process is
    gone; an empty cgroup is removed, one still holding a process is refused: kept)."""
    for parent in parents.values():
        for name in os.listdir(parent):
            pid = name.split("-")[2] if name.startswith("nt-part-") else ""
            if pid.isdigit() and not os.path.exists(f"/proc/{pid}"):
                try:
                    os.rmdir(os.path.join(parent, name))
                except OSError:
                    pass


@functools.lru_cache(maxsize=None)
def part_groups(python=None):
    """The PartGroups of this machine, probed once per process (Linux only)."""
    if not sys.platform.startswith("linux"):
        return PartGroups({}, "no cgroups outside Linux")
    try:
        parents = _own_folders()
        if not parents or ("v2" not in parents and len(parents) < 2):
            return PartGroups({}, "no cgroup memory and pids controllers here")
        _remove_stale(parents)
        group = PartGroup(parents, 256)
        try:
            done = subprocess.run([python or sys.executable, "-I", "-S", "-c", "pass"],
                                  preexec_fn=group.join, capture_output=True, timeout=60)
        finally:
            group.close()
        if done.returncode != 0:
            return PartGroups({}, "a process cannot enter a cgroup here")
    except (OSError, StopIteration, subprocess.SubprocessError) as err:
        return PartGroups({}, f"no cgroup may be made here: {err}"[:200])
    return PartGroups(parents)


def limits_line(box, groups, timeout, total_timeout, memory_mb):
    """The limits in force, in words (after the sandbox line): network, processes, memory,
    disk, time."""
    network = ("no network (a network namespace of its own)" if box.network
               else f"network not closed (no network namespace: {box.why or box.level})")
    nproc = box.level == "user" or (box.level in ("root", "pid") and os.geteuid() != 0)
    if groups.parents:
        processes = f"{PROCESSES} processes (a cgroup)"
        memory = f"{memory_mb} MiB of memory for all its processes (a cgroup)"
    else:
        processes = (f"{PROCESSES} processes (RLIMIT_NPROC; no cgroup: {groups.why})" if nproc
                     else f"processes not limited (no cgroup: {groups.why}; RLIMIT_NPROC "
                          "does not bind the grader's user here)")
        memory = (f"{memory_mb} MiB of memory per process (RLIMIT_AS), "
                  + (f"{PROCESSES} x {memory_mb} MiB in all" if nproc else "not in all"))
    disk = (f"{DISK_MB} MiB of disk for its copy and /tmp (a tmpfs; its two result files "
            f"{MAX_RESULT_MB} MiB each)" if box.level == "root"
            else f"disk {MAX_RESULT_MB} MiB per file, not in all (RLIMIT_FSIZE; no private "
                 "root)")
    return (f"limits per part: {network}, {processes}, {memory}, {disk}, {timeout:g} s of time; "
            f"{total_timeout:g} s for the whole submission")
