import CLibPQ
import Store

#if canImport(Glibc)
import Glibc
#endif

/// One libpq connection in non-blocking mode, owned by one thread (not `Sendable`).
///
/// Connecting uses `PQconnectStartParams` + `PQconnectPoll`; every query is sent, flushed with
/// `PQflush` and read with `PQconsumeInput`/`PQgetResult`, waiting on the socket with `poll(2)`
/// and a deadline, so a dead server costs a timeout, never a hung thread. Notifications are
/// drained after every `PQconsumeInput` and after every result (libpq queues them otherwise).
/// Batches go through pipeline mode: all statements of a batch in one round trip.
///
/// ```swift
/// let connection = try PGConnection(target: target, timeout: .seconds(5))
/// let rows = try connection.query("SELECT version FROM jetstream.scopes WHERE name = $1", [.text("a")])
/// ```
final class PGConnection {
    let raw: OpaquePointer
    /// How long one round trip may take before the connection is given up.
    var timeout: Duration
    /// Called for each `NOTIFY` received, with its channel and payload.
    var onNotification: ((String, String) -> Void)?
    private var prepared: Set<String> = []

    init(target: PGTarget, applicationName: String, timeout: Duration) throws(StoreError) {
        self.timeout = timeout
        var keywords = ["dbname", "application_name", "fallback_application_name"]
        var values = [target.conninfo, applicationName, "jetstream"]
        if let hostaddr = target.hostaddr {
            keywords.append("hostaddr")
            values.append(hostaddr)
        }
        let connection = Self.start(keywords: keywords, values: values)
        guard let connection else { throw .unavailable("libpq could not allocate a connection") }
        raw = connection
        // Every stored property is set from here on: a throw runs deinit, which finishes the
        // connection (finishing it here too would free it twice).
        guard PQstatus(raw) != CONNECTION_BAD else { throw .unavailable(errorMessage) }
        let deadline = ContinuousClock.now + timeout
        var status = PGRES_POLLING_WRITING
        while status != PGRES_POLLING_OK {
            switch status {
            case PGRES_POLLING_READING: try wait(for: Int16(POLLIN), until: deadline)
            case PGRES_POLLING_WRITING: try wait(for: Int16(POLLOUT), until: deadline)
            case PGRES_POLLING_FAILED: throw .unavailable(errorMessage)
            default: break
            }
            status = PQconnectPoll(raw)
        }
        guard PQsetnonblocking(raw, 1) == 0 else { throw .unavailable(errorMessage) }
    }

    private static func start(keywords: [String], values: [String]) -> OpaquePointer? {
        let keywordPointers = keywords.map { strdup($0) } + [nil]
        let valuePointers = values.map { strdup($0) } + [nil]
        defer {
            keywordPointers.forEach { free($0) }
            valuePointers.forEach { free($0) }
        }
        return keywordPointers.map { UnsafePointer($0) }.withUnsafeBufferPointer { keywordBuffer in
            valuePointers.map { UnsafePointer($0) }.withUnsafeBufferPointer { valueBuffer in
                PQconnectStartParams(keywordBuffer.baseAddress, valueBuffer.baseAddress, 1)
            }
        }
    }

    deinit { PQfinish(raw) }

    /// libpq's last error message, trimmed.
    var errorMessage: String {
        guard let message = PQerrorMessage(raw) else { return "unknown libpq error" }
        return String(cString: message).trimmingTrailingWhitespace()
    }

    /// Whether the connection can take another statement: libpq considers it open, and no round
    /// trip on it was abandoned half-way (a timed-out statement leaves its results in flight).
    var isHealthy: Bool { !abandoned && PQstatus(raw) == CONNECTION_OK }
    private var abandoned = false

    // MARK: Waiting on the socket

