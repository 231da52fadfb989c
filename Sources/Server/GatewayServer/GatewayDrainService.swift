import ScopeEngine
import ServiceLifecycle

/// A service that drains the gateway on graceful shutdown. Put it AFTER the HTTP server in the
/// `ServiceGroup` (services shut down in reverse order): on SIGTERM it turns readiness false and
/// ends every event stream with `event: closing`, waits `drainDelay` (load balancers see the 503
/// and stop routing here; new streams are told `closing` at once), and only then returns, so the
/// server stops accepting and lets requests in flight finish within its grace period.
///
/// ```swift
/// let group = ServiceGroup(
///     services: [server, GatewayDrainService(engine: engine, drainDelay: .seconds(5))],
///     gracefulShutdownSignals: [.sigterm], logger: logger)
/// ```
public struct GatewayDrainService: Service {
    public let engine: ScopeEngine
    public let drainDelay: Duration

    public init(engine: ScopeEngine, drainDelay: Duration = .zero) {
        self.engine = engine
        self.drainDelay = drainDelay
    }

    public func run() async throws {
        // Returns on graceful shutdown; throws on cancellation (then there is nothing to drain).
        do {
            try await gracefulShutdown()
        } catch {
            return
        }
        engine.beginDrain()
        if drainDelay > .zero {
            try? await Task.sleep(for: drainDelay)
        }
    }
}
