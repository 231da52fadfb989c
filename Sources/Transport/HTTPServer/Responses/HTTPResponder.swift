import HTTPTypes
import SocketLoop
import Synchronization

/// The one-shot answer to a request: ``respond(_:)`` with a response, or ``openEventStream(headers:)``.
/// Call it at once from the handler or later from any thread (for example after a store commit);
/// the first answer wins and later ones are ignored. A responder dropped without an answer sends 500.
///
/// ```swift
/// router.post("/v1/things") { request, context, responder in
///     store.commit(request.body) { outcome in responder.respond(.json(outcome.json)) }
/// }
/// ```
public final class HTTPResponder: Sendable {
    let channel: any HTTPResponseChannel
    /// The loop that owns the request's connection.
    public let loop: EventLoop
    let requestID: UInt64
    let renderError: @Sendable (HTTPResponse.Status, String) -> HTTPServerResponse
    let onAnswer: (@Sendable (HTTPResponse.Status, Int, Bool) -> Void)?
    /// Charges large bodies (``HTTPServerConfiguration/maxUnsentBytes``); nil: no bound.
    let unsentBudget: UnsentResponseBudget?
    /// Whether an answer that does not fit the budget may become 503 (a safe request: nothing was done).
    let mayRefuseWhenBusy: Bool
    private let answered = Atomic<Bool>(false)

    init(
        channel: any HTTPResponseChannel, loop: EventLoop, requestID: UInt64,
        renderError: @escaping @Sendable (HTTPResponse.Status, String) -> HTTPServerResponse = {
            HTTPError($0, $1).response
        },
        onAnswer: (@Sendable (HTTPResponse.Status, Int, Bool) -> Void)? = nil,
        unsentBudget: UnsentResponseBudget? = nil, mayRefuseWhenBusy: Bool = false
    ) {
        self.channel = channel
        self.loop = loop
        self.requestID = requestID
        self.renderError = renderError
        self.onAnswer = onAnswer
        self.unsentBudget = unsentBudget
        self.mayRefuseWhenBusy = mayRefuseWhenBusy
    }

    deinit {
        if !answered.load(ordering: .acquiring) {
            let channel = self.channel
            let requestID = self.requestID
            let response = renderError(.internalServerError, "the handler did not respond")
            onAnswer?(response.status, response.bodyCount, false)
            loop.execute { channel.deliver(response, for: requestID) }
        }
    }

    /// Whether an answer was given.
    public var hasResponded: Bool { answered.load(ordering: .acquiring) }

    /// Sends `response` (from any thread); returns false if the request was already answered.
    /// From another thread the answer jumps the loop's queue of pending work and is written at
    /// once (``SocketLoop/EventLoop/executeUrgently(_:)``).
    @discardableResult
    public func respond(_ response: HTTPServerResponse) -> Bool {
        guard claim() else { return false }
        let response = charged(response)
        onAnswer?(response.status, response.bodyCount, false)
        let channel = self.channel
        let requestID = self.requestID
        if loop.inEventLoop {
            channel.deliver(response, for: requestID)
        } else {
            // Ahead of queued stream writes: a writer's answer must not wait for the fan-out of
            // its own change set to thousands of subscribers on the same loop.
            loop.executeUrgently { channel.deliver(response, for: requestID) }
        }
        return true
    }

    /// The `503` a body of `count` bytes would be answered with now for the unsent-bytes budget,
    /// nil when it would be sent: a handler can ask before it builds a large body that would only
    /// be thrown away. The budget moves meanwhile, so the answer still decides.
    ///
    /// ```swift
    /// if let busy = context.responder.refusalForUnsentBudget(bodyOf: page.byteCount) { return busy }
    /// ```
    public func refusalForUnsentBudget(bodyOf count: Int) -> HTTPServerResponse? {
        guard let unsentBudget, mayRefuseWhenBusy, count >= UnsentResponseBudget.chargedBodySize,
            !unsentBudget.fits(count)
        else { return nil }
        return busy()
    }

    /// Charges a large per-request body to the unsent-bytes budget, or — when it does not fit and
    /// the request was safe — answers 503 with `Retry-After` instead (before the access log sees it).
    private func charged(_ response: HTTPServerResponse) -> HTTPServerResponse {
        guard let unsentBudget, response.sharedBody == nil,
            response.body.count >= UnsentResponseBudget.chargedBodySize
        else { return response }
        var response = response
        if let charge = unsentBudget.charge(response.body.count, refusable: mayRefuseWhenBusy) {
            response.unsentCharge = charge
            return response
        }
        return busy()
    }

    private func busy() -> HTTPServerResponse {
        var busy = renderError(
            .serviceUnavailable, "unsent responses exceed the server's bound (--max-unsent-bytes); retry shortly")
        busy.head.headerFields[.retryAfter] = "1"
        return busy
    }

    /// Answers with `200` and `text/event-stream` and returns the stream to write events to.
    /// `headers` are added to the response (`Content-Type`, `Cache-Control: no-cache` and
    /// `X-Accel-Buffering: no` are set unless given). If the request was already answered the
    /// stream is returned closed.
    public func openEventStream(headers: HTTPFields = [:]) -> EventStream {
        let stream = EventStream(loop: loop)
        guard claim() else {
            loop.executeOrRunNow { stream.didClose() }
            return stream
        }
        var head = HTTPResponse(status: .ok, headerFields: headers)
        if head.headerFields[.contentType] == nil { head.headerFields[.contentType] = "text/event-stream" }
        if head.headerFields[.cacheControl] == nil { head.headerFields[.cacheControl] = "no-cache" }
        if let accel = HTTPField.Name("X-Accel-Buffering"), head.headerFields[accel] == nil {
            head.headerFields[accel] = "no"
        }
        onAnswer?(.ok, 0, true)
        let channel = self.channel
        let requestID = self.requestID
        loop.executeOrRunNow { [head] in
            if !channel.openEventStream(head, for: requestID, stream: stream) { stream.didClose() }
        }
        return stream
    }

    private func claim() -> Bool {
        answered.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
    }
}

/// The protocol side a request's answer goes to: the HTTP/1 connection, or (later) an HTTP/2
/// stream. Called only on the channel's loop thread. This is the seam the HTTP/2 integration
/// implements so that handlers, ``HTTPResponder`` and ``EventStream`` stay protocol-neutral.
protocol HTTPResponseChannel: AnyObject, Sendable {
    /// Sends `response` for request `requestID`; ignored when that request is no longer current.
    func deliver(_ response: HTTPServerResponse, for requestID: UInt64)
    /// Sends the head of an event stream for `requestID` and attaches `stream` to a sink that
    /// writes its events. Returns false when the request is gone (the stream is then closed).
    func openEventStream(_ head: HTTPResponse, for requestID: UInt64, stream: EventStream) -> Bool
}
