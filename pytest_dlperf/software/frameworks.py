"""Training frameworks' short names, as profiles and tables write them: a framework's package and
import names (``tensorflow``, ``tensorflow-cpu``, ``paddlepaddle``) -> ``tf``, ``paddle``, as the seeds
write TF2. Which frameworks an engine trains with is its launcher's (``Launcher.frameworks_for``)."""
from __future__ import annotations

SHORT = {"tensorflow": "tf", "tensorflow-cpu": "tf", "paddlepaddle": "paddle"}
TRAINING = ("torch", "tf", "paddle")  # the frameworks that train (not horovod, perseus, acspeed)


def short(name: str) -> str:
    """``tensorflow`` -> ``tf``; a name without a short form is its own."""
    return SHORT.get(name, name)
