import PropertyBased
import ServerSentEvents
import Testing

/// The event-stream parser against the WHATWG interpretation rules, in any read split.
@Suite("SSEParser")
struct SSEParserTests {
    struct Seen: Equatable {
        var type: String
        var id: String
        var data: String
    }

    static func events(_ text: String, splits: [Int] = []) -> [Seen] {
        let bytes = Array(text.utf8)
        var parser = SSEParser()
        var seen: [Seen] = []
        var start = 0
        for cut in (splits + [bytes.count]).sorted() where cut >= start && cut <= bytes.count {
            parser.consume(Array(bytes[start..<cut])) {
                seen.append(Seen(type: $0.type, id: $0.lastEventID, data: $0.text))
            }
            start = cut
        }
        return seen
    }

    /// What the gateway sends, with every line-ending style, comments, and fields the spec ignores.
    static let stream =
        "\u{FEFF}retry: 2000\r\n\r\n"
        + "event: snapshot\r\nid: 41\r\ndata: {\"version\":41}\r\n\r\n"
        + ": keep-alive\n\n"
        + "event: changeset\nid: 42\ndata: {\"a\":1,\ndata:  \"b\":2}\nunknown: field\n\n"
        + "event: changeset\rid: 43\rdata\r\r"
        + "data: no id or type, so the id persists\n\n"
        + "event: ignored because no data\nid: 44\n\n"
        + "id: bad\u{0}id\ndata: x\n\n"

    static let expected = [
        Seen(type: "snapshot", id: "41", data: "{\"version\":41}"),
        Seen(type: "changeset", id: "42", data: "{\"a\":1,\n \"b\":2}"),
        Seen(type: "changeset", id: "43", data: ""),
        Seen(type: "message", id: "43", data: "no id or type, so the id persists"),
        Seen(type: "message", id: "44", data: "x"),
    ]

    @Test("CRLF, LF and CR line endings, BOM, comments, multi-line data, id persistence, NUL ids ignored")
    func interpretation() {
        #expect(Self.events(Self.stream) == Self.expected)
    }

    @Test("byte-by-byte input gives the same events, including CRLF split across reads")
    func byteByByte() {
        #expect(Self.events(Self.stream, splits: Array(0..<Self.stream.utf8.count)) == Self.expected)
    }

    @Test("any split into up to 10 reads gives the same events")
    func randomSplits() async {
        let length = Self.stream.utf8.count
        await propertyCheck(count: 300, input: Gen.int(in: 0...length).array(of: 0...10)) { splits in
            #expect(Self.events(Self.stream, splits: splits) == Self.expected)
        }
    }

    @Test("a CR at the end of one read and LF at the start of the next end one line, not two")
    func splitCRLF() {
        var parser = SSEParser()
        var count = 0
        parser.consume(Array("data: a\r".utf8)) { _ in count += 1 }
        parser.consume(Array("\n\r".utf8)) { _ in count += 1 }
        #expect(count == 1)
        parser.consume(Array("\ndata: b\n\n".utf8)) { _ in count += 1 }
        #expect(count == 2)
    }

    @Test("retry and comments are tracked")
    func retryAndComments() {
        var parser = SSEParser()
        parser.consume(Array(": one\n: two\nretry: 1500\nretry: x\n\n".utf8)) { _ in }
        #expect(parser.retryMilliseconds == 1500)
        #expect(parser.comments == 2)
    }

    @Test("an event left without its blank line is not dispatched")
    func incompleteEvent() {
        #expect(Self.events("event: changeset\nid: 9\ndata: {}\n").isEmpty)
    }
}

extension SSEParserTests {
    @Test("without keepsData the same events dispatch with empty data, in any split")
    func withoutData() async {
        let expected = Self.expected.map { Seen(type: $0.type, id: $0.id, data: "") }
        let bytes = Array(Self.stream.utf8)
        await propertyCheck(count: 100, input: Gen.int(in: 0...bytes.count).array(of: 0...10)) { splits in
            var parser = SSEParser(keepsData: false)
            var seen: [Seen] = []
            var start = 0
            for cut in (splits + [bytes.count]).sorted() where cut >= start {
                parser.consume(Array(bytes[start..<cut])) {
                    seen.append(Seen(type: $0.type, id: $0.lastEventID, data: $0.text))
                }
                start = cut
            }
            #expect(seen == expected)
        }
    }
}

extension SSEParserTests {
    @Test("a line longer than maxLineBytes is truncated there, in any split, and parsing goes on")
    func longLinesAreTruncated() {
        let text = "data: 0123456789\n\ndata: ok\n\n"
        let bytes = Array(text.utf8)
        for cut in 0...bytes.count {
            var parser = SSEParser(maxLineBytes: 8)
            var seen: [String] = []
            parser.consume(Array(bytes[..<cut])) { seen.append($0.text) }
            parser.consume(Array(bytes[cut...])) { seen.append($0.text) }
            #expect(seen == ["01", "ok"], "split at \(cut)")
        }
    }

    @Test("a client can raise maxLineBytes above the default: a 17 MiB data line arrives whole")
    func largerBoundKeepsLongLines() {
        #expect(SSEParser().maxLineBytes == SSEParser.defaultMaxLineBytes)
        let payload = [UInt8](repeating: UInt8(ascii: "x"), count: SSEParser.defaultMaxLineBytes + 1024 * 1024)
        let stream = Array("event: snapshot\ndata: ".utf8) + payload + Array("\n\n".utf8)
        var parser = SSEParser(maxLineBytes: 64 * 1024 * 1024)
        var seen: [ServerSentEvent] = []
        let half = stream.count / 2
        parser.consume(Array(stream[..<half])) { seen.append($0) }
        parser.consume(Array(stream[half...])) { seen.append($0) }
        #expect(seen.count == 1)
        #expect(seen.first?.type == "snapshot")
        #expect(seen.first?.data.count == payload.count)
        let intact = seen.first?.data == payload  // a Bool: a failure must not print 17 MiB
        #expect(intact)
    }
}
