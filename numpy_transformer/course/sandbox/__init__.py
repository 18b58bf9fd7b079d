"""Where a student's code runs: one worker process per part (runner.py, worker.py), in a
private root of its own where Linux allows it (namespaces.py, private_root.py), with the
part's processes and memory capped together (limits.py). SECURITY.md says what it holds."""
