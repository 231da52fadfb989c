import HTTP2
import HTTPTypes

/// Moves bytes between an in-memory client and the server session until both are quiet, as a
/// socket pair would; returns the server events that arrived on the way.
@discardableResult
func pump(_ client: H2TestClient, _ server: HTTP2ServerSession, maxRounds: Int = 200) throws -> [HTTP2Event] {
    var events: [HTTP2Event] = []
    for _ in 0..<maxRounds {
        let fromClient = try client.output()
        if !fromClient.isEmpty { try server.receive(fromClient) }
        events += server.takeEvents()
        let fromServer = try server.drainOutput()
        events += server.takeEvents()
        if !fromServer.isEmpty { try client.receive(fromServer) }
        if fromClient.isEmpty && fromServer.isEmpty { return events }
    }
    return events
}

/// Splits raw server output into (type, flags, stream id, payload) frames.
func frames(in bytes: [UInt8]) -> [(type: UInt8, flags: UInt8, stream: Int32, payload: [UInt8])] {
    var result: [(type: UInt8, flags: UInt8, stream: Int32, payload: [UInt8])] = []
    var index = 0
    while index + 9 <= bytes.count {
        let length = Int(bytes[index]) << 16 | Int(bytes[index + 1]) << 8 | Int(bytes[index + 2])
        let stream =
            Int32(bytes[index + 5] & 0x7f) << 24 | Int32(bytes[index + 6]) << 16
            | Int32(bytes[index + 7]) << 8 | Int32(bytes[index + 8])
        guard index + 9 + length <= bytes.count else { break }
        result.append((bytes[index + 3], bytes[index + 4], stream, Array(bytes[(index + 9)..<(index + 9 + length)])))
        index += 9 + length
    }
    return result
}

extension [HTTP2Event] {
    var requests: [(stream: HTTP2StreamID, head: HTTPRequest, body: [UInt8])] {
        compactMap {
            if case .request(let stream, let head, let body) = $0 { return (stream, head, body) }
            return nil
        }
    }

    var closedStreams: [HTTP2StreamID: HTTP2ErrorCode] {
        var closed: [HTTP2StreamID: HTTP2ErrorCode] = [:]
        for case .streamClosed(let stream, let code) in self { closed[stream] = code }
        return closed
    }
}
