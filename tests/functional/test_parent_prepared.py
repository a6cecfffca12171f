"""While the preflight waits for the parked child's `import torch`, the parent imports the run's own machinery,
so that it is not imported after the answer, on the way to the first stage."""

from __future__ import annotations

import subprocess
import sys

CODE = """
import sys
from rigcheck.engine.run.warm_pool import adopt_parked, park_early, parked_answer
before = "rigcheck.engine.run.owner" in sys.modules
park_early(sys.executable)
answer = parked_answer(sys.executable, 120.0)
after = "rigcheck.engine.run.owner" in sys.modules
child = adopt_parked(sys.executable)
child.close(5.0)
print(before, after, "RIGCHECK-PYTHON" in (answer or ""), "torch" in sys.modules)
"""


def test_the_wait_for_the_answer_imports_the_runs_machinery_and_never_torch() -> None:
    done = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, timeout=180)
    assert done.stdout.split() == ["False", "True", "True", "False"], done.stderr[-2000:]
