"""
bench/start_hops.py's worker: bench/peers' pgflight adapter (`work`), with the worker's two claim
calls (the listener's ticket claim and the loop's claim_batch) wrapped to stamp, per job id, the
moment the claimed rows are back in the worker process; the stamps go into the adapter's output
file as ``claims_back``. Only this bench's process is patched; the worker's code is unchanged.
"""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path
from typing import Any

ADAPTER = Path(__file__).resolve().parent / "peers" / "adapters" / "pgflight_adapter.py"
sys.path.insert(0, str(ADAPTER.parent))
spec = importlib.util.spec_from_file_location("pgflight_adapter", ADAPTER)
assert spec and spec.loader
adapter = importlib.util.module_from_spec(spec)
spec.loader.exec_module(adapter)

import common  # noqa: E402

from pgflight import db, worker  # noqa: E402

BACK: dict[int, float] = {}


def _stamp(claims: list[Any]) -> None:
    now = time.time()
    for c in claims:
        if isinstance(c.input, dict) and "id" in c.input:
            BACK[c.input["id"]] = now


_ticket = worker.claim_with_ticket
_batch = db.claim_batch


def claim_with_ticket(*args: Any, **kwargs: Any) -> Any:
    won, claims = _ticket(*args, **kwargs)
    _stamp(claims)
    return won, claims


def claim_batch(*args: Any, **kwargs: Any) -> Any:
    claims = _batch(*args, **kwargs)
    _stamp(claims)
    return claims


worker.claim_with_ticket = claim_with_ticket  # type: ignore[assignment]
db.claim_batch = claim_batch  # type: ignore[assignment]
_dump = common.Recorder.dump


def dump(self: Any, path: str, config: dict[str, Any], **extra: Any) -> None:
    self.extra["claims_back"] = BACK
    _dump(self, path, config, **extra)


common.Recorder.dump = dump  # type: ignore[method-assign]

if __name__ == "__main__":
    common.main(vars(adapter))
