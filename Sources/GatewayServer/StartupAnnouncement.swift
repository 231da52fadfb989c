import HTTPServer
import ServiceLifecycle

/// A service that runs `announce` once the `ServiceGroup` is running and SIGTERM and SIGINT are
/// caught (libdispatch installs the handlers asynchronously; see ``SignalReadiness``), then waits
/// for shutdown.
///
/// ```swift
/// ServiceGroup(services: [server, StartupAnnouncement { print("listening") }], …)
/// ```
struct StartupAnnouncement: Service {
    let announce: @Sendable () -> Void

    func run() async throws {
        await SignalReadiness.wait()
        announce()
        try? await gracefulShutdown()
    }
}
