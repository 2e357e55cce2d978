"""`make gpu-smoke` in its CPU mode: what CI can run of the GPU smoke (benchmarks/gpu_smoke.py)."""
from __future__ import annotations

import subprocess
import sys

from conftest import ROOT


def test_gpu_smoke_cpu_mode_passes_and_says_what_it_skipped():
    """The CPU mode trains a bf16-stored checkpoint that learns, scores it in bf16 and trains tiny then bf16 in one
    process (PASS each); the CUDA comparisons and the FSDP step say SKIP with the reason; exit 0, a closing PASS."""
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks/gpu_smoke.py"), "--cpu"], capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    lines = {l.split()[1].rstrip(":"): l.split()[0] for l in done.stdout.splitlines()
             if l.split() and l.split()[0] in ("PASS", "FAIL", "SKIP")}
    assert lines == {"tiny-rm": "SKIP", "tiny-judge": "SKIP", "bf16-learns": "PASS", "bf16-scores": "PASS",
                     "fsdp-resume": "SKIP", "tiny-then-bf16": "PASS"}
    assert done.stdout.splitlines()[-1].startswith("gpu smoke: PASS")
