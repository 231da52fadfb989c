import ServiceLifecycle

/// Sends the keep-alive comment on every open stream at a fixed interval, from one timer rather
/// than one per stream.
struct KeepAliveService: Service {
    let registry: ScopeRegistry
    let interval: Duration

    func run() async throws {
        do {
            try await cancelWhenGracefulShutdown {
                while true {
                    try await Task.sleep(for: interval)
                    for scope in registry.allScopes() {
                        await scope.keepAlive()
                    }
                }
            }
        } catch is CancellationError {
            // Graceful shutdown.
        }
    }
}
