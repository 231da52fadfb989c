"""HTTP/2 request bodies count against the server-wide `--max-buffered-body-bytes`, like HTTP/1.1
ones: with a 150 kB budget, three connections that have each sent 60 kB of a 100 kB body do not
all fit — the stream whose bytes would overflow it is answered 503 — and once the connections are
gone their bytes are returned. Bounded waits only."""
from __future__ import annotations

import time

from h2raw import DataFrame, H2Connection, HeadersFrame

BOUND = 20.0


def start_upload(server, sent: int, total: int = 100_000, end: bool = False) -> H2Connection:
    conn = H2Connection(*server.address)
    conn.handshake()
    head = conn.headers_frame(1, "/echo", method="POST", end_stream=False,
                              extra=[("content-length", str(total))])
    pieces = [DataFrame(1, data=b"a" * min(16_384, sent - offset)) for offset in range(0, sent, 16_384)]
    if end:
        pieces[-1].flags.add("END_STREAM")
    conn.send(head, *pieces)  # frames of at most 16 KiB, the default SETTINGS_MAX_FRAME_SIZE
    return conn


def status(conn: H2Connection, timeout: float = BOUND) -> str:
    frame = conn.read_until(lambda f: isinstance(f, HeadersFrame) and f.stream_id == 1, timeout=timeout)
    return dict(frame.decoded)[":status"]


def test_http2_uploads_beyond_the_body_budget_are_refused_with_503(start_server):
    server = start_server("--max-body", "1000000", "--max-buffered-body-bytes", "150000", "--loops", "1")
    uploads = []
    try:
        for _ in range(3):
            uploads.append(start_upload(server, 60_000))
            time.sleep(0.3)  # the server has taken these 60 kB
        assert status(uploads[2]) == "503"
    finally:
        for conn in uploads:
            conn.close()
    # The bytes of the connections that went away were returned: a whole upload fits again.
    deadline = time.monotonic() + BOUND
    while True:
        with start_upload(server, 60_000, total=60_000, end=True) as conn:
            if status(conn) == "200":
                break
        assert time.monotonic() < deadline, "the body budget never came free"
        time.sleep(0.1)
