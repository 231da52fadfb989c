/// Turns syntactically valid header lines into framing and connection decisions (RFC 9112 §6–9).
enum HTTP1RequestSemantics {
    static func interpret(
        method: String, target: String, version: HTTP1Version, headers: [HTTP1Header]
    ) throws(HTTP1ScanStop) -> HTTP1RequestHead {
        var contentLength: Int?
        var sawTransferEncoding = false
        var codings: [String] = []
        var hostCount = 0
        var connectionOptions: [String] = []
        var expectations: [String] = []

        for header in headers {
            switch HTTP1FieldKind(header.name) {
            case .contentLength:
                guard contentLength == nil else { throw .invalid(.bad("duplicate Content-Length")) }
                contentLength = try parseContentLength(header.value)
            case .transferEncoding:
                sawTransferEncoding = true
                codings += HTTP1Syntax.listElements(header.value)
            case .host:
                hostCount += 1
                guard isValidHost(header.value) else { throw .invalid(.bad("invalid Host header")) }
            case .connection:
                connectionOptions += HTTP1Syntax.listElements(header.value)
            case .expect:
                expectations += HTTP1Syntax.listElements(header.value)
            case .other:
                break
            }
        }

        if hostCount > 1 { throw .invalid(.bad("multiple Host headers")) }
        if version == .http1_1 && hostCount == 0 { throw .invalid(.bad("missing Host header")) }

        let framing: HTTP1BodyFraming
        if sawTransferEncoding {
            if contentLength != nil { throw .invalid(.bad("both Content-Length and Transfer-Encoding")) }
            if version == .http1_0 { throw .invalid(.bad("Transfer-Encoding in an HTTP/1.0 request")) }
            guard codings.last == "chunked" else {
                throw .invalid(.bad("chunked must be the final transfer coding"))
            }
            guard codings.count == 1 else {
                let status = codings.dropLast().contains("chunked") ? 400 : 501
                throw .invalid(HTTP1ParseError(status: status, reason: "unsupported transfer coding"))
            }
            framing = .chunked
        } else if let contentLength {
            framing = .contentLength(contentLength)
        } else {
            framing = .none
        }

        var expectsContinue = false
        for expectation in expectations {
            guard expectation == "100-continue" else {
                throw .invalid(HTTP1ParseError(status: 417, reason: "unsupported expectation"))
            }
            expectsContinue = version == .http1_1
        }

        let keepAlive =
            if connectionOptions.contains("close") {
                false
            } else {
                version == .http1_1 || connectionOptions.contains("keep-alive")
            }
        return HTTP1RequestHead(
            method: method, target: target, version: version, headers: headers, framing: framing,
            keepAlive: keepAlive, expectsContinue: expectsContinue)
    }

    /// `1*DIGIT` only: no sign, no list, no spaces; at most 18 digits so it never overflows.
    static func parseContentLength(_ value: String) throws(HTTP1ScanStop) -> Int {
        let digits = value.utf8
        guard !digits.isEmpty, digits.count <= 18,
            digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") })
        else { throw .invalid(.bad("invalid Content-Length")) }
        return digits.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
    }

    /// `uri-host [ ":" port ]` (RFC 9110 §7.2): reg-name, IPv4 or an IP literal in brackets;
    /// whitespace, `/`, `@` and other delimiters are refused. An empty Host is allowed.
    static func isValidHost(_ value: String) -> Bool {
        value.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"):
                true
            case UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "!"),
                UInt8(ascii: "$"), UInt8(ascii: "&"), UInt8(ascii: "'"), UInt8(ascii: "("), UInt8(ascii: ")"),
                UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: ","), UInt8(ascii: ";"), UInt8(ascii: "="),
                UInt8(ascii: ":"), UInt8(ascii: "["), UInt8(ascii: "]"), UInt8(ascii: "%"):
                true
            default:
                false
            }
        }
    }
}

/// The header fields that decide framing and connection handling, recognised without allocating.
enum HTTP1FieldKind {
    case contentLength, transferEncoding, host, connection, expect, other

    init(_ name: String) {
        var name = name
        self = name.withUTF8 { bytes in
            switch bytes.count {
            case 4 where Self.matches(bytes, "host"): .host
            case 6 where Self.matches(bytes, "expect"): .expect
            case 10 where Self.matches(bytes, "connection"): .connection
            case 14 where Self.matches(bytes, "content-length"): .contentLength
            case 17 where Self.matches(bytes, "transfer-encoding"): .transferEncoding
            default: .other
            }
        }
    }

    private static func matches(_ bytes: UnsafeBufferPointer<UInt8>, _ lowercase: StaticString) -> Bool {
        lowercase.withUTF8Buffer { expected in
            zip(bytes, expected).allSatisfy { HTTP1Syntax.lowercased($0) == $1 }
        }
    }
}
