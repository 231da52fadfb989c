import Synchronization

/// A callback that is set once it is known and called from any thread: a shared store's listener
/// hands its notices to the engine through one.
///
/// Not a `Mutex` around the closure itself: reading a closure out with `withLock { $0 }` writes it
/// back through the generic `inout`, re-wrapped in a reabstraction thunk, so every call went one
/// frame deeper than the one before. A node's listener, at thousands of notices a second, spent
/// most of its time walking that chain, and would in time have overflowed its thread's stack.
/// The slot keeps a class reference instead, and reading a reference wraps nothing.
///
/// ```swift
/// let onNotice = CallbackSlot<ChangeNotice>()
/// onNotice.set { notice in follower.enqueue(notice) }
/// onNotice(.everything)          // nothing happens while no callback is set
/// ```
public final class CallbackSlot<Argument>: Sendable {
    private final class Callback: Sendable {
        let call: @Sendable (Argument) -> Void
        init(_ call: @escaping @Sendable (Argument) -> Void) { self.call = call }
    }

    private let current = Mutex<Callback?>(nil)

    public init() {}

    /// Whether a callback is set.
    public var isSet: Bool { current.withLock { $0 != nil } }

    /// Sets (or replaces) the callback.
    public func set(_ callback: @escaping @Sendable (Argument) -> Void) {
        let boxed = Callback(callback)
        current.withLock { $0 = boxed }
    }

    /// Calls the callback with `argument`, outside the lock; does nothing while none is set.
    public func callAsFunction(_ argument: Argument) {
        current.withLock { $0 }?.call(argument)
    }
}
