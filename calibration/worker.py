"""Data-parallel calibration, worker side: ``python -m gacost.calibration.worker REQ.json``.

torchrun starts one of these per GPU (see :mod:`gacost.calibration.launch`).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from gacost.base.errors import GacostError
from gacost.calibration.ranks import finish, is_main
from gacost.calibration.request import request_from_dict


def main(argv: list[str] | None = None) -> int:
    """Run the request in ``argv[0]``; rank 0 reports errors."""
    args = sys.argv[1:] if argv is None else argv
    try:
        from gacost.calibration.run import calibrate

        data = json.loads(Path(args[0]).read_text(encoding="utf-8"))
        calibrate(request_from_dict(data))
    except GacostError as exc:
        if is_main():
            print(f"error: {exc}", file=sys.stderr, flush=True)
        return exc.exit_code
    finally:
        finish()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
