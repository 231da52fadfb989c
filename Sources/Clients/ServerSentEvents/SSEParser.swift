/// An incremental `text/event-stream` parser following the WHATWG HTML interpretation rules: lines
/// end in CRLF, LF or CR (a CRLF split across two reads counts once), a leading BOM is skipped,
/// `:` lines are comments, one space after the colon is dropped, `data` lines are joined with LF,
/// an `id` containing NUL is ignored, and an event is dispatched on an empty line only if it has
/// data.
///
/// ```swift
/// var parser = SSEParser()
/// parser.consume(Array("event: changeset\nid: 42\ndata: {}\n\n".utf8)) { event in
///     print(event.type, event.lastEventID)   // changeset 42
/// }
/// ```
public struct SSEParser: Sendable {
    /// The default ``maxLineBytes``: 16 MiB.
    public static let defaultMaxLineBytes = 16 * 1024 * 1024

    /// The longest line kept, in bytes; the rest of a longer line is dropped silently, so a `data:`
    /// line over the bound arrives truncated (a peer must not make the parser grow without bound).
    /// One `data:` line holds a whole event payload: a client that receives full-state snapshots
    /// (tens of MB) passes a bound above its largest expected event.
    public let maxLineBytes: Int
    /// False drops `data:` contents (events still dispatch, with empty ``ServerSentEvent/data``): a
    /// fan-out subscriber needs only the type and id, and copying each payload would cost the
    /// load generator more CPU than the server spends sending it.
    public let keepsData: Bool
    private var line: [UInt8] = []
    private var skipLineFeed = false
    private var atStreamStart = true
    private var bomBytesSeen = 0
    private var eventType: [UInt8] = []
    private var data: [UInt8] = []
    private var hasData = false
    private var lastEventID = ""

    /// With ``keepsData`` off, a line that has begun with `data:` stops accumulating there.
    private var isDataLine: Bool {
        line.count == 5 && line[0] == UInt8(ascii: "d") && line[1] == UInt8(ascii: "a") && line[2] == UInt8(ascii: "t")
            && line[3] == UInt8(ascii: "a") && line[4] == UInt8(ascii: ":")
    }
    /// The last `retry:` value in milliseconds.
    public private(set) var retryMilliseconds: Int?
    /// Comment lines seen (keep-alives).
    public private(set) var comments = 0

    /// - Parameters:
    ///   - maxLineBytes: the longest line kept (default ``defaultMaxLineBytes``, 16 MiB); raise it
    ///     for larger events, e.g. `SSEParser(maxLineBytes: 256 * 1024 * 1024)` for snapshots.
    ///   - keepsData: false to drop `data:` contents (see ``keepsData``).
    public init(maxLineBytes: Int = SSEParser.defaultMaxLineBytes, keepsData: Bool = true) {
        self.maxLineBytes = maxLineBytes
        self.keepsData = keepsData
    }

    public mutating func consume(_ bytes: [UInt8], _ dispatch: (ServerSentEvent) throws -> Void) rethrows {
        try bytes.withUnsafeBytes { try consume($0, dispatch) }
    }

    /// Consumes `bytes` and dispatches every event they complete, in order.
    public mutating func consume(_ bytes: UnsafeRawBufferPointer, _ dispatch: (ServerSentEvent) throws -> Void) rethrows
    {
        let carriageReturn = UInt8(ascii: "\r")
        let lineFeed = UInt8(ascii: "\n")
        var index = skipByteOrderMark(bytes)
        while index < bytes.count {
            if skipLineFeed {
                skipLineFeed = false
                if bytes[index] == lineFeed {
                    index += 1
                    continue
                }
            }
            // Scan to the end of the line and copy the run at once: byte-at-a-time appends were
            // the load generator's hottest code.
            var end = index
            while end < bytes.count, bytes[end] != carriageReturn, bytes[end] != lineFeed { end += 1 }
            appendToLine(bytes, from: index, to: end)
            guard end < bytes.count else { return }
            skipLineFeed = bytes[end] == carriageReturn
            try endLine(dispatch)
            index = end + 1
        }
    }

    /// Consumes a leading UTF-8 BOM at the very start of the stream (possibly split across reads);
    /// returns where the stream's text starts in `bytes`.
    private mutating func skipByteOrderMark(_ bytes: UnsafeRawBufferPointer) -> Int {
        let bom: [UInt8] = [0xEF, 0xBB, 0xBF]
        var index = 0
        while atStreamStart, index < bytes.count {
            if bomBytesSeen < 3 && bytes[index] == bom[bomBytesSeen] {
                bomBytesSeen += 1
                index += 1
                if bomBytesSeen == 3 { atStreamStart = false }
                continue
            }
            atStreamStart = false
            if bomBytesSeen > 0 { line.append(contentsOf: bom[0..<bomBytesSeen]) }
        }
        return index
    }

    /// Appends `bytes[start..<end]` (no line breaks in it) to the current line, up to
    /// ``maxLineBytes``; without ``keepsData`` a `data:` line stops growing after its name.
    private mutating func appendToLine(_ bytes: UnsafeRawBufferPointer, from start: Int, to end: Int) {
        var index = start
        if !keepsData {
            while index < end && line.count < 5 && line.count < maxLineBytes {
                line.append(bytes[index])
                index += 1
            }
            if isDataLine { return }
        }
        let room = maxLineBytes - line.count
        guard room > 0, index < end else { return }
        line.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[index..<min(end, index + room)]))
    }

    private mutating func endLine(_ dispatch: (ServerSentEvent) throws -> Void) rethrows {
        defer {
            line.removeAll(keepingCapacity: true)
        }
        if line.isEmpty {
            try dispatchEvent(dispatch)
            return
        }
        if line[0] == UInt8(ascii: ":") {
            comments += 1
            return
        }
        let colon = line.firstIndex(of: UInt8(ascii: ":")) ?? line.count
        var valueStart = colon + 1
        if valueStart < line.count && line[valueStart] == UInt8(ascii: " ") { valueStart += 1 }
        let value = valueStart <= line.count ? line[min(valueStart, line.count)...] : []
        switch line[0..<colon] {
        case ArraySlice("event".utf8):
            eventType = Array(value)
        case ArraySlice("data".utf8):
            if keepsData {
                if hasData { data.append(UInt8(ascii: "\n")) }
                data.append(contentsOf: value)
            }
            hasData = true
        case ArraySlice("id".utf8):
            if !value.contains(0) { lastEventID = String(decoding: value, as: UTF8.self) }
        case ArraySlice("retry".utf8):
            if !value.isEmpty, value.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
                let milliseconds = Int(String(decoding: value, as: UTF8.self))
            {
                retryMilliseconds = milliseconds
            }
        default:
            break
        }
    }

    private mutating func dispatchEvent(_ dispatch: (ServerSentEvent) throws -> Void) rethrows {
        defer {
            eventType.removeAll(keepingCapacity: true)
            data.removeAll(keepingCapacity: true)
            hasData = false
        }
        guard hasData else { return }
        let type = eventType.isEmpty ? "message" : String(decoding: eventType, as: UTF8.self)
        try dispatch(ServerSentEvent(type: type, lastEventID: lastEventID, data: data))
    }
}
