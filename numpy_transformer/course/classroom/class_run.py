"""Grading a class: many student copies, `jobs` at a time, and the class's JSON.

    outcomes(names, dirs, jobs=1, parts=None, timeout=60.0, teacher=False)
        yields (name, GradeReport or why it was not graded), in the order of `dirs`
    class_json(graded, parts, similar=None)   -> the dict written as class.json
    json_beside(csv_path)                      -> class.csv's class.json

With jobs=1 each folder is graded in this process, in turn. With jobs=N > 1, N
grader processes (multiprocessing's "spawn": fresh interpreters that share
nothing with this one) take folders from a queue; each grades a folder with
grade.grade exactly as this process would, so every part still runs in its own
sandboxed worker with the inputs drawn from this process's grading secret
(parts.SECRET, or the teacher's seed: one secret for the whole class), and sends
back the GradeReport (pickled: the same object, to the last digit). The outcomes come out in the folders' order, each as soon as it
and every folder before it are graded, so the tables, the CSV rows and class.json
are the same as with jobs=1.

Ctrl-C (SIGINT): the grader processes get it too (they share the terminal's
process group; when only this process got it, it is passed on to them). Each
one stops its part's worker (runner.py kills the worker's whole session) and
ends; this process waits for them, then raises KeyboardInterrupt, before any
output file is written. A grader process that dies costs its folders only: they
are reported as not graded, with the exit status.

Fresh interpreters import the calling script again: a script of your own that
grades with jobs > 1 must do so under `if __name__ == "__main__":` (multiprocessing's
rule; `python -m numpy_transformer` and the `numpy-transformer` command are safe).

Where the workers run as one unprivileged user (sandbox level "user": every
process of that user is killed after each part), two graders would kill each
other's workers, so jobs > 1 is refused there.
"""

import multiprocessing
import os
import queue
import signal
import time
from pathlib import Path

from ...errors import InputError

WAIT = 0.5           # seconds between looks at the grader processes while waiting
STOP_GRACE = 20.0    # seconds the grader processes may take, together, to stop after Ctrl-C


def grade_one(name, directory, alone=False, **grading):
    """The GradeReport of one folder (grade.grade with the keywords `grading`), or why it
    could not be graded (a string naming the folder by `name`, never by its path). With
    `alone`, errors are raised instead."""
    from .grade import grade
    try:
        return grade(directory, **grading)
    except Exception as err:                                       # noqa: BLE001
        if alone:
            raise
        why = str(err) if isinstance(err, InputError) else f"{type(err).__name__}: {err}"
        return without_path(why, directory, name)


def without_path(message, directory, name):
    """`message` with the folder's path (as given, or absolute) replaced by its short name."""
    for path in sorted({str(Path(directory).resolve()), str(directory)}, key=len, reverse=True):
        message = message.replace(path, name)
    return message


def outcomes(names, dirs, jobs=1, **grading):
    """(name, GradeReport or reason) per folder, in the order of `dirs` (see the module);
    `grading`: grade.grade's keywords (parts, timeout, teacher, seed, ...). Every grader
    process draws the inputs with the same secret: the seed given, or this process's."""
    from ..grading.scoring import SECRET
    options = {**grading, "seed": SECRET if grading.get("seed") is None else grading["seed"]}
    if jobs == 1 or len(dirs) == 1:
        for name, directory in zip(names, dirs):
            yield name, grade_one(name, directory, alone=len(dirs) == 1, **options)
        return
    check_jobs(jobs)
    yield from _in_parallel(names, dirs, min(jobs, len(dirs)), options)


def check_jobs(jobs):
    """InputError when `jobs` is not a positive number, or > 1 where workers share a user."""
    if not isinstance(jobs, int) or jobs < 1:
        raise InputError(f"--jobs: expected a whole number of at least 1, got {jobs!r}")
    from ..sandbox.namespaces import isolation
    if jobs > 1 and isolation().level == "user":
        raise InputError(f"--jobs {jobs}: the workers run as the one user of NT_GRADER_USER, "
                         "and each part's end kills every process of that user, so copies "
                         "cannot be graded in parallel here; use --jobs 1")


