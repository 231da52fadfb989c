import HTTP2
import SocketLoop

/// The HTTP/2 handler's streams: one ``HTTP2StreamRecord`` per stream in one dictionary keyed by
/// stream id, plus the counts the handler reads on every wake-up, kept in step by the methods
/// that change a record (so no count needs a scan, and a scan runs only when its count is not 0).
/// A value type; the handler owns one per connection.
///
/// ```swift
/// table.insert(HTTP2StreamRecord(phase: .routed(request)), on: stream)
/// let request = table.answer(stream)      // once, by the responder's request id
/// if let record = table.remove(stream) { release(record) }   // nghttp2 reported it closed
/// ```
struct HTTP2StreamTable {
    private(set) var records: [HTTP2StreamID: HTTP2StreamRecord] = [:]
    /// The streams in phase `.waiting`, oldest first: the order they are routed in. Requests
    /// complete in any stream order (a long upload on stream 1 finishes after stream 3).
    private(set) var waitingOrder: [HTTP2StreamID] = []
    /// Body bytes of the waiting requests (bounded per connection like unfinished uploads).
    private(set) var waitingBodyBytes = 0
    /// Records with an event stream attached.
    private(set) var eventStreams = 0
    /// Records answered with a cached shared body.
    private(set) var cachedBodies = 0
    /// Records with a reset deadline.
    private(set) var pendingResets = 0

    /// Open streams with a complete request: waiting, routed or answered.
    var count: Int { records.count }
    var hasWaiting: Bool { !waitingOrder.isEmpty }

    /// Adds the record of a stream whose request just completed. Returns the record it replaced,
    /// for the caller to release (never in practice: a stream carries one request, and nghttp2
    /// never reuses a stream id).
    mutating func insert(_ record: HTTP2StreamRecord, on stream: HTTP2StreamID) -> HTTP2StreamRecord? {
        let replaced = records.updateValue(record, forKey: stream)
        if let replaced { forget(replaced, on: stream) }
        count(record, on: stream)
        return replaced
    }

    /// Moves the oldest waiting request to `.routed` and returns it; its body no longer counts
    /// as waiting (the caller returns its charge to the body budget).
    mutating func routeOldestWaiting() -> (stream: HTTP2StreamID, request: HTTPServerRequest)? {
        guard !waitingOrder.isEmpty else { return nil }
        let stream = waitingOrder.removeFirst()
        guard let index = records.index(forKey: stream), case .waiting(let request) = records.values[index].phase
        else { return nil }
        waitingBodyBytes -= request.body.count
        records.values[index].phase = .routed(request)
        return (stream, request)
    }

    /// The request routed on `stream` and not answered yet (an event stream's, while it is open).
    func routedRequest(on stream: HTTP2StreamID) -> HTTPServerRequest? {
        guard case .routed(let request)? = records[stream]?.phase else { return nil }
        return request
    }

    /// Marks the request on `stream` answered and returns it; nil if there is none to answer
    /// (answered already, or the stream closed).
    mutating func answer(_ stream: HTTP2StreamID) -> HTTPServerRequest? {
        guard let index = records.index(forKey: stream), case .routed(let request) = records.values[index].phase
        else { return nil }
        records.values[index].phase = .answered
        return request
    }

    /// Notes that `stream` was answered with a cached shared body.
    mutating func markCachedBody(_ stream: HTTP2StreamID) {
        guard let index = records.index(forKey: stream), !records.values[index].sendsCachedBody else { return }
        records.values[index].sendsCachedBody = true
        cachedBodies += 1
    }

    /// Attaches the event stream written on `stream`.
    mutating func attach(_ sink: HTTP2EventStreamSink, to stream: HTTP2StreamID) {
        guard let index = records.index(forKey: stream) else { return }
        if records.values[index].sink == nil { eventStreams += 1 }
        records.values[index].sink = sink
    }

    /// Sets when `stream` is reset if it is still open by then.
    mutating func resetUnlessClosed(_ stream: HTTP2StreamID, at instant: LoopInstant) {
        guard let index = records.index(forKey: stream) else { return }
        if records.values[index].resetDeadline == nil { pendingResets += 1 }
        records.values[index].resetDeadline = instant
    }

    /// The earliest reset deadline, if any.
    var earliestReset: LoopInstant? {
        guard pendingResets > 0 else { return nil }
        return records.values.lazy.compactMap(\.resetDeadline).min()
    }

    /// The streams whose reset deadline passed by `now`; their deadlines are cleared.
    mutating func takeDueResets(now: LoopInstant) -> [HTTP2StreamID] {
        guard pendingResets > 0 else { return [] }
        let due = records.filter { $0.value.resetDeadline.map { $0 <= now } ?? false }.map(\.key)
        for stream in due { records[stream]?.resetDeadline = nil }
        pendingResets -= due.count
        return due
    }

    /// Removes the record of a closed stream and returns it, for the caller to release what it
    /// holds.
    mutating func remove(_ stream: HTTP2StreamID) -> HTTP2StreamRecord? {
        guard let record = records.removeValue(forKey: stream) else { return nil }
        forget(record, on: stream)
        return record
    }

    private mutating func count(_ record: HTTP2StreamRecord, on stream: HTTP2StreamID) {
        if case .waiting(let request) = record.phase {
            waitingBodyBytes += request.body.count
            waitingOrder.append(stream)
        }
        if record.sendsCachedBody { cachedBodies += 1 }
        if record.sink != nil { eventStreams += 1 }
        if record.resetDeadline != nil { pendingResets += 1 }
    }

    private mutating func forget(_ record: HTTP2StreamRecord, on stream: HTTP2StreamID) {
        if case .waiting(let request) = record.phase {
            waitingBodyBytes -= request.body.count
            if let position = waitingOrder.firstIndex(of: stream) { waitingOrder.remove(at: position) }
        }
        if record.sendsCachedBody { cachedBodies -= 1 }
        if record.sink != nil { eventStreams -= 1 }
        if record.resetDeadline != nil { pendingResets -= 1 }
    }
}
