import HTTP1
import HTTPTypes
import SocketLoop

/// Encoding a `200` with a 2,560-byte JSON body (the size of the gateway's demo state and of
/// HTTPTestServer's `/static`) the way `HTTP1ConnectionHandler.deliver` does: the response's
/// `HTTPFields` become header lines plus `Content-Length`, `HTTP1ResponseEncoder` writes the head,
/// and head and body are laid out in one shared buffer for the connection's write queue.
enum ResponseWorkloads {
    static let body: [UInt8] = {
        var text = #"{"name":"canvas-demo","version":1042,"rootUUID":"5d3c1a2b-7e4f-4a6b-9c8d-0e1f2a3b4c5d","#
        text += #""fragments":["#
        var index = 0
        while text.utf8.count < 2_400 {
            if index > 0 { text += "," }
            text +=
                #"{"type":"add","uuid":"00000000-0000-4000-8000-\#(String(100_000_000_000 + index))","#
                + #""clsName":"Shape","properties":{"x":\#(index * 10),"y":\#(index * 7)}}"#
            index += 1
        }
        text += "]}"
        // Pad with spaces inside the object so the body is exactly 2,560 bytes of valid JSON.
        text.insert(
            contentsOf: String(repeating: " ", count: max(0, 2_560 - text.utf8.count)),
            at: text.index(before: text.endIndex))
        return Array(text.utf8)
    }()

    static let fields: HTTPFields = [
        .contentType: "application/json", .eTag: #""1042""#, .cacheControl: "no-cache",
        .date: "Sat, 21 Nov 2026 15:00:00 GMT", .server: "jetstream",
    ]

    static func benchmarks() -> [MicroBenchmark] {
        let body = Self.body
        let fields = Self.fields
        let size = encode(fields: fields, body: body).count
        return [
            MicroBenchmark(
                "http1.response.2560", "HTTP/1.1 response encode: 200 + 5 headers + 2,560-byte JSON body",
                bytesPerOp: size
            ) {
                blackHole(encode(fields: fields, body: body))
            }
        ]
    }

    /// Head from the fields (framing fields replaced), then head + body in one `SharedBytes`.
    static func encode(fields: HTTPFields, body: [UInt8]) -> SharedBytes {
        var lines: [(String, String)] = []
        lines.reserveCapacity(fields.count + 3)
        for field in fields where field.name != .contentLength && field.name != .connection {
            lines.append((field.name.rawName, field.value))
        }
        lines.append(("Content-Length", String(body.count)))
        var head: [UInt8] = []
        head.reserveCapacity(256)
        HTTP1ResponseEncoder.encodeHead(status: 200, reason: "OK", headers: lines, into: &head)
        return SharedBytes(parts: [head, body])
    }
}
