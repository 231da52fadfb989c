/// Per-scope bounds, set from the command line.
struct ScopeLimits: Sendable {
    /// Change sets kept for `Last-Event-ID` resumption.
    var historyLimit = 10_000
    /// Events a subscriber may have queued before it is disconnected as too slow.
    var streamBufferLimit = 4096
}
