"""What the package does with the operating system: files (regular files only, atomic writes,
outputs that replace no device and no other writer's file: files.py), temporary files and
folders that name their process (owned.py), SIGTERM as Ctrl-C (interrupts.py), BLAS threads,
memory estimates."""
