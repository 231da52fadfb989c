import Glibc

/// A joinable POSIX thread running one closure (the load generator's loops are long-lived threads,
/// not tasks, so they never block the cooperative pool).
public final class BackgroundThread: @unchecked Sendable {
    private final class Box {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }

    private var thread = pthread_t()

    /// Starts `body` on a new thread.
    public init(_ body: @escaping @Sendable () -> Void) {
        let box = Unmanaged.passRetained(Box(body)).toOpaque()
        let created = pthread_create(
            &thread, nil,
            { argument in
                let box = Unmanaged<Box>.fromOpaque(argument!).takeRetainedValue()
                box.body()
                return nil
            }, box)
        if created != 0 {
            Unmanaged<Box>.fromOpaque(box).release()
            fatalError("pthread_create failed: \(String(cString: strerror(created)))")
        }
    }

    /// Waits for the closure to return.
    public func join() {
        pthread_join(thread, nil)
    }
}
