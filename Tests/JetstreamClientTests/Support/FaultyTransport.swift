import Foundation
import JetstreamClient
import JetstreamJSON
import Synchronization

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// ``URLSessionTransport`` with faults injected on demand; the server stays real. It can hold
/// POSTs (so a local change is seen before the server has it), fail requests before they are
/// sent or lose their answers after the server acted on them, fail new event streams, and cut
/// the open ones (they end with an error, as a dropped connection does). It also records what
/// went through: stream requests, the events streamed, each POST's key and status.
///
/// ```swift
/// let transport = FaultyTransport()
/// transport.holdPosts()          // … check what the client shows before the server answers
/// transport.releasePosts()
/// transport.cutStreams()
/// ```
final class FaultyTransport: HTTPTransport {
    private let inner = URLSessionTransport()
    private let state = Mutex(State())

    private struct State {
        /// POSTs wait here while held (``holdPosts()``), until ``releasePosts()``.
        var postsHeld = false
        var heldPosts: [Int: CheckedContinuation<Void, Never>] = [:]
        var nextHeldPost = 0
        var failingRequests = 0
        var losingAnswers = 0
        /// A lost answer's failure waits here while held (``holdLostAnswers()``).
        var lostAnswersHeld = false
        var heldLostAnswers: [CheckedContinuation<Void, Never>] = []
        var failingStreams = 0
        var nextStreamID = 0
        var openStreams: [Int: AsyncThrowingStream<Data, any Error>.Continuation] = [:]
        var streamTexts: [Int: [UInt8]] = [:]
        var streamRequests: [ContinuousClock.Instant] = []
        var streamTargets: [(url: URL, lastEventID: String?)] = []
        var requestLines: [String] = []
        var exchanges: [Exchange] = []
        var answers: [String: [Int]] = [:]
        var sentKeys: Set<String> = []
    }

    /// From now on every POST waits before it is sent, until ``releasePosts()``: what a client
    /// shows before the server answers can be checked however slow the machine is (a fixed delay
    /// could run out first).
    func holdPosts() {
        state.withLock { $0.postsHeld = true }
    }

    /// Sends every held POST (and those to come) on their way.
    func releasePosts() {
        let held = state.withLock { state in
            state.postsHeld = false
            defer { state.heldPosts = [:] }
            return Array(state.heldPosts.values)
        }
        for post in held { post.resume() }
    }

    /// POSTs waiting in ``holdPosts()``.
    var heldPostCount: Int { state.withLock { $0.heldPosts.count } }

