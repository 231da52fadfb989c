/// Why a response could not be parsed; the load generator counts these as transport errors.
public enum HTTPResponseParserError: Error, Sendable, Hashable, CustomStringConvertible {
    case headTooLarge(limit: Int)
    case malformedStatusLine(String)
    case malformedHeader(String)
    case invalidContentLength(String)
    case invalidChunkSize
    case missingChunkTerminator

    public var description: String {
        switch self {
        case .headTooLarge(let limit): "response head larger than \(limit) bytes"
        case .malformedStatusLine(let line): "malformed status line: \(line.debugDescription)"
        case .malformedHeader(let line): "malformed header line: \(line.debugDescription)"
        case .invalidContentLength(let value): "invalid Content-Length: \(value.debugDescription)"
        case .invalidChunkSize: "invalid chunk size line in a chunked body"
        case .missingChunkTerminator: "chunk data not followed by CRLF"
        }
    }
}
