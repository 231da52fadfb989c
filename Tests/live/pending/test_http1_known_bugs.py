"""HTTP/1.1 cases the engine gets wrong today (not collected: conftest ignores pending/).
Move each into test_http1_conformance.py once the engine is fixed.

1. Trailer field lines are only checked for field-value characters, not parsed as
   `field-name ":" OWS field-value OWS` (RFC 9112 §7.1.2 → §5): `Bad Trailer: x` (a space in the
   name) and a line without a colon are accepted and dropped with a 200.
2. HTTPTestServer can still be killed by a signal sent right after `LISTENING`: engine 26a28c1
   waits for *a* signalfd before printing the line, but about 1 run in 15 still ends with
   returncode -15 (SIGTERM) or -2 (SIGINT) instead of 0 — the wait does not prove that both
   signals are already routed to the service group. Blocking SIGTERM/SIGINT with
   `pthread_sigmask` in `main` before any thread starts (if dispatch then still receives them)
   would close the window.
3. The request target is not checked against RFC 9112 §3.2 forms: `GET echo` (neither
   origin-form, absolute-form, authority-form nor `*`) is served (200 from /echo), `GET /echo#frag`
   (a fragment is not part of any form) and `GET /caf\xc3\xa9` (raw non-ASCII) reach the router
   (404). Each should be 400 and close, like the other malformed request lines.
"""
from rawhttp import rejected


def test_trailer_with_invalid_name_is_rejected(server):
    rejected(*server.address, b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
                              b"5\r\nhello\r\n0\r\nBad Trailer: x\r\n\r\n")


def test_trailer_without_colon_is_rejected(server):
    rejected(*server.address, b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
                              b"5\r\nhello\r\n0\r\nNoColonHere\r\n\r\n")


def test_signals_right_after_listening_shut_down_gracefully(server_binary):
    # Popen directly: the start_server fixture waits for the handlers, which hides this bug.
    import subprocess

    outcomes = []
    for sig in [2, 15] * 5:
        proc = subprocess.Popen([str(server_binary), "--host", "127.0.0.1", "--port", "0"],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        assert proc.stdout.readline().startswith(b"LISTENING ")
        proc.send_signal(sig)
        outcomes.append(proc.wait(timeout=30))
    assert outcomes == [0] * 10


def test_target_without_leading_slash_is_rejected(server):
    rejected(*server.address, b"GET echo HTTP/1.1\r\nHost: t\r\n\r\n")


def test_target_with_fragment_is_rejected(server):
    rejected(*server.address, b"GET /echo#frag HTTP/1.1\r\nHost: t\r\n\r\n")


def test_target_with_raw_non_ascii_is_rejected(server):
    rejected(*server.address, b"GET /caf\xc3\xa9 HTTP/1.1\r\nHost: t\r\n\r\n")
