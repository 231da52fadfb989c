import Foundation
import Hummingbird
import NIOCore
import NIOFoundationCompat

/// An error answered as `application/problem+json` with the gateway's `type` values.
struct Problem: HTTPResponseError {
    let status: HTTPResponse.Status
    let type: String
    let title: String
    let detail: String
    var fragmentReplies: [FragmentReply]?

    private struct Body: Encodable {
        let type: String
        let title: String
        let status: Int
        let detail: String
        let fragmentReplies: [FragmentReply]?
    }

    func response(from request: Request, context: some RequestContext) throws -> Response {
        let body = Body(type: type, title: title, status: status.code, detail: detail, fragmentReplies: fragmentReplies)
        let encoder = JSONEncoder()
        encoder.outputFormatting = .withoutEscapingSlashes
        let buffer = try encoder.encodeAsByteBuffer(body, allocator: ByteBufferAllocator())
        return Response(
            status: status, headers: [.contentType: "application/problem+json"], body: ResponseBody(byteBuffer: buffer))
    }

    static func notFound(_ detail: String) -> Problem {
        Problem(status: .notFound, type: "/problems/not-found", title: "Not found", detail: detail)
    }

    static func badRequest(_ detail: String) -> Problem {
        Problem(status: .badRequest, type: "/problems/bad-request", title: "Bad request", detail: detail)
    }

    static func invalidJSON(_ detail: String) -> Problem {
        Problem(
            status: .badRequest, type: "/problems/invalid-json", title: "The body is not valid JSON",
            detail: "the body is not valid JSON: \(detail)")
    }

    static func scopeExists(_ name: String) -> Problem {
        Problem(
            status: .conflict, type: "/problems/scope-exists", title: "The scope already exists",
            detail: "scope '\(name)' already exists")
    }

    static func rejected(_ detail: String, _ replies: [FragmentReply]) -> Problem {
        Problem(
            status: .unprocessableContent, type: "/problems/invalid-change-set", title: "Change set rejected",
            detail: detail, fragmentReplies: replies)
    }
}
