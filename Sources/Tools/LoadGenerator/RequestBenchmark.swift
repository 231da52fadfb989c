/// Runs `jetstream bench write` / `read`: every connection sends back-to-back until the duration
/// is over, then finishes its last request.
///
/// ```swift
/// let configuration = RequestConfiguration(workload: .read(path: "/v1/scopes/demo"), connections: 64)
/// let result = try RequestBenchmark(configuration, settings: settings).run()
/// print(result.requestsPerSecond)
/// ```
public struct RequestBenchmark: Sendable {
    public let configuration: RequestConfiguration
    public let settings: BenchSettings

    public init(_ configuration: RequestConfiguration, settings: BenchSettings) {
        self.configuration = configuration
        self.settings = settings
    }

    public func run() throws -> RequestResult {
        let c = configuration
        let target = settings.target
        var result = RequestResult(target: target.description, mode: c.mode, connections: c.connections)
        let makeRequest: @Sendable (Int, Int) -> [UInt8]
        switch c.workload {
        case .write(let scopeCount, let prefix, let rootClass, let property, let method):
            let client = BlockingHTTPClient(target: target)
            let scopes = try (0..<max(1, scopeCount)).map {
                try ScopeFixture.prepare(name: "\(prefix)\($0)", rootClass: rootClass, client: client)
            }
            result.scopes = scopes.count
            makeRequest = { tag, sequence in
                let scope = scopes[tag % scopes.count]
                let value = "bench c\(tag) #\(sequence)"
                if let method {
                    return scope.methodRequest(
                        method, body: Array(#"{"args":{"\#(property)":"\#(value)"}}"#.utf8),
                        authority: target.authority)
                }
                return scope.postRequest(
                    scope.renameRootBody(property: property, value: value), authority: target.authority)
            }
        case .read(let path):
            result.path = path
            let request = Array("GET \(path) HTTP/1.1\r\nHost: \(target.authority)\r\n\r\n".utf8)
            makeRequest = { _, _ in request }
        }

        let start = MonotonicClock.now()
        let deadline = start + UInt64(c.durationSeconds * 1e9)
        let hardDeadline = min(settings.deadline(from: start), deadline + 10_000_000_000)
        let counters = BenchCounters()
        let loopCount = min(settings.threads, max(1, c.connections))
        let groups = (0..<loopCount).map {
            RequesterGroup(
                loopIndex: $0, loopCount: loopCount, connections: c.connections, deadline: deadline,
                counters: counters, makeRequest: makeRequest)
        }
        let loops = try groups.map { group in
            let loop = try ClientLoop(index: group.loopIndex, target: target, sources: settings.sources)
            loop.onStart = { loop in for tag in group.tags { loop.connect(tag: tag, delegate: group) } }
            loop.onTick = { loop, now in
                if group.isFinished || now >= hardDeadline { loop.stop() }
            }
            return loop
        }
        let threads = loops.map { loop in BackgroundThread { loop.run() } }
        var ticker = ProgressTicker(started: start)
        while loops.contains(where: { !$0.isStopRequested }) {
            if let elapsed = ticker.due(at: MonotonicClock.now()) {
                settings.progress(
                    "\(c.mode) \(ReportFormatting.fixed(elapsed, 0))s: \(ReportFormatting.grouped(counters.value(.requests))) requests"
                )
            }
            ProgressTicker.sleep(milliseconds: 10)
        }
        for thread in threads { thread.join() }

        var lastAnswer: UInt64 = 0
        var firstSend = UInt64.max
        for group in groups {
            result.latency.merge(group.latency)
            for (status, count) in group.statuses { result.statuses[status, default: 0] += count }
            for (reason, count) in group.errors { result.errors[reason, default: 0] += count }
            result.bytesPerResponse = max(result.bytesPerResponse, group.responseBytes)
            lastAnswer = max(lastAnswer, group.lastAnswer)
            firstSend = min(firstSend, group.firstSend)
        }
        if firstSend != .max && lastAnswer > firstSend { result.durationSeconds = Double(lastAnswer - firstSend) / 1e9 }
        return result
    }
}

/// `jetstream bench write` and `read`: C keep-alive connections sending requests back-to-back
/// for a fixed time.
public struct RequestConfiguration: Sendable {
    public enum Workload: Sendable {
        /// POST change sets; connection i writes to scope i % scopes. With `method`, each request
        /// calls that server method instead (`POST …/methods/{method}` with
        /// `{"args":{"<property>":"…"}}`), for comparing a method with the equivalent change set.
        case write(scopes: Int, scopePrefix: String, rootClass: String, property: String, method: String? = nil)
        /// GET `path`.
        case read(path: String)
    }

    public var workload: Workload
    public var connections: Int
    public var durationSeconds: Double

    public init(workload: Workload, connections: Int = 32, durationSeconds: Double = 10) {
        self.workload = workload
        self.connections = connections
        self.durationSeconds = durationSeconds
    }

    var mode: String {
        switch workload {
        case .write: "write"
        case .read: "read"
        }
    }
}
