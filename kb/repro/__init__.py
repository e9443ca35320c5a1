"""Reproductions, re-run: `kb repro` installs each pinned tool release into a per-user cache
(install.py), runs the entry's input through it in a temporary folder and compares what it
printed with the entry's literal and the recorded output (run.py); `--write` records a new run in
the entry file (write.py). The model and its lint rules are in kb.records.reproduction; the
pins (tools.lock) and the inputs (inputs/) sit beside this package and travel in the wheel."""
