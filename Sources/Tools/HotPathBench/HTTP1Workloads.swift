import HTTP1

/// HTTP/1.1 request parsing as the connection handler does it: parse the head from the bytes
/// buffered so far, take a `Content-Length` body out of the same buffer, and continue with the
/// next pipelined head at the consumed offset.
enum HTTP1Workloads {
    /// A browser-style GET of a scope's state: `Host` plus 8 typical headers (≈ 480 bytes).
    static let getRequest = request(path: "/v1/scopes/canvas-demo")

    static func request(path: String) -> [UInt8] {
        Array(
            ("GET \(path) HTTP/1.1\r\n" + "Host: 127.0.0.1:8080\r\n"
                + "User-Agent: Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0\r\n"
                + "Accept: application/json, text/plain, */*\r\n" + "Accept-Language: en-US,en;q=0.5\r\n"
                + "Accept-Encoding: gzip, deflate, br, zstd\r\n" + "Referer: http://127.0.0.1:8080/editor/\r\n"
                + "Sec-Fetch-Mode: cors\r\n" + "Connection: keep-alive\r\n"
                + "Cookie: session=4f2a9c1e7b3d4a8f9e0c1b2a3d4e5f60\r\n" + "\r\n").utf8)
    }

    /// A change-set POST as a script sends it: head + a 300-byte JSON body (one `change` fragment,
    /// its `name` padded so the body is exactly 300 bytes).
    static let postRequest: (bytes: [UInt8], bodyLength: Int) = {
        let prefix =
            #"{"fragments":[{"type":"change","uuid":"5d3c1a2b-7e4f-4a6b-9c8d-0e1f2a3b4c5d","clsName":"Canvas","#
            + #""properties":{"name":""#
        let suffix = #""}}]}"#
        let name = String(repeating: "n", count: 300 - prefix.utf8.count - suffix.utf8.count)
        let body = Array((prefix + name + suffix).utf8)
        let head =
            "POST /v1/scopes/canvas-bench-0/changesets HTTP/1.1\r\n" + "Host: 127.0.0.1:8080\r\n"
            + "User-Agent: jetstream-bench/1\r\n" + "Accept: application/json\r\n"
            + "Content-Type: application/json\r\n" + "Content-Length: \(body.count)\r\n" + "\r\n"
        return (Array(head.utf8) + body, body.count)
    }()

    /// 16 GETs of different scopes in one buffer, as a pipelining client sends them.
    static let pipelined: [UInt8] = (0..<16).flatMap { request(path: "/v1/scopes/canvas-\($0)") }

    static func benchmarks() -> [MicroBenchmark] {
        let get = getRequest
        let post = postRequest
        let batch = pipelined
        return [
            MicroBenchmark(
                "http1.parse.get", "HTTP/1.1 parse: GET head, 9 header lines", bytesPerOp: get.count
            ) {
                guard case .complete(let head, _) = HTTP1RequestParser.parse(get) else { fatalError("GET rejected") }
                blackHole(head)
            },
            MicroBenchmark(
                "http1.parse.post", "HTTP/1.1 parse: POST head + take 300-byte body", bytesPerOp: post.bytes.count
            ) {
                blackHole(parsePost(post.bytes))
            },
            MicroBenchmark(
                "http1.parse.pipelined16", "HTTP/1.1 parse: 16 pipelined GETs in one buffer", bytesPerOp: batch.count,
                itemsPerOp: 16
            ) {
                blackHole(parseAll(batch))
            },
        ]
    }

    /// Head, then the body copied out of the input buffer (what `readBody` does for
    /// `Content-Length`).
    private static func parsePost(_ input: [UInt8]) -> (HTTP1RequestHead, [UInt8]) {
        guard case .complete(let head, let consumed) = HTTP1RequestParser.parse(input),
            case .contentLength(let length) = head.framing, consumed + length <= input.count
        else { fatalError("POST rejected") }
        var body: [UInt8] = []
        body.append(contentsOf: input[consumed..<consumed + length])
        return (head, body)
    }

    /// Parses every head in `input`, each from the previous one's end; returns how many.
    private static func parseAll(_ input: [UInt8]) -> Int {
        var start = 0
        var count = 0
        input.withUnsafeBytes { buffer in
            while start < buffer.count {
                guard
                    case .complete(let head, let consumed) = HTTP1RequestParser.parse(
                        UnsafeRawBufferPointer(rebasing: buffer[start...]))
                else { fatalError("pipelined GET rejected") }
                blackHole(head)
                start += consumed
                count += 1
            }
        }
        return count
    }
}
