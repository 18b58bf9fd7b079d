"""What the package does with the operating system: files (regular files only, atomic writes), BLAS threads, memory estimates."""