def _serve(tasks, results, options):
    """A grader process: grade folders from `tasks` until None; send (index, outcome).
    Ctrl-C is honoured even where this process was started ignoring SIGINT (a shell's
    background job): the class run passes it on to stop the graders (`_stop`)."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        while True:
            item = tasks.get()
            if item is None:
                return
            index, name, directory = item
            results.put((index, grade_one(name, directory, **options)))
    except KeyboardInterrupt:          # Ctrl-C: the worker is already stopped (runner.py)
        return


def _in_parallel(names, dirs, jobs, options):
    context = multiprocessing.get_context("spawn")
    tasks, results = context.Queue(), context.Queue()
    for item in zip(range(len(dirs)), names, dirs):
        tasks.put(item)
    for _ in range(jobs):
        tasks.put(None)
    graders = [context.Process(target=_serve, args=(tasks, results, options), daemon=True)
               for _ in range(jobs)]
    for grader in graders:
        grader.start()
    done, shown = {}, 0
    try:
        while shown < len(dirs):
            try:
                index, outcome = results.get(timeout=WAIT)
                done[index] = outcome
            except queue.Empty:
                if not any(g.is_alive() for g in graders):
                    _lost(done, names, graders, results)
            while shown in done:
                yield names[shown], done.pop(shown)
                shown += 1
    except BaseException:              # Ctrl-C, or the caller stopped early
        _stop(graders)
        raise
    for grader in graders:
        grader.join()


def _lost(done, names, graders, results):
    """Every grader process has ended: the folders without a result were lost with one."""
    try:
        while True:                    # what was sent just before the end
            index, outcome = results.get(timeout=WAIT)
            done[index] = outcome
    except queue.Empty:
        pass
    codes = sorted({g.exitcode for g in graders if g.exitcode})
    why = (f"its grader process ended with status {', '.join(map(str, codes))} before "
           "grading it" if codes else "no grader process graded it")
    for index in range(len(names)):
        done.setdefault(index, why)


def _stop(graders):
    """Pass Ctrl-C on to the grader processes, give them STOP_GRACE seconds in all (not
    each) to stop their workers, then end whichever is left."""
    for grader in graders:
        if grader.is_alive():
            try:
                os.kill(grader.pid, signal.SIGINT)
            except OSError:            # ended meanwhile
                pass
    deadline = time.monotonic() + STOP_GRACE
    for grader in graders:
        grader.join(max(0.0, deadline - time.monotonic()))
    for grader in graders:
        if grader.is_alive():
            grader.kill()
            grader.join()


def json_beside(csv_path):
    """The class JSON's path: the CSV's with the suffix .json (class.csv -> class.json)."""
    root, ext = os.path.splitext(str(csv_path))
    return (root if ext.lower() == ".csv" else str(csv_path)) + ".json"


def class_files(csv_path, report):
    """{what: file} a class run writes besides the CSV, for the command line's checks of its
    output files (none is overwritten without --overwrite)."""
    files = {}
    if csv_path:
        files["--csv's JSON"] = json_beside(csv_path)
    if report:
        if os.path.exists(report) and not os.path.isdir(report):
            raise InputError(f"--report: expected a folder (new, or one to write the summary "
                             f"into), got the file {str(report)!r}")
        files.update({f"--report's {name}": os.path.join(report, name)
                      for name in ("index.html", "scores.png", "pass_rates.png")})
    return files


def class_json(graded, parts, similar=None):
    """class.json: every folder with every part's checks and messages, and the sandbox line
    (the first graded folder's: one grader, one machine). `similar`: the similarity pairs,
    where they were computed (teacher only)."""
    reports = [r for _, r in graded if not isinstance(r, str)]
    folders = []
    for name, report in graded:
        if isinstance(report, str):
            folders.append({"student": name, "graded": False, "message": report})
        else:
            folders.append({"student": name, "graded": True, **report.to_dict(),
                            "directory": name})
    data = {"format": 1, "parts": list(parts), "sandbox": reports[0].warning if reports else "",
            "students": folders}
    if similar is not None:
        data["similar_pairs"] = similar
    return data
