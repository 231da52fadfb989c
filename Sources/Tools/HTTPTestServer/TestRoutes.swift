import Dispatch
import HTTPServer
import HTTPTypes
import Synchronization

/// The routes of the test server (see docs/engine.md, "HTTPTestServer contract").
enum TestRoutes {
    static let maxBytesRoute = 10 << 20

    /// A fixed 2560-byte JSON document.
    static let staticBody: [UInt8] = {
        let prefix = Array(#"{"kind":"static","padding":""#.utf8)
        let suffix = Array(#""}"#.utf8)
        return prefix + [UInt8](repeating: UInt8(ascii: "x"), count: 2560 - prefix.count - suffix.count) + suffix
    }()

    static func makeRouter(box: ServerBox) -> Router {
        var router = Router()
        let subscribers = EventBroadcaster()

        router.get("/health") { _, _ in .text("ok") }
        router.get("/static") { _, _ in .json(staticBody) }
        router.on(nil, "/bytes/{n}") { _, context in
            guard let text = context.parameters["n"], let count = Int(text), count >= 0, count <= maxBytesRoute else {
                throw HTTPError(.badRequest, "n must be an integer from 0 to \(maxBytesRoute)")
            }
            return HTTPServerResponse(
                status: .ok, headerFields: [.contentType: "application/octet-stream"],
                body: [UInt8](repeating: UInt8(ascii: "x"), count: count))
        }
        router.on(nil, "/echo") { request, _ in .json(echo(request)) }
        router.get("/delayed") { request, context in
            let milliseconds = max(Int(request.queryValue("ms") ?? "0") ?? 0, 0)
            let responder = context.responder
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(milliseconds)) {
                responder.respond(.text("delayed"))
            }
            return .deferred
        }
        router.get("/sse") { request, context in
            let count = max(Int(request.queryValue("count") ?? "3") ?? 3, 0)
            let interval = max(Int(request.queryValue("interval_ms") ?? "0") ?? 0, 0)
            let stream = context.openEventStream()
            Task {
                for index in 1...max(count, 1) where count > 0 {
                    if index > 1, interval > 0 { try? await Task.sleep(for: .milliseconds(interval)) }
                    if stream.isClosed { return }
                    stream.send(SSEEvent(id: String(index), event: "tick", data: #"{"i":\#(index)}"#))
                }
                stream.close()
            }
            return .streamOpened
        }
        router.get("/subscribe") { _, context in
            subscribers.add(context.openEventStream())
            return .streamOpened
        }
        router.post("/publish") { request, _ in
            let count = subscribers.broadcast(SSEEvent(data: String(decoding: request.body, as: UTF8.self)))
            return .json(#"{"subscribers":\#(count)}"#)
        }
        router.get("/stats") { _, _ in
            let stats = box.server?.stats
            return .json(
                #"{"openConnections":\#(stats?.openConnections ?? 0),"openStreams":\#(stats?.openStreams ?? 0),"#
                    + #""droppedSlowSubscribers":\#(stats?.droppedSlowSubscribers ?? 0),"#
                    + #""subscribers":\#(subscribers.subscriberCount),"requests":\#(stats?.requests ?? 0)}"#)
        }
        return router
    }

    /// The request as the server parsed it, for smuggling and conformance checks.
    static func echo(_ request: HTTPServerRequest) -> String {
        let headers = request.headerFields.map { "[\(JSONText.quote($0.name.rawName)),\(JSONText.quote($0.value))]" }
        return "{\"method\":\(JSONText.quote(request.method.rawValue)),"
            + "\"target\":\(JSONText.quote(request.target)),"
            + "\"version\":\(JSONText.quote(request.version)),"
            + "\"headers\":[\(headers.joined(separator: ","))],"
            + "\"body\":\(JSONText.quote(String(decoding: request.body, as: UTF8.self))),"
            + "\"bodyLength\":\(request.body.count)}"
    }
}

/// Lets routes read the server's counters although the router is built before the server.
final class ServerBox: Sendable {
    private let storage = Mutex<HTTPServer?>(nil)

    var server: HTTPServer? {
        get { storage.withLock { $0 } }
        set { storage.withLock { $0 = newValue } }
    }
}

/// Minimal JSON string quoting for the test server's hand-built documents.
enum JSONText {
    static func quote(_ text: String) -> String {
        var result = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case let control where control.value < 0x20:
                let hex = String(control.value, radix: 16)
                result += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }
}
