"""The CLI's logits of a token sequence, the reference the server tests compare with: every
row of `next --all-positions --dump-logits` (row i predicts token i + 1), float32 as written."""
import os
import subprocess
import tempfile

import numpy as np


def cli_logits(binary, model, tokens):
    with tempfile.TemporaryDirectory() as tmp:
        npy = os.path.join(tmp, "l.npy")
        out = subprocess.run([binary, "next", "--model", model, "--tokens",
                              ",".join(map(str, tokens)), "--all-positions", "--dump-logits", npy,
                              "--threads", "1"], capture_output=True, text=True)
        if out.returncode != 0:
            raise RuntimeError(out.stderr)
        return np.load(npy)
