// libpq, PostgreSQL's C client library (Debian: libpq-dev). Only libpq: no SwiftNIO, no PostgresNIO.
#include <libpq-fe.h>
#include <poll.h>

// PGRES_POLLING_* and the pipeline status values are plain enums Swift imports; poll(2) is here so
// the connection code waits on libpq's socket without a second shim.
static inline int clibpq_wait(int fd, short events, int timeout_ms) {
    struct pollfd p = { .fd = fd, .events = events, .revents = 0 };
    return poll(&p, 1, timeout_ms);
}
