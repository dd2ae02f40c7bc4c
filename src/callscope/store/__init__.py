"""The run store: one SQLite file per run directory, and the records it keeps."""
