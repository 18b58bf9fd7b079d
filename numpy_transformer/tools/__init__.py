"""Tools beside the library: the `gradcheck` command's report and the README runs' bookkeeping."""
