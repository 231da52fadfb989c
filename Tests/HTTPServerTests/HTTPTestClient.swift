import Foundation
import TestSupport

/// A raw HTTP/1.1 client over ``TestSocket`` that reads responses one at a time (so pipelined
/// responses can be checked in order) without interpreting anything the test wants to see.
final class HTTPTestClient {
    let socket: TestSocket
    private var buffer: [UInt8] = []

    struct Response {
        var status: Int
        var headers: [(String, String)]
        var body: [UInt8]
        var text: String { String(decoding: body, as: UTF8.self) }
        func header(_ name: String) -> String? {
            headers.first { $0.0.lowercased() == name.lowercased() }?.1
        }
    }

    init(port: Int) throws {
        socket = try TestSocket(port: port)
    }

    func send(_ text: String) {
        socket.send(text)
    }

    /// Reads one response with a Content-Length body (or none); nil on timeout or EOF first.
    func readResponse(isHead: Bool = false) async -> Response? {
        while true {
            if let response = takeResponse(isHead: isHead) { return response }
            let more = await socket.read(until: { !$0.isEmpty })
            if more.isEmpty { return nil }
            buffer += more
        }
    }

    /// Reads until `text` appears in the bytes after the last complete response.
    func read(untilContains text: String) async -> String {
        let needle = Array(text.utf8)
        while !TestSocket.contains(buffer, needle) {
            let more = await socket.read(until: { !$0.isEmpty })
            if more.isEmpty { break }
            buffer += more
        }
        defer { buffer.removeAll() }
        return String(decoding: buffer, as: UTF8.self)
    }

    /// Everything until the server closes.
    func readToEnd() async -> String {
        buffer += await socket.read()
        defer { buffer.removeAll() }
        return String(decoding: buffer, as: UTF8.self)
    }

    private func takeResponse(isHead: Bool) -> Response? {
        let separator = Array("\r\n\r\n".utf8)
        guard buffer.count >= 4,
            let end = (0...(buffer.count - 4)).first(where: { buffer[$0..<$0 + 4].elementsEqual(separator) })
        else { return nil }
        let headText = String(decoding: buffer[0..<end], as: UTF8.self)
        var lines = headText.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst().split(separator: " ")
        let status = statusLine.count > 1 ? Int(statusLine[1]) ?? 0 : 0
        let headers = lines.map { line -> (String, String) in
            let parts = line.split(separator: ":", maxSplits: 1)
            return (String(parts[0]), parts.count > 1 ? parts[1].trimmingCharacters(in: .whitespaces) : "")
        }
        let length = isHead ? 0 : Int(headers.first { $0.0.lowercased() == "content-length" }?.1 ?? "0") ?? 0
        let bodyStart = end + 4
        guard buffer.count >= bodyStart + length else { return nil }
        let body = Array(buffer[bodyStart..<bodyStart + length])
        buffer.removeFirst(bodyStart + length)
        return Response(status: status, headers: headers, body: body)
    }
}
