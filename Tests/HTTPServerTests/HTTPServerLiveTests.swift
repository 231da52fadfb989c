import Dispatch
import Glibc
import HTTPServer
import HTTPTypes
import TestSupport
import Testing

/// An in-process server on an ephemeral loopback port, driven over real sockets.
@Suite struct HTTPServerLiveTests {
    static func router() -> Router {
        var router = Router()
        router.get("/now") { _, _ in .text("now") }
        router.get("/async") { request, context in
            context.answerAsync {
                try await Task.sleep(for: .milliseconds(50))
                return .text("async \(request.queryValue("n") ?? "")")
            }
        }
        router.get("/later") { _, context in
            let responder = context.responder
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(100)) {
                responder.respond(.text("later"))
            }
            return .deferred
        }
        router.post("/echo") { request, _ in
            HTTPServerResponse(status: .ok, body: request.body)
        }
        router.get("/fail") { _, _ in throw HTTPError(.conflict, "nope") }
        router.get("/forgot") { _, _ in .deferred }
        router.get("/peer") { _, context in .text(context.remoteAddress) }
        router.get("/items/{id}") { _, context in .text("item \(context.parameters["id"] ?? "?")") }
        return router
    }

    @Test func answersImmediateAsyncAndDeferredHandlers() async throws {
        try await withTestServer(router: Self.router()) { _, port in
            let client = try HTTPTestClient(port: port)
            client.send("GET /now HTTP/1.1\r\nHost: a\r\n\r\n")
            let now = try #require(await client.readResponse())
            #expect(now.status == 200)
            #expect(now.text == "now")
            #expect(now.header("Content-Length") == "3")
            #expect(now.header("Date") != nil)
            client.send("GET /async?n=1 HTTP/1.1\r\nHost: a\r\n\r\n")
            #expect(await client.readResponse()?.text == "async 1")
            client.send("GET /later HTTP/1.1\r\nHost: a\r\n\r\n")
            #expect(await client.readResponse()?.text == "later")
            client.send("GET /items/a%2Fb HTTP/1.1\r\nHost: a\r\n\r\n")
            #expect(await client.readResponse()?.text == "item a/b")
            client.send("GET /peer HTTP/1.1\r\nHost: a\r\n\r\n")
            let peer = await client.readResponse()?.text ?? ""
            #expect(peer.hasPrefix("127.0.0.1:") && Int(peer.dropFirst(10)) != nil, "\(peer)")
        }
    }

    @Test func pipelinedResponsesComeBackInRequestOrder() async throws {
        try await withTestServer(router: Self.router()) { _, port in
            let client = try HTTPTestClient(port: port)
            client.send(
                "GET /later HTTP/1.1\r\nHost: a\r\n\r\nGET /async?n=2 HTTP/1.1\r\nHost: a\r\n\r\n"
                    + "GET /now HTTP/1.1\r\nHost: a\r\n\r\nPOST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\n\r\nbody"
                    + "HEAD /now HTTP/1.1\r\nHost: a\r\n\r\nGET /now HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
            #expect(await client.readResponse()?.text == "later")
            #expect(await client.readResponse()?.text == "async 2")
            #expect(await client.readResponse()?.text == "now")
            #expect(await client.readResponse()?.text == "body")
            let head = try #require(await client.readResponse(isHead: true))
            #expect(head.header("Content-Length") == "3")
            #expect(head.body.isEmpty)
            let last = try #require(await client.readResponse())
            #expect(last.text == "now")
            #expect(last.header("Connection") == "close")
            #expect(await client.readToEnd().isEmpty)
        }
    }

    @Test func handlerErrorsAndMissingAnswersBecomeResponses() async throws {
        try await withTestServer(router: Self.router()) { _, port in
            let client = try HTTPTestClient(port: port)
            client.send("GET /fail HTTP/1.1\r\nHost: a\r\n\r\n")
            let failed = try #require(await client.readResponse())
            #expect(failed.status == 409)
            #expect(failed.text == "nope\n")
            client.send("GET /forgot HTTP/1.1\r\nHost: a\r\n\r\n")
            #expect(await client.readResponse()?.status == 500)
            client.send("PUT /now HTTP/1.1\r\nHost: a\r\n\r\n")
            let wrongMethod = try #require(await client.readResponse())
            #expect(wrongMethod.status == 405)
            #expect(wrongMethod.header("Allow") == "GET")
            // A method no standard names is not implemented, and the answer does not repeat it.
            client.send("BREWCOFFEE /now HTTP/1.1\r\nHost: a\r\n\r\n")
            let unknownMethod = try #require(await client.readResponse())
            #expect(unknownMethod.status == 501)
            #expect(!unknownMethod.text.contains("BREWCOFFEE"))
            client.send("GET /missing HTTP/1.1\r\nHost: a\r\n\r\n")
            #expect(await client.readResponse()?.status == 404)
        }
    }

    @Test func chunkedBodiesAndExpectContinue() async throws {
        try await withTestServer(router: Self.router()) { _, port in
            let client = try HTTPTestClient(port: port)
            client.send(
                "POST /echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nWiki\r\n5;x=1\r\npedia\r\n0\r\n\r\n"
            )
            #expect(await client.readResponse()?.text == "Wikipedia")
            client.send("POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
            #expect(await client.read(untilContains: "\r\n\r\n") == "HTTP/1.1 100 Continue\r\n\r\n")
            client.send("hello")
            #expect(await client.readResponse()?.text == "hello")
        }
    }

    @Test func rejectsBadRequestsWithTheRightStatusAndCloses() async throws {
        let cases: [(String, Int)] = [
            ("POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400),
            ("GET /now HTTP/1.1\r\nHost: a\r\nX: y\r\n z\r\n\r\n", 400),
            ("POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 100\r\n\r\n", 413),
            ("POST /echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n41\r\n", 413),
            ("GET /now HTTP/1.1\r\nHost: a\r\nX: \(String(repeating: "a", count: 600))\r\n\r\n", 431),
            ("GET /\(String(repeating: "a", count: 300)) HTTP/1.1\r\nHost: a\r\n\r\n", 414),
            ("GET /now HTTP/1.1\r\n\r\n", 400),
        ]
        let limits: (inout HTTPServerConfiguration) -> Void = {
            $0.maxBodyBytes = 64
            $0.maxHeaderBytes = 512
            $0.maxTargetBytes = 256
        }
        try await withTestServer(configure: limits, router: Self.router()) { _, port in
            for (request, status) in cases {
                let client = try HTTPTestClient(port: port)
                client.send(request)
                let response = try #require(await client.readResponse(), "\(request.prefix(60))")
                #expect(response.status == status, "\(request.prefix(60))")
                #expect(response.header("Connection") == "close")
                #expect(await client.readToEnd().isEmpty)
            }
        }
    }

    @Test func slowHeadGets408AndIdleConnectionsClose() async throws {
        let timeouts: (inout HTTPServerConfiguration) -> Void = {
            $0.headerReadTimeout = .seconds(1)
            $0.idleTimeout = .seconds(1)
        }
        try await withTestServer(configure: timeouts, router: Self.router()) { server, port in
            let slow = try HTTPTestClient(port: port)
            slow.send("GET /now HTTP/1.1\r\nHost: a\r\n")
            #expect(await slow.readResponse()?.status == 408)
            let idle = try HTTPTestClient(port: port)
            idle.send("GET /now HTTP/1.1\r\nHost: a\r\n\r\n")
            #expect(await idle.readResponse()?.status == 200)
            #expect(await idle.socket.waitForClose())
            #expect(await waitUntil { server.stats.openConnections == 0 })
        }
    }

    @Test func http10ClosesUnlessKeepAliveIsAsked() async throws {
        try await withTestServer(router: Self.router()) { _, port in
            let keepAlive = try HTTPTestClient(port: port)
            keepAlive.send("GET /now HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
            let first = try #require(await keepAlive.readResponse())
            #expect(first.header("Connection") == "keep-alive")
            keepAlive.send("GET /now HTTP/1.0\r\n\r\n")
            let second = try #require(await keepAlive.readResponse())
            #expect(second.header("Connection") == "close")
            #expect(await keepAlive.readToEnd().isEmpty)
        }
    }

    @Test func aClientThatDoesNotReadCannotMakeTheServerBufferWithoutBound() async throws {
        var router = Router()
        router.get("/static") { _, _ in .text(String(repeating: "x", count: 2500)) }
        try await withTestServer(router: router) { _, port in
            let client = try HTTPTestClient(port: port)
            let flags = fcntl(client.socket.descriptor, F_GETFL)
            _ = fcntl(client.socket.descriptor, F_SETFL, flags | O_NONBLOCK)
            let request = Array(String(repeating: "GET /static HTTP/1.1\r\nHost: a\r\n\r\n", count: 1000).utf8)
            var sent = 0
            var refused = false
            // Bounded: at most 200 MB, and give the server time to drain its side between refusals.
            var idleRounds = 0
            while sent < 200_000_000, idleRounds < 200 {
                let written = request.withUnsafeBytes {
                    Glibc.send(client.socket.descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
                }
                if written > 0 {
                    sent += written
                    idleRounds = 0
                } else {
                    refused = true
                    idleRounds += 1
                    try await Task.sleep(for: .milliseconds(5))
                }
            }
            #expect(refused)
            #expect(sent < 200_000_000, "the server kept reading \(sent) bytes of requests it could not answer")
        }
    }

    @Test func largeBodiesArriveWholeInBothFramings() async throws {
        try await withTestServer(router: Self.router()) { _, port in
            let client = try HTTPTestClient(port: port)
            let body = String((0..<900_000).map { Character(UnicodeScalar(UInt8(97 + $0 % 26))) })
            client.send("POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: \(body.utf8.count)\r\n\r\n" + body)
            #expect(await client.readResponse()?.text == body)
            let chunks = stride(from: 0, to: body.utf8.count, by: 70_000).map { start -> String in
                let piece = Array(body.utf8)[start..<min(start + 70_000, body.utf8.count)]
                return String(piece.count, radix: 16) + "\r\n" + String(decoding: piece, as: UTF8.self) + "\r\n"
            }
            client.send(
                "POST /echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks.joined() + "0\r\n\r\n")
            #expect(await client.readResponse()?.text == body)
        }
    }
}
