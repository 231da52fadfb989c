import NIOCore

/// One SSE subscriber's view of a scope: the bytes to send first (retry, then a snapshot, a reset
/// or the change sets it missed) and the live change sets that follow them.
struct Subscription: Sendable {
    let initial: ByteBuffer
    let events: AsyncStream<ByteBuffer>
    let continuation: AsyncStream<ByteBuffer>.Continuation

    /// Ends the live stream (the client went away); the scope forgets the subscriber.
    func cancel() {
        continuation.finish()
    }
}