    /// Waits until the socket is ready for `events`, or throws ``StoreError/unavailable(_:)`` at
    /// `deadline`.
    func wait(for events: Int16, until deadline: ContinuousClock.Instant) throws(StoreError) {
        let socket = PQsocket(raw)
        guard socket >= 0 else { throw .unavailable("the connection has no socket: \(errorMessage)") }
        while true {
            let remaining = deadline - ContinuousClock.now
            guard remaining > .zero else {
                abandoned = true
                throw .unavailable("no answer from the database within \(timeout)")
            }
            let milliseconds = Int32(clamping: remaining.components.seconds * 1000 + 1)
            let ready = clibpq_wait(socket, events, min(milliseconds, 1000))
            if ready > 0 { return }
            if ready < 0, errno != EINTR { throw .unavailable("poll failed: errno \(errno)") }
        }
    }

    /// Whether a result can be taken without waiting: reads what the socket has, and when no
    /// result is complete yet waits up to `limit` for more (a writer with batches in flight looks
    /// for new writes between these waits).
    func resultReady(waitingAtMost limit: Duration) throws(StoreError) -> Bool {
        try consumeInput()
        if PQisBusy(raw) == 0 { return true }
        let socket = PQsocket(raw)
        guard socket >= 0 else { throw .unavailable("the connection has no socket: \(errorMessage)") }
        let (seconds, attoseconds) = limit.components
        let milliseconds = Int32(clamping: max(seconds * 1000 + attoseconds / 1_000_000_000_000_000, 0))
        let ready = clibpq_wait(socket, Int16(POLLIN), milliseconds)
        if ready < 0, errno != EINTR { throw .unavailable("poll failed: errno \(errno)") }
        guard ready > 0 else { return false }
        try consumeInput()
        return PQisBusy(raw) == 0
    }

    /// Reads what the socket has: `PQconsumeInput`, then the notifications it brought.
    func consumeInput() throws(StoreError) {
        guard PQconsumeInput(raw) == 1 else { throw .unavailable(errorMessage) }
        drainNotifications()
    }

    func drainNotifications() {
        while let notification = PQnotifies(raw) {
            let channel = String(cString: notification.pointee.relname)
            let payload = String(cString: notification.pointee.extra)
            PQfreemem(notification)
            onNotification?(channel, payload)
        }
    }

    /// Sends what libpq buffered; reads meanwhile so a full socket in both directions cannot deadlock.
    func flush(until deadline: ContinuousClock.Instant) throws(StoreError) {
        while true {
            switch PQflush(raw) {
            case 0: return
            case 1:
                try wait(for: Int16(POLLIN | POLLOUT), until: deadline)
                try consumeInput()
            default: throw .unavailable(errorMessage)
            }
        }
    }

    /// The next result, waiting for it; `nil` at the end of a query's results (or of a pipeline
    /// segment).
    func nextResult(until deadline: ContinuousClock.Instant) throws(StoreError) -> PGResult? {
        while PQisBusy(raw) == 1 {
            try wait(for: Int16(POLLIN), until: deadline)
            try consumeInput()
        }
        defer { drainNotifications() }
        guard let result = PQgetResult(raw) else { return nil }
        return PGResult(result)
    }

    // MARK: Simple queries

    /// Runs one statement (parameters in binary) and returns its result; a server error throws
    /// ``StoreError/postgres(operation:sqlState:message:)``.
    @discardableResult
    func query(_ sql: String, _ parameters: [PGValue] = [], operation: String? = nil) throws(StoreError) -> PGResult {
        let deadline = ContinuousClock.now + timeout
        try send(sql: sql, parameters)
        try flush(until: deadline)
        var last: PGResult?
        while let result = try nextResult(until: deadline) { last = result }
        guard let last else { throw .unavailable("no result: \(errorMessage)") }
        try last.check(operation: operation ?? sql)
        return last
    }

