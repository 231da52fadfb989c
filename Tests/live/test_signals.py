"""SIGTERM/SIGINT sent the moment the server announces itself shut it down gracefully (exit 0):
the announcement waits until both signals are caught (SignalReadiness)."""
import subprocess


def test_signals_right_after_listening_shut_down_gracefully(server_binary):
    # Popen directly: the start_server fixture waits for the handlers itself.
    outcomes = []
    for sig in [2, 15] * 5:
        proc = subprocess.Popen([str(server_binary), "--host", "127.0.0.1", "--port", "0"],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        assert proc.stdout.readline().startswith(b"LISTENING ")
        proc.send_signal(sig)
        outcomes.append(proc.wait(timeout=30))
    assert outcomes == [0] * 10
