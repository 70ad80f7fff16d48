"""Refresh time when price servers hang or drip bytes, against HTTPS servers on 127.0.0.1.

    python bench/prices_faults.py [--deadline 60] [--drip-every 4]

Every default source (and the opt-in ones with a URL variable) is pointed at one local HTTPS
server (a throwaway CA from trustme, trusted through SSL_CERT_FILE) whose every path sends
headers and then one byte every ``--drip-every`` seconds, which never trips the 10 s read
timeout. Prints the wall-clock of ``gacost prices --refresh`` run as a user would (a
subprocess, no test hooks), for all sources together and for Vast alone. Needs the test
extra (trustme). Touches no network and writes only a temporary cache.
"""

from __future__ import annotations

import argparse
import os
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import trustme


def _serve(ca: trustme.CA, every: float, stop: threading.Event) -> ThreadingHTTPServer:
    class Drip(BaseHTTPRequestHandler):
        def _drip(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.rfile.read(length)
            self.send_response(200)
            self.send_header("Content-Length", "100000")
            self.end_headers()
            while not stop.wait(every):
                try:
                    self.wfile.write(b" ")
                    self.wfile.flush()
                except OSError:
                    return

        do_GET = do_POST = _drip  # noqa: N815 - http.server's naming

        def log_message(self, *args: object) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Drip)
    server.daemon_threads = True
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(context)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def _refresh(env: dict[str, str], *args: str) -> tuple[float, int, str]:
    start = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-c", "import sys; from gacost.commands.cli import main; sys.exit(main())",
         "prices", "--refresh", "--max-age", "0", *args],
        env=env, capture_output=True, text=True, timeout=3600,
    )  # fmt: skip
    return time.monotonic() - start, result.returncode, result.stderr


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deadline", default="60s")
    parser.add_argument("--drip-every", type=float, default=4.0)
    args = parser.parse_args()
    ca, stop = trustme.CA(), threading.Event()
    server = _serve(ca, args.drip_every, stop)
    url = f"https://127.0.0.1:{server.server_address[1]}"
    with tempfile.TemporaryDirectory() as tmp:
        pem = Path(tmp) / "ca.pem"
        ca.cert_pem.write_to_path(str(pem))
        env = {
            **os.environ, "SSL_CERT_FILE": str(pem), "GACOST_CACHE_DIR": str(Path(tmp) / "c"),
            "GACOST_REFRESH_DEADLINE": args.deadline,
            "GACOST_SKYPILOT_CATALOG_URL": url, "GACOST_VAST_URL": f"{url}/vast",
            "GACOST_AZURE_URL": f"{url}/azure", "GACOST_LAMBDA_URL": f"{url}/lambda",
            "GACOST_AWS_BULK_URL": url + "/aws/{region}/index.csv", "LAMBDA_API_KEY": "x",
            "GACOST_AWS_SPOT_ADVISOR_URL": f"{url}/spot-advisor-data.json",
            "GACOST_OCI_URL": f"{url}/oci",
        }  # fmt: skip
        for label, extra in (("all default sources", []), ("vast alone", ["--source", "vast"])):
            seconds, code, err = _refresh(env, *extra)
            failed = sum("refresh failed" in line for line in err.splitlines())
            print(f"{label}: {seconds:.1f} s, exit {code}, {failed} sources failed")
    stop.set()
    server.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
