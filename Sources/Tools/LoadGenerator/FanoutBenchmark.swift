/// Runs `jetstream bench fanout`: subscribers first, then the writers, then waits until every
/// subscriber has every accepted version (or the timeout), and joins the two sides by
/// (scope, version): latency is event parsed − POST sent.
///
/// ```swift
/// let settings = BenchSettings(target: try BenchTarget(url: "http://127.0.0.1:8080"), threads: 2,
///                              sources: SourceAddresses(count: 4), timeoutSeconds: 120)
/// let result = try FanoutBenchmark(FanoutConfiguration(subscribers: 1000), settings: settings).run()
/// print(result.table)
/// ```
public struct FanoutBenchmark: Sendable {
    public let configuration: FanoutConfiguration
    public let settings: BenchSettings

    public init(_ configuration: FanoutConfiguration, settings: BenchSettings) {
        self.configuration = configuration
        self.settings = settings
    }

    public func run() throws -> FanoutResult {
        let c = configuration
        let start = MonotonicClock.now()
        let deadline = settings.deadline(from: start)
        let client = BlockingHTTPClient(target: settings.target)
        let writeTarget = c.writeTarget ?? settings.target
        if let other = c.writeTarget {
            // Created on the writers' node; the subscribers' node must have loaded it too.
            let writeClient = BlockingHTTPClient(target: other)
            for index in 0..<max(1, c.scopes) {
                _ = try ScopeFixture.prepare(
                    name: "\(c.scopePrefix)\(index)", rootClass: c.rootClass, client: writeClient)
                try ScopeFixture.awaitVisible(name: "\(c.scopePrefix)\(index)", client: client, until: deadline)
            }
        }
        let scopes = try (0..<max(1, c.scopes)).map {
            try ScopeFixture.prepare(name: "\(c.scopePrefix)\($0)", rootClass: c.rootClass, client: client)
        }
        let layout = StreamScopes(count: scopes.count, perStream: c.scopesPerStream)
        var result = FanoutResult(target: settings.target.description, configuration: c)
        let counters = BenchCounters()

        let loopCount = min(settings.threads, max(1, c.subscribers))
        let groups = (0..<loopCount).map {
            SubscriberGroup(
                loopIndex: $0, loopCount: loopCount, subscribers: c.subscribers, scopes: scopes, layout: layout,
                authority: settings.target.authority, resume: true, counters: counters)
        }
        let perScope = Double(c.subscribers * layout.width) / Double(scopes.count)
        for group in groups { group.reserve(deliveries: Int(Double(c.changeSets) * perScope / Double(loopCount)) + 64) }
        let loops = try groups.map { group in
            let loop = try ClientLoop(index: group.loopIndex, target: settings.target, sources: settings.sources)
            loop.onStart = { loop in for tag in group.tags { loop.connect(tag: tag, delegate: group) } }
            return loop
        }
        let threads = loops.map { loop in BackgroundThread { loop.run() } }

        // 1. Every stream answered (or failed).
        var ticker = ProgressTicker(started: start)
        result.timedOut = !ticker.wait(
            until: deadline,
            report: { elapsed in
                settings.progress(
                    "fanout \(ReportFormatting.fixed(elapsed, 0))s: connecting \(counters.value(.connected))/\(c.subscribers) streams"
                )
            },
            isDone: { counters.value(.connected) + counters.value(.failedConnections) >= c.subscribers })
        let connectedAt = MonotonicClock.now()
        result.connectSeconds = Double(connectedAt - start) / 1e9

        // 2. The writers.
        let writerGroup = WriterGroup(
            writers: max(1, c.writers), scopes: scopes, total: c.changeSets, rate: c.rate,
            authority: writeTarget.authority, property: c.property, insertInto: c.insertInto, counters: counters)
        let writerLoop = try ClientLoop(index: loopCount, target: writeTarget, sources: SourceAddresses(count: 1))
        writerLoop.tickMilliseconds = 1
        var writersReady = false
        writerLoop.onStart = { loop in
            for tag in 0..<max(1, c.writers) { loop.connect(tag: tag, delegate: writerGroup) }
        }
        writerLoop.onTick = { _, now in
            if !writersReady {
                writersReady = writerGroup.hasConnectedWriter
                if !writersReady { return }
            }
            writerGroup.sendDue(now: now)
        }
        let writerThread: BackgroundThread? = result.timedOut ? nil : BackgroundThread { writerLoop.run() }
        if writerThread != nil {
            let written = ticker.wait(
                until: deadline,
                report: { elapsed in
                    settings.progress(
                        "fanout \(ReportFormatting.fixed(elapsed, 0))s: sent \(counters.value(.sent))/\(c.changeSets), answered \(counters.value(.answered)), deliveries \(ReportFormatting.grouped(counters.value(.events)))"
                    )
                },
                isDone: { counters.writersFinished })
            if !written { result.timedOut = true }
        }
        writerLoop.stop()
        writerThread?.join()

        // 3. Wait for the deliveries the accepted change sets imply.
        let subscribersPerScope = layout.subscribersPerScope(c.subscribers)
        let acceptedPerScope = writerGroup.posts.reduce(into: Array(repeating: 0, count: scopes.count)) {
            if $1.status == 200 && $1.version != nil { $0[$1.scope] += 1 }
        }
        let liveSubscribers = counters.value(.connected)
        let expected = zip(acceptedPerScope, subscribersPerScope).map { $0 * $1 }.reduce(0, +)
        let delivered = ticker.wait(
            until: deadline,
            report: { elapsed in
                settings.progress(
                    "fanout \(ReportFormatting.fixed(elapsed, 0))s: deliveries \(ReportFormatting.grouped(counters.value(.events)))/\(ReportFormatting.grouped(expected))"
                )
            },
            isDone: { counters.value(.events) >= expected * liveSubscribers / max(1, c.subscribers) })
        if !delivered { result.timedOut = true }
        ProgressTicker.sleep(milliseconds: 100)  // late duplicates, if any, would arrive now
        for loop in loops { loop.stop() }
        for thread in threads { thread.join() }

        FanoutAnalysis(
            scopes: scopes, layout: layout, subscribers: c.subscribers, posts: writerGroup.posts, groups: groups
        )
        .fill(&result, writerErrors: writerGroup.errors, expected: expected)
        return result
    }
}

