import ArgumentParser
import Foundation
import Hummingbird
import Logging
import NIOCore

/// `jetstream-reference --host 127.0.0.1 --port 8090`: serves the gateway's benchmarked HTTP subset
/// with Hummingbird 2, in memory, and prints one line on stdout once it accepts connections.
@main
struct ReferenceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "jetstream-reference",
        abstract: "Hummingbird 2 reference implementation of the Jetstream gateway's HTTP subset (in memory).")

    @Option(help: "Address to listen on.")
    var host = "127.0.0.1"

    @Option(help: "Port to listen on (0 picks a free one).")
    var port = 8090

    @Option(help: "Seconds between keep-alive comments on idle event streams.")
    var heartbeatInterval = 15

    @Option(help: "Change sets retained per scope for Last-Event-ID resumption.")
    var historyLimit = 10_000

    @Option(help: "Events queued per stream before a slow subscriber is disconnected.")
    var streamBuffer = 4096

    @Option(help: "Listen backlog (the gateway uses 4096).")
    var backlog = 4096

    @Option(help: "Log level on stderr: trace, debug, info, notice, warning, error, critical.")
    var logLevel = "notice"

    @Flag(help: "Light mode: light change-set checks (class, object, property names, JSON types), a mutex per scope.")
    var light = false

    func run() async throws {
        var logger = Logger(label: "jetstream-reference") { StreamLogHandler.standardError(label: $0) }
        logger.logLevel = Logger.Level(rawValue: logLevel) ?? .notice

        let registry = ScopeRegistry(
            limits: ScopeLimits(historyLimit: historyLimit, streamBufferLimit: streamBuffer), light: light)
        if light {
            logger.notice("light mode: light change-set checks, one mutex per scope")
        }
        // The gateway serves an empty `demo` scope from the start; so does the reference.
        _ = registry.create(
            name: "demo",
            root: ModelObject(uuid: UUID(), modelClass: DemoSchema.canvas, values: DemoSchema.canvas.defaultValues))

        let router = Router()
        router.get("healthz") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "application/json"],
                body: ResponseBody(byteBuffer: ByteBuffer(string: #"{"status":"ok"}"#)))
        }
        ScopeController(registry: registry).addRoutes(to: router.group("v1/scopes"))

        let host = host
        let app = Application(
            router: router,
            configuration: ApplicationConfiguration(
                address: .hostname(host, port: port), serverName: "jetstream-reference", backlog: backlog),
            services: [KeepAliveService(registry: registry, interval: .seconds(heartbeatInterval))],
            onServerRunning: { channel in
                // Scripts wait for this line; written unbuffered so it is seen at once.
                let line = "jetstream-reference listening on http://\(host):\(channel.localAddress?.port ?? 0)\n"
                FileHandle.standardOutput.write(Data(line.utf8))
            },
            logger: logger)
        try await app.runService()
    }
}