    /// Waits while POSTs are held; a cancelled request goes on at once (a stopped sync).
    private func waitWhileHeld() async {
        let id = state.withLock { state in
            state.nextHeldPost += 1
            return state.nextHeldPost
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (post: CheckedContinuation<Void, Never>) in
                let waits = state.withLock { state in
                    guard state.postsHeld, !Task.isCancelled else { return false }
                    state.heldPosts[id] = post
                    return true
                }
                if !waits { post.resume() }
            }
        } onCancel: {
            state.withLock { $0.heldPosts.removeValue(forKey: id) }?.resume()
        }
    }

    /// The next `count` requests (not streams) fail before they reach the server.
    func failRequests(_ count: Int) {
        state.withLock { $0.failingRequests = count }
    }

    /// The next `count` requests (not streams) reach the server, which acts on them, and then fail
    /// as if the connection dropped before the answer arrived.
    func loseAnswers(_ count: Int) {
        state.withLock { $0.losingAnswers = count }
    }

    /// From now on a lost answer (``loseAnswers(_:)``) is reported to the client only at
    /// ``releaseLostAnswers()``: what the client does with the stream meanwhile (the set's echo
    /// arriving before its POST fails) can be set up however slow the machine is.
    func holdLostAnswers() {
        state.withLock { $0.lostAnswersHeld = true }
    }

    /// Reports every held lost answer (and those to come) at once.
    func releaseLostAnswers() {
        let held = state.withLock { state in
            state.lostAnswersHeld = false
            defer { state.heldLostAnswers = [] }
            return state.heldLostAnswers
        }
        for answer in held { answer.resume() }
    }

    /// Lost answers waiting in ``holdLostAnswers()``.
    var heldLostAnswerCount: Int { state.withLock { $0.heldLostAnswers.count } }

    /// The next `count` stream requests fail before they reach the server (0 stops failing them).
    func failStreams(_ count: Int) {
        state.withLock { $0.failingStreams = count }
    }

    /// Ends every open event stream with a network error.
    func cutStreams() {
        let open = state.withLock { state in
            defer { state.openStreams = [:] }
            return Array(state.openStreams.values)
        }
        for continuation in open { continuation.finish(throwing: URLError(.networkConnectionLost)) }
    }

    /// When each stream request was made (failed ones included).
    var streamRequests: [ContinuousClock.Instant] { state.withLock { $0.streamRequests } }

    /// Each stream request's URL and `Last-Event-ID`, in order (failed ones included).
    var streamTargets: [(url: URL, lastEventID: String?)] { state.withLock { $0.streamTargets } }

    /// The `scope` query values of each stream request, in order.
    var streamScopes: [[String]] {
        streamTargets.map { target in
            (URLComponents(url: target.url, resolvingAgainstBaseURL: false)?.queryItems ?? [])
                .filter { $0.name == "scope" }.compactMap(\.value)
        }
    }

    /// Event streams open now.
    var openStreamCount: Int { state.withLock { $0.openStreams.count } }

    /// One request (not a stream): its line, its headers, and the status it got (nil: failed
    /// before an answer, or not answered yet).
    struct Exchange: Sendable {
        let line: String
        let headers: [String: String]
        var status: Int?
    }

    /// The requests whose line is `line` (`GET /v1/schema`), in order.
    func exchanges(_ line: String) -> [Exchange] {
        state.withLock { $0.exchanges.filter { $0.line == line } }
    }

    /// `METHOD path[?query]` of every request (not streams), in order.
    var requestLines: [String] { state.withLock { $0.requestLines } }

    /// How many events of type `name` the streams delivered.
    func eventCount(_ name: String) -> Int {
        let needle = Array("event: \(name)\n".utf8)
        return state.withLock { state in
            state.streamTexts.values.reduce(0) { count, text in count + Self.occurrences(of: needle, in: text) }
        }
    }

    /// The data of every event of type `name` the streams delivered, stream after stream, in order.
    func events(named name: String) -> [JSONValue] {
        let texts = state.withLock { state in state.streamTexts.sorted { $0.key < $1.key }.map(\.value) }
        return texts.flatMap { text in
            String(decoding: text, as: UTF8.self).components(separatedBy: "\n\n").compactMap { block -> JSONValue? in
                let lines = block.split(separator: "\n", omittingEmptySubsequences: false)
                guard lines.contains(where: { $0 == "event: \(name)" }) else { return nil }
                let data = lines.filter { $0.hasPrefix("data: ") }.map { $0.dropFirst(6) }.joined(separator: "\n")
                return try? JSONParser.parse(data)
            }
        }
    }

    /// Everything the streams delivered, one stream after the other (for failure messages).
    var streamedText: String {
        state.withLock { state in
            state.streamTexts.sorted { $0.key < $1.key }.map { String(decoding: $0.value, as: UTF8.self) }
                .joined(separator: "\n--- next stream ---\n")
        }
    }

    /// The statuses the server answered to each `Idempotency-Key` (lost answers included).
    var answers: [String: [Int]] { state.withLock { $0.answers } }

    /// Every `Idempotency-Key` a request was attempted with (answered or not).
    var sentKeys: Set<String> { state.withLock { $0.sentKeys } }

    func data(for request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        let (fail, exchange) = state.withLock { state in
            let query = request.url?.query.map { "?\($0)" } ?? ""
            let line = "\(request.httpMethod ?? "GET") \(request.url?.path ?? "")\(query)"
            state.requestLines.append(line)
            state.exchanges.append(Exchange(line: line, headers: request.allHTTPHeaderFields ?? [:]))
            if let key = request.value(forHTTPHeaderField: "Idempotency-Key") { state.sentKeys.insert(key) }
            defer { state.failingRequests = max(0, state.failingRequests - 1) }
            return (state.failingRequests > 0, state.exchanges.count - 1)
        }
        if request.httpMethod == "POST" { await waitWhileHeld() }
        if fail { throw URLError(.networkConnectionLost) }
        let (data, response) = try await inner.data(for: request)
        let lose = state.withLock { state in
            state.exchanges[exchange].status = response.statusCode
            if let key = request.value(forHTTPHeaderField: "Idempotency-Key") {
                state.answers[key, default: []].append(response.statusCode)
            }
            defer { state.losingAnswers = max(0, state.losingAnswers - 1) }
            return state.losingAnswers > 0
        }
        if lose {
            await withCheckedContinuation { (answer: CheckedContinuation<Void, Never>) in
                let waits = state.withLock { state in
                    guard state.lostAnswersHeld else { return false }
                    state.heldLostAnswers.append(answer)
                    return true
                }
                if !waits { answer.resume() }
            }
            throw URLError(.networkConnectionLost)
        }
        return (data, response)
    }

    func stream(for request: URLRequest) async throws -> (HTTPURLResponse, AsyncThrowingStream<Data, any Error>) {
        let fail = state.withLock { state in
            state.streamRequests.append(.now)
            if let url = request.url {
                state.streamTargets.append((url, request.value(forHTTPHeaderField: "Last-Event-ID")))
            }
            defer { state.failingStreams = max(0, state.failingStreams - 1) }
            return state.failingStreams > 0
        }
        if fail { throw URLError(.cannotConnectToHost) }
        let (response, chunks) = try await inner.stream(for: request)
        let (outer, continuation) = AsyncThrowingStream<Data, any Error>.makeStream()
        let id = state.withLock { state in
            state.nextStreamID += 1
            state.openStreams[state.nextStreamID] = continuation
            state.streamTexts[state.nextStreamID] = []
            return state.nextStreamID
        }
        let pump = Task { [self] in
            do {
                for try await chunk in chunks {
                    state.withLock { $0.streamTexts[id, default: []] += chunk }
                    continuation.yield(chunk)
                }
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
        continuation.onTermination = { [self] _ in
            pump.cancel()
            _ = state.withLock { $0.openStreams.removeValue(forKey: id) }
        }
        return (response, outer)
    }

    private static func occurrences(of needle: [UInt8], in text: [UInt8]) -> Int {
        guard text.count >= needle.count else { return 0 }
        var count = 0
        var index = 0
        while index + needle.count <= text.count {
            if text[index] == needle[0] && text[index..<index + needle.count].elementsEqual(needle) {
                count += 1
                index += needle.count
            } else {
                index += 1
            }
        }
        return count
    }
}
