import HTTP1
import Testing

/// The resumable form of the head parser (`previouslyScanned`, picohttpparser's `last_len`): a
/// head fed in pieces gives the same outcome as one parse, at the same byte, while the bytes an
/// earlier call already scanned are not parsed again.
@Suite struct HTTP1ResumableParseTests {
    static let heads: [String] = [
        "GET /a?b=1 HTTP/1.1\r\nHost: example\r\nX-Trim:   padded value \t\r\n\r\n",
        "\r\n\r\nPOST /v1/scopes/x/changesets HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\n{}",
        "GET / HTTP/1.1\r\nHost: a\r\nLong: " + String(repeating: "v", count: 9000) + "\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\r\n\r\nGET /second HTTP/1.1\r\nHost: a\r\n\r\n",
        // Invalid, each at a different place: a later piece must not let them through.
        "GET / HTTP/1.1\r\nHost: a\r\nBad\nHeader: x\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\r\nBad\rHeader: x\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\r\nNo colon here\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
        "GET / HTTP/1.1\r\n\r\n",
    ]

    /// Feeds `bytes` in pieces of the given sizes (cycled) the way a connection does; returns the
    /// first outcome that is not `.incomplete` and how many bytes had arrived then.
    static func feed(
        _ bytes: [UInt8], pieces: [Int], limits: HTTP1ParserLimits = HTTP1ParserLimits()
    )
        -> (result: HTTP1ParseResult, arrived: Int)
    {
        var arrived = 0
        var scanned = 0
        var piece = 0
        while arrived < bytes.count {
            arrived = min(bytes.count, arrived + pieces[piece % pieces.count])
            piece += 1
            let result = bytes[0..<arrived].withUnsafeBytes {
                HTTP1RequestParser.parse($0, limits: limits, previouslyScanned: scanned)
            }
            guard result == .incomplete else { return (result, arrived) }
            scanned = arrived
        }
        return (.incomplete, arrived)
    }

    /// Where a head's outcome is known: the first prefix a whole parse answers for.
    static func oneParse(
        _ bytes: [UInt8], limits: HTTP1ParserLimits = HTTP1ParserLimits()
    )
        -> HTTP1ParseResult
    {
        HTTP1RequestParser.parse(bytes, limits: limits)
    }

    @Test("any split of a head gives the one-parse outcome, by the byte that ends the head", arguments: heads)
    func anySplit(_ text: String) {
        let bytes = Array(text.utf8)
        let expected = Self.oneParse(bytes)
        // The byte at which the outcome is settled: the end of the head for a complete one.
        var settledAt = bytes.count
        if case .complete(_, let consumed) = expected { settledAt = consumed }
        var generator = SplitMix(seed: UInt64(bytes.count))
        for pieces in [[1], [2], [3], [7], [64], [bytes.count]]
            + (0..<20).map({ _ in
                (0..<5).map { _ in 1 + Int(generator.next() % 40) }
            })
        {
            let (result, arrived) = Self.feed(bytes, pieces: pieces)
            #expect(result == expected, "pieces \(pieces)")
            if case .complete = expected { #expect(arrived >= settledAt, "pieces \(pieces)") }
        }
    }

    @Test("a bare LF or CR in a later piece is refused as it arrives, not at the end of the head")
    func bareLineEndsRefusedAtOnce() {
        let cases = [
            ("GET / HTTP/1.1\r\nHost: a\r\nX: 1\nY: 2", "LF"), ("GET / HTTP/1.1\r\nHost: a\r\nX: 1\rY: 2", "CR"),
        ]
        for (text, bad) in cases {
            let bytes = Array(text.utf8)
            // Settled by the bare LF itself, or by the byte after a CR (which shows it is bare).
            let lineEnd = bytes.lastIndex { $0 == 10 || $0 == 13 }!
            let settledAt = lineEnd + (bad == "LF" ? 1 : 2)
            let (result, arrived) = Self.feed(bytes, pieces: [1])
            guard case .invalid(let error) = result else {
                Issue.record("bare \(bad): \(result)")
                continue
            }
            #expect(error.status == 400)
            #expect(arrived == settledAt, "bare \(bad) refused when it showed, not at the end of the head")
        }
    }

    @Test("the bytes an earlier call scanned are not parsed again: only the new ones are looked at")
    func scannedBytesAreNotParsedAgain() {
        // A prefix a whole parse refuses (a space in the method), marked as already scanned: the new
        // bytes hold no line end, so the answer is incomplete without reading the prefix again.
        let prefix = Array("G T / HTTP/1.1\r\nHost: a\r\nX-Long: ".utf8)
        let bytes = prefix + Array(repeating: UInt8(ascii: "v"), count: 100)
        #expect(Self.oneParse(bytes) != .incomplete)
        let resumed = bytes.withUnsafeBytes { HTTP1RequestParser.parse($0, previouslyScanned: prefix.count) }
        #expect(resumed == .incomplete)
        // Once the head ends, it is parsed whole, and the prefix is refused after all.
        let ended = bytes + Array("\r\n\r\n".utf8)
        let final = ended.withUnsafeBytes { HTTP1RequestParser.parse($0, previouslyScanned: bytes.count) }
        #expect(final == Self.oneParse(ended))
    }

    @Test("a head that outgrows the limit is 431 when dribbled byte by byte")
    func tooLargeWhenDribbled() {
        let limits = HTTP1ParserLimits(maxHeaderBytes: 1024)
        let bytes = Array(("GET / HTTP/1.1\r\nHost: a\r\nX: " + String(repeating: "v", count: 2000)).utf8)
        let (result, arrived) = Self.feed(bytes, pieces: [1], limits: limits)
        guard case .invalid(let error) = result else {
            Issue.record("expected 431, got \(result)")
            return
        }
        #expect(error.status == 431)
        #expect(arrived == limits.maxHeaderBytes + 1)
    }
}
