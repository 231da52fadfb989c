/// Runs `jetstream bench presence`: S subscribers on one scope, then M members each sending R
/// updates a second for T seconds (a presence `PUT`, or with `asChangeSets` a one-fragment change
/// set `POST`), then waits until every subscriber has every accepted update (or the timeout).
/// Latency is update sent → event parsed, joined by the mark each update carries.
///
/// ```swift
/// let configuration = PresenceConfiguration(members: 200, ratePerMember: 10, subscribers: 100)
/// let result = try PresenceBenchmark(configuration, settings: settings).run()
/// print(result.table)
/// ```
public struct PresenceBenchmark: Sendable {
    public let configuration: PresenceConfiguration
    public let settings: BenchSettings

    public init(_ configuration: PresenceConfiguration, settings: BenchSettings) {
        self.configuration = configuration
        self.settings = settings
    }

    public func run() throws -> PresenceResult {
        let c = configuration
        let start = MonotonicClock.now()
        let deadline = settings.deadline(from: start)
        let client = BlockingHTTPClient(target: settings.target)
        let scope = try ScopeFixture.prepare(name: c.scope, rootClass: c.rootClass, client: client)
        // Tells this run's marks from those of an earlier run against the same server.
        let run = Int.random(in: 1...999_999_999)
        var result = PresenceResult(target: settings.target.description, configuration: c)
        let counters = BenchCounters()

        let loopCount = min(settings.threads, max(1, c.subscribers))
        let eventType = c.asChangeSets ? "changeset" : "presence"
        let groups = (0..<loopCount).map {
            PresenceSubscriberGroup(
                loopIndex: $0, loopCount: loopCount, subscribers: c.subscribers, scope: scope,
                authority: settings.target.authority, run: run, eventType: eventType, counters: counters)
        }
        let total = c.members * c.updatesPerMember
        for group in groups { group.reserve(deliveries: total * c.subscribers / loopCount + 64) }
        let loops = try groups.map { group in
            let loop = try ClientLoop(index: group.loopIndex, target: settings.target, sources: settings.sources)
            loop.onStart = { loop in for tag in group.tags { loop.connect(tag: tag, delegate: group) } }
            return loop
        }
        let threads = loops.map { loop in BackgroundThread { loop.run() } }

        var ticker = ProgressTicker(started: start)
        result.timedOut = !ticker.wait(
            until: deadline,
            report: { elapsed in
                settings.progress(
                    "presence \(ReportFormatting.fixed(elapsed, 0))s: connecting \(counters.value(.connected))/\(c.subscribers) streams"
                )
            },
            isDone: { counters.value(.connected) + counters.value(.failedConnections) >= c.subscribers })
        result.connectSeconds = Double(MonotonicClock.now() - start) / 1e9

        let updaters = PresenceUpdaterGroup(
            configuration: c, scope: scope, authority: settings.target.authority, run: run, counters: counters)
        let updaterLoop = try ClientLoop(index: loopCount, target: settings.target, sources: SourceAddresses(count: 1))
        updaterLoop.tickMilliseconds = 1
        var ready = false
        updaterLoop.onStart = { loop in for tag in 0..<c.members { loop.connect(tag: tag, delegate: updaters) } }
        updaterLoop.onTick = { _, now in
            // The schedule starts once every member is connected, not while they connect.
            if !ready {
                ready = updaters.allConnected
                if !ready { return }
            }
            updaters.sendDue(now: now)
        }
        let updaterThread: BackgroundThread? = result.timedOut ? nil : BackgroundThread { updaterLoop.run() }
        if updaterThread != nil {
            let sent = ticker.wait(
                until: deadline,
                report: { elapsed in
                    settings.progress(
                        "presence \(ReportFormatting.fixed(elapsed, 0))s: sent \(counters.value(.sent))/\(total), answered \(counters.value(.answered)), deliveries \(ReportFormatting.grouped(counters.value(.events)))"
                    )
                },
                isDone: { counters.writersFinished })
            if !sent { result.timedOut = true }
        }
        updaterLoop.stop()
        updaterThread?.join()

        let updates = updaters.updates
        let accepted = updates.joined().filter { (200..<300).contains($0.status) }.count
        let expected = accepted * c.subscribers
        let live = counters.value(.connected)
        let delivered = ticker.wait(
            until: deadline,
            report: { elapsed in
                settings.progress(
                    "presence \(ReportFormatting.fixed(elapsed, 0))s: deliveries \(ReportFormatting.grouped(counters.value(.events)))/\(ReportFormatting.grouped(expected))"
                )
            },
            isDone: { counters.value(.events) >= accepted * live })
        if !delivered { result.timedOut = true }
        ProgressTicker.sleep(milliseconds: 100)  // late duplicates, if any, would arrive now
        for loop in loops { loop.stop() }
        for thread in threads { thread.join() }

        result.fill(updates: updates, groups: groups, updateErrors: updaters.errors)
        if !c.asChangeSets { leave(client: client, updates: updates) }
        return result
    }

    /// Removes the members this run made, so the next run's subscribers start with nobody present.
    private func leave(client: BlockingHTTPClient, updates: [[PresenceUpdaterGroup.Update]]) {
        for member in updates.indices where updates[member].contains(where: { (200..<300).contains($0.status) }) {
            _ = try? client.request(
                "DELETE", "/v1/scopes/\(configuration.scope)/presence/\(configuration.clientPrefix)\(member)")
        }
    }
}

/// `jetstream bench presence`: M members at R updates/s each for T seconds, S subscribers.
public struct PresenceConfiguration: Sendable {
    public var members: Int
    public var ratePerMember: Double
    public var durationSeconds: Double
    public var subscribers: Int
    public var scope: String
    public var rootClass: String
    /// Presence client ids are this prefix and the member's number.
    public var clientPrefix: String
    public var ttlSeconds: Int
    /// Each update is a change set setting the root's `property`, instead of a presence `PUT`.
    public var asChangeSets: Bool
    public var property: String

    public init(
        members: Int = 200, ratePerMember: Double = 10, durationSeconds: Double = 10, subscribers: Int = 100,
        scope: String = "canvas-presence-bench", rootClass: String = "Canvas", clientPrefix: String = "bench-",
        ttlSeconds: Int = 60, asChangeSets: Bool = false, property: String = "name"
    ) {
        self.members = members
        self.ratePerMember = ratePerMember
        self.durationSeconds = durationSeconds
        self.subscribers = subscribers
        self.scope = scope
        self.rootClass = rootClass
        self.clientPrefix = clientPrefix
        self.ttlSeconds = ttlSeconds
        self.asChangeSets = asChangeSets
        self.property = property
    }

    /// Updates each member sends: at least one.
    public var updatesPerMember: Int { max(1, Int((durationSeconds * ratePerMember).rounded())) }
}