/// `jetstream bench fanout`: S subscribers on K scopes, M change sets at R per second from W writers.
public struct FanoutConfiguration: Sendable {
    public var subscribers: Int
    public var scopes: Int
    public var changeSets: Int
    public var rate: Double
    public var writers: Int
    public var scopePrefix: String
    public var rootClass: String
    /// The root's string property each change set sets.
    public var property: String
    /// Instead of setting `property`, each change set adds an object of this class and inserts it
    /// at the end of the root's collection of this name: `(collection, elementClass)`.
    public var insertInto: (collection: String, elementClass: String)?
    /// Where the writers POST when it is not where the subscribers listen: another node sharing
    /// the same database, to measure delivery across nodes.
    public var writeTarget: BenchTarget?
    /// Scopes on each subscriber's one `GET /v1/events` stream (at most `scopes`), or nil for a
    /// `GET /v1/scopes/{name}/events` stream per subscriber (see ``StreamScopes``).
    public var scopesPerStream: Int?

    public init(
        subscribers: Int = 1000, scopes: Int = 1, changeSets: Int = 1000, rate: Double = 100, writers: Int = 4,
        scopePrefix: String = "canvas-bench-", rootClass: String = "Canvas", property: String = "name"
    ) {
        self.subscribers = subscribers
        self.scopes = scopes
        self.changeSets = changeSets
        self.rate = rate
        self.writers = writers
        self.scopePrefix = scopePrefix
        self.rootClass = rootClass
        self.property = property
    }
}