    /// Runs several statements without parameters (schema set-up), each checked.
    func execute(_ script: String, operation: String) throws(StoreError) {
        let deadline = ContinuousClock.now + timeout
        guard PQsendQuery(raw, script) == 1 else { throw .unavailable(errorMessage) }
        try flush(until: deadline)
        var failure: StoreError?
        while let result = try nextResult(until: deadline) {
            do throws(StoreError) { try result.check(operation: operation) } catch { failure = failure ?? error }
        }
        if let failure { throw failure }
    }

    /// Queues one statement (pipeline mode, or before ``query``'s wait).
    func send(sql: String, _ parameters: [PGValue]) throws(StoreError) {
        let sent = PGValue.withParameters(parameters) { types, values, lengths, formats in
            PQsendQueryParams(raw, sql, Int32(parameters.count), types, values, lengths, formats, 1)
        }
        guard sent == 1 else { throw .unavailable(errorMessage) }
    }

    /// Queues a prepared statement (pipeline mode): it must have been prepared on this connection
    /// with ``prepare(_:)`` (a prepare inside the pipeline would interleave its own result).
    func send(_ statement: PGStatement, _ parameters: [PGValue]) throws(StoreError) {
        guard prepared.contains(statement.name) else {
            throw .invalidArgument("statement \(statement.name) was not prepared on this connection")
        }
        let sent = PGValue.withParameters(parameters) { _, values, lengths, formats in
            PQsendQueryPrepared(raw, statement.name, Int32(parameters.count), values, lengths, formats, 1)
        }
        guard sent == 1 else { throw .unavailable(errorMessage) }
    }

    /// Prepares `statements` on this connection (one round trip each), unless already prepared.
    func prepare(_ statements: [PGStatement]) throws(StoreError) {
        for statement in statements where !prepared.contains(statement.name) {
            let deadline = ContinuousClock.now + timeout
            let types = statement.parameterTypes
            let queued = types.withUnsafeBufferPointer { buffer in
                PQsendPrepare(raw, statement.name, statement.sql, Int32(types.count), buffer.baseAddress)
            }
            guard queued == 1 else { throw .unavailable(errorMessage) }
            try flush(until: deadline)
            var last: PGResult?
            while let result = try nextResult(until: deadline) { last = result }
            guard let last else { throw .unavailable("no result: \(errorMessage)") }
            try last.check(operation: "prepare \(statement.name)")
            prepared.insert(statement.name)
        }
    }

    /// Runs one prepared statement outside a pipeline (preparing it first on this connection).
    func query(_ statement: PGStatement, _ parameters: [PGValue]) throws(StoreError) -> PGResult {
        try prepare([statement])
        let deadline = ContinuousClock.now + timeout
        try send(statement, parameters)
        try flush(until: deadline)
        var last: PGResult?
        while let result = try nextResult(until: deadline) { last = result }
        guard let last else { throw .unavailable("no result: \(errorMessage)") }
        try last.check(operation: statement.name)
        return last
    }

    // MARK: Pipeline mode

    func enterPipeline() throws(StoreError) {
        guard PQenterPipelineMode(raw) == 1 else { throw .unavailable(errorMessage) }
    }

    func pipelineSync() throws(StoreError) {
        guard PQpipelineSync(raw) == 1 else { throw .unavailable(errorMessage) }
    }

    func exitPipeline() throws(StoreError) {
        guard PQexitPipelineMode(raw) == 1 else { throw .unavailable(errorMessage) }
    }

    /// Reads the results of one pipelined statement (up to its terminating `nil`); returns the last.
    func pipelinedResult(until deadline: ContinuousClock.Instant) throws(StoreError) -> PGResult {
        var last: PGResult?
        while let result = try nextResult(until: deadline) {
            if result.status == PGRES_PIPELINE_SYNC { return result }
            last = result
        }
        guard let last else { throw .unavailable("a pipelined statement had no result: \(errorMessage)") }
        return last
    }

}

extension String {
    func trimmingTrailingWhitespace() -> String {
        var text = self[...]
        while let last = text.last, last.isWhitespace { text = text.dropLast() }
        return String(text)
    }
}
