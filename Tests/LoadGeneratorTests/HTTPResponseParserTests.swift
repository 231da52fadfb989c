import LoadGenerator
import PropertyBased
import Testing

/// The client-side response parser: framing, pipelining and arbitrary read splits.
@Suite("HTTPResponseParser")
struct HTTPResponseParserTests {
    /// Parsed responses as (status, body) pairs, plus whether the last one ended.
    struct Parsed: Equatable {
        var responses: [(status: Int, body: String)] = []
        var ended = 0

        static func == (lhs: Parsed, rhs: Parsed) -> Bool {
            lhs.ended == rhs.ended && lhs.responses.elementsEqual(rhs.responses) { $0 == $1 }
        }
    }

    /// Feeds `text` in the pieces `splits` cuts it into (offsets), then `finish` if asked.
    static func parse(_ text: String, splits: [Int] = [], finish: Bool = false) throws -> Parsed {
        let bytes = Array(text.utf8)
        var parser = HTTPResponseParser()
        var parsed = Parsed()
        let handle: (HTTPResponseParser.Event) -> Void = { event in
            switch event {
            case .head(let head): parsed.responses.append((head.status, ""))
            case .body(let chunk):
                parsed.responses[parsed.responses.count - 1].body += String(decoding: chunk, as: UTF8.self)
            case .end: parsed.ended += 1
            }
        }
        var start = 0
        for cut in (splits + [bytes.count]).sorted() where cut >= start && cut <= bytes.count {
            try bytes[start..<cut].withUnsafeBytes { try parser.consume($0, handle) }
            start = cut
        }
        if finish { parser.finish(handle) }
        return parsed
    }

    static let pipelined =
        "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nETag: \"3\"\r\n\r\nhello"
        + "HTTP/1.1 422 Unprocessable Content\r\nTransfer-Encoding: chunked\r\n\r\n4;ext=1\r\nwiki\r\n5\r\npedia\r\n0\r\nX-Trailer: yes\r\n\r\n"
        + "HTTP/1.1 204 No Content\r\n\r\n"
        + "HTTP/1.1 304 Not Modified\r\nETag: \"3\"\r\n\r\n"
        + "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"

    static let expected = Parsed(
        responses: [(200, "hello"), (422, "wikipedia"), (204, ""), (304, ""), (200, "")], ended: 5)

    @Test("Content-Length, chunked with extensions and trailers, 204, 304 and empty bodies, pipelined")
    func framing() throws {
        #expect(try Self.parse(Self.pipelined) == Self.expected)
    }

    @Test("byte-by-byte input gives the same responses")
    func byteByByte() throws {
        let splits = Array(0..<Self.pipelined.utf8.count)
        #expect(try Self.parse(Self.pipelined, splits: splits) == Self.expected)
    }

    @Test("any split into up to 8 reads gives the same responses")
    func randomSplits() async {
        let length = Self.pipelined.utf8.count
        await propertyCheck(count: 300, input: Gen.int(in: 0...length).array(of: 0...8)) { splits in
            let parsed = try Self.parse(Self.pipelined, splits: splits)
            #expect(parsed == Self.expected)
        }
    }

    @Test("a body without Content-Length or chunking ends with the connection")
    func closeDelimited() throws {
        let text = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: a\n\ndata: b\n\n"
        let open = try Self.parse(text, splits: [40, 60])
        #expect(open.responses.first?.body == "data: a\n\ndata: b\n\n")
        #expect(open.ended == 0)
        #expect(try Self.parse(text, finish: true).ended == 1)
    }

    @Test("headers are parsed case-insensitively with values trimmed")
    func headers() throws {
        var parser = HTTPResponseParser()
        var head: HTTPResponseHead?
        try Array("HTTP/1.1 201 Created\r\nETag:   \"7\"  \r\nX-Custom:a:b\r\nContent-Length: 0\r\n\r\n".utf8)
            .withUnsafeBytes { bytes in
                try parser.consume(bytes) { if case .head(let parsed) = $0 { head = parsed } }
            }
        #expect(head?.status == 201)
        #expect(head?.value(of: "etag") == "\"7\"")
        #expect(head?.value(of: "X-CUSTOM") == "a:b")
        #expect(parser.isIdle)
    }

    @Test(
        "malformed input is rejected with the reason",
        arguments: [
            ("HTTX/1.1 200 OK\r\n\r\n", "malformed status line"),
            ("HTTP/1.1 2000 OK\r\n\r\n", "malformed status line"),
            ("HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", "malformed header line"),
            ("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "invalid Content-Length"),
            ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "invalid chunk size"),
            ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcX", "chunk data not followed by CRLF"),
        ])
    func malformed(input: String, reason: String) {
        do {
            _ = try Self.parse(input)
            Issue.record("accepted \(input.debugDescription)")
        } catch {
            #expect("\(error)".contains(reason))
        }
    }

    @Test("a head larger than the bound is rejected")
    func headTooLarge() {
        var parser = HTTPResponseParser(maxHeadBytes: 64)
        let input = Array(("HTTP/1.1 200 OK\r\nX-Long: " + String(repeating: "a", count: 100) + "\r\n\r\n").utf8)
        #expect(throws: HTTPResponseParserError.headTooLarge(limit: 64)) {
            try input.withUnsafeBytes { try parser.consume($0) { _ in } }
        }
    }
}
