import ServiceLifecycle

/// A service that runs `announce` once the `ServiceGroup` is running — its signal handlers are
/// installed before any service starts — then waits for shutdown.
///
/// ```swift
/// ServiceGroup(services: [server, StartupAnnouncement { print("listening") }], …)
/// ```
struct StartupAnnouncement: Service {
    let announce: @Sendable () -> Void

    func run() async throws {
        announce()
        try? await gracefulShutdown()
    }
}
