import HTTP1
import Testing

@Suite struct HTTP1RequestParserTests {
    static let simple = Array("GET /a?b=1 HTTP/1.1\r\nHost: example\r\nX-Trim:   padded value \t\r\n\r\n".utf8)

    func parse(_ text: String, limits: HTTP1ParserLimits = HTTP1ParserLimits()) -> HTTP1ParseResult {
        HTTP1RequestParser.parse(Array(text.utf8), limits: limits)
    }

    func status(_ text: String, limits: HTTP1ParserLimits = HTTP1ParserLimits()) -> Int? {
        if case .invalid(let error) = parse(text, limits: limits) { return error.status }
        return nil
    }

    @Test func parsesRequestLineAndHeaders() throws {
        guard case .complete(let head, let consumed) = HTTP1RequestParser.parse(Self.simple) else {
            Issue.record("expected a complete head")
            return
        }
        #expect(consumed == Self.simple.count)
        #expect(head.method == "GET")
        #expect(head.target == "/a?b=1")
        #expect(head.version == .http1_1)
        #expect(
            head.headers == [
                HTTP1Header(name: "Host", value: "example"), HTTP1Header(name: "X-Trim", value: "padded value"),
            ])
        #expect(head.framing == .none)
        #expect(head.keepAlive)
        #expect(!head.expectsContinue)
    }

    @Test func everyStrictPrefixIsIncomplete() {
        for length in 0..<Self.simple.count {
            let result = HTTP1RequestParser.parse(Array(Self.simple[0..<length]))
            #expect(result == .incomplete, "prefix of \(length) bytes")
        }
    }

    @Test func byteByByteFeedingCompletesExactlyAtTheEnd() {
        var buffer: [UInt8] = []
        var completedAt: Int?
        for byte in Self.simple {
            buffer.append(byte)
            if case .complete = HTTP1RequestParser.parse(buffer) {
                completedAt = buffer.count
                break
            }
        }
        #expect(completedAt == Self.simple.count)
    }

    @Test func acceptsHostForms() {
        for host in ["example.com", "example.com:8080", "127.0.0.1:1", "[::1]:8080", ""] {
            guard case .complete = parse("GET / HTTP/1.1\r\nHost: \(host)\r\n\r\n") else {
                Issue.record("rejected Host \(host)")
                continue
            }
        }
    }

    @Test func leavesPipelinedBytesUnconsumed() {
        let first = "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\n"
        let text = first + "abcGET / HTTP/1.1\r\nHost: a\r\n\r\n"
        guard case .complete(let head, let consumed) = parse(text) else {
            Issue.record("expected a complete head")
            return
        }
        #expect(consumed == first.utf8.count)
        #expect(head.framing == .contentLength(3))
    }

    @Test func skipsEmptyLinesBeforeTheRequestLine() {
        guard case .complete(let head, let consumed) = parse("\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n") else {
            Issue.record("expected a complete head")
            return
        }
        #expect(head.method == "GET")
        #expect(consumed == 31)
    }

    @Test func framingAndConnectionSemantics() {
        if case .complete(let head, _) = parse("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: Chunked\r\n\r\n") {
            #expect(head.framing == .chunked)
        } else {
            Issue.record("chunked request rejected")
        }
        if case .complete(let head, _) = parse("GET / HTTP/1.0\r\n\r\n") {
            #expect(!head.keepAlive)
            #expect(head.version == .http1_0)
        } else {
            Issue.record("HTTP/1.0 request without Host rejected")
        }
        if case .complete(let head, _) = parse("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n") {
            #expect(head.keepAlive)
        } else {
            Issue.record("HTTP/1.0 keep-alive rejected")
        }
        // A single token (the fast path without a split) and lists mean the same, in any case.
        for (value, keepAlive) in [("CLOSE", false), ("close ", false), ("keep-alive", true), ("", true)] {
            if case .complete(let head, _) = parse("GET / HTTP/1.1\r\nHost: a\r\nConnection: \(value)\r\n\r\n") {
                #expect(head.keepAlive == keepAlive, "Connection: \(value)")
            } else {
                Issue.record("Connection: \(value) rejected")
            }
        }
        if case .complete(let head, _) = parse("GET / HTTP/1.1\r\nHost: a\r\nConnection: foo, close\r\n\r\n") {
            #expect(!head.keepAlive)
        } else {
            Issue.record("Connection: close rejected")
        }
        if case .complete(let head, _) = parse(
            "PUT / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\n")
        {
            #expect(head.expectsContinue)
        } else {
            Issue.record("Expect: 100-continue rejected")
        }
    }

    static let rejected: [(String, Int)] = [
        ("GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 3, 3\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: a\r\nContent-Length: +3\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: a\r\nContent-Length:\r\n\r\n", 400),
        ("GET / HTTP/1.1\nHost: a\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: a\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: a\r\n\n", 400),
        ("GET / HTTP/1.1\r\nHost: a\rX: b\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n b\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\n Host: a\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost : a\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost\t: a\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHo(st: a\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\n: a\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: a\u{01}b\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400),
        ("GET / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
        ("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", 400),
        ("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501),
        ("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
        ("G(T / HTTP/1.1\r\nHost: a\r\n\r\n", 400),
        ("GET  / HTTP/1.1\r\nHost: a\r\n\r\n", 400),
        ("GET /\u{7F} HTTP/1.1\r\nHost: a\r\n\r\n", 400),
        ("GET /\r\nHost: a\r\n\r\n", 400),
        ("GET / HTTX/1.1\r\nHost: a\r\n\r\n", 400),
        ("GET / HTTP/1.1 \r\nHost: a\r\n\r\n", 400),
        ("GET / HTTP/2.0\r\nHost: a\r\n\r\n", 505),
        ("GET / HTTP/1.1\r\nHost: a\r\nExpect: something\r\n\r\n", 417),
        ("\n\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: a b\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: a/b\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: user@a\r\n\r\n", 400),
        // RFC 9112 §3.2: only origin-, absolute-, authority- (CONNECT) and asterisk-form targets.
        ("GET echo HTTP/1.1\r\nHost: a\r\n\r\n", 400),
        ("GET /echo#frag HTTP/1.1\r\nHost: a\r\n\r\n", 400),
        ("GET /caf\u{E9} HTTP/1.1\r\nHost: a\r\n\r\n", 400),
        ("GET ** HTTP/1.1\r\nHost: a\r\n\r\n", 400),
        ("GET 1http://a/ HTTP/1.1\r\nHost: a\r\n\r\n", 400),
    ]

    @Test(arguments: [
        "GET / HTTP/1.1\r\nHost: a\r\n\r\n", "GET /a%20b?q=1 HTTP/1.1\r\nHost: a\r\n\r\n",
        "OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n", "GET http://a/b HTTP/1.1\r\nHost: a\r\n\r\n",
        "CONNECT a:443 HTTP/1.1\r\nHost: a:443\r\n\r\n",
    ])
    func acceptsEveryTargetForm(_ request: String) {
        guard case .complete = parse(request) else {
            Issue.record("rejected \(request.debugDescription)")
            return
        }
    }

    @Test(arguments: rejected)
    func rejectsWithStatus(_ request: String, _ expected: Int) {
        #expect(status(request) == expected, "\(request.debugDescription)")
    }

    @Test func headerSectionOverTheLimitIs431EvenWhenIncomplete() {
        let limits = HTTP1ParserLimits(maxHeaderBytes: 100)
        #expect(status("GET / HTTP/1.1\r\nHost: a\r\nX: " + String(repeating: "a", count: 200), limits: limits) == 431)
        #expect(
            status("GET / HTTP/1.1\r\nHost: a\r\nX: " + String(repeating: "a", count: 200) + "\r\n\r\n", limits: limits)
                == 431)
        #expect(
            parse("GET / HTTP/1.1\r\nHost: a\r\nX: " + String(repeating: "a", count: 40), limits: limits) == .incomplete
        )
    }

    @Test func tooManyHeadersIs431() {
        let headers = (0..<5).map { "X-\($0): v\r\n" }.joined()
        #expect(
            status("GET / HTTP/1.1\r\nHost: a\r\n\(headers)\r\n", limits: HTTP1ParserLimits(maxHeaderCount: 4)) == 431)
    }

    @Test func targetOverTheLimitIs414EvenWhenIncomplete() {
        let limits = HTTP1ParserLimits(maxTargetBytes: 64)
        let long = "/" + String(repeating: "a", count: 100)
        #expect(status("GET \(long)", limits: limits) == 414)
        #expect(status("GET \(long) HTTP/1.1\r\nHost: a\r\n\r\n", limits: limits) == 414)
    }

    @Test func invalidInputNeverCrashes() {
        // Deterministic pseudo-random bytes around a valid request: only the outcome kind matters.
        var generator = SplitMix(seed: 42)
        for _ in 0..<2000 {
            var bytes = Self.simple
            for _ in 0..<3 {
                let position = Int(generator.next() % UInt64(bytes.count))
                bytes[position] = UInt8(truncatingIfNeeded: generator.next())
            }
            switch HTTP1RequestParser.parse(bytes) {
            case .complete(_, let consumed): #expect(consumed <= bytes.count)
            case .incomplete: break
            case .invalid(let error): #expect([400, 417, 431, 501, 505].contains(error.status))
            }
        }
    }
}

struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var value = state
        value = (value ^ (value >> 30)) &* 0xBF58_476D_1CE4_E5B9
        value = (value ^ (value >> 27)) &* 0x94D0_49BB_1331_11EB
        return value ^ (value >> 31)
    }
}
