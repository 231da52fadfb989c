import ArgumentParser
import LoadGenerator

/// `jetstream bench presence`: members moving a pointer on one scope, subscribers watching it.
struct BenchPresenceCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "presence",
        abstract: "M members PUT presence R times a second each, S subscribers; PUT-sent → event-parsed latency.",
        discussion: """
            Creates --scope if missing, opens --subscribers streams on it from its version, then \
            each member (client id PREFIX0 … PREFIX(M-1), one keep-alive connection each) sends \
            --rate updates a second for --duration seconds, spread evenly: a presence PUT with a \
            small pointer object, or with --as-change-sets a one-fragment change set POST setting \
            the root's --property. Every subscriber must see every accepted update once, in order \
            per member. The members are DELETEd at the end.
            """)

    @OptionGroup var common: BenchCommonOptions
    @Option(name: .shortAndLong, help: "Members, each on its own keep-alive connection.") var members = 200
    @Option(name: .shortAndLong, help: "Updates per second of each member.") var rate = 10.0
    @Option(name: .shortAndLong, help: "Seconds of updates.") var duration = 10.0
    @Option(name: .shortAndLong, help: "SSE subscribers on the scope.") var subscribers = 100
    @Option(help: "Scope the members are present in (created if missing).") var scope = "canvas-presence-bench"
    @Option(help: "Root class used when the scope has to be created.") var rootClass = "Canvas"
    @Option(help: "Presence client id prefix; member i is PREFIXi.") var clientPrefix = "bench-"
    @Option(help: "Presence ttl in seconds sent with each PUT.") var ttl = 60
    @Flag(help: "Send each update as a one-fragment change set POST instead (to compare).") var asChangeSets = false
    @Option(help: "String property of the root that --as-change-sets sets.") var property = "name"

    func validate() throws {
        guard members >= 1, subscribers >= 1, rate > 0, duration > 0, (1...300).contains(ttl) else {
            throw ValidationError("--members and --subscribers must be ≥ 1, --rate and --duration > 0, --ttl 1…300")
        }
    }

    func run() throws {
        let configuration = PresenceConfiguration(
            members: members, ratePerMember: rate, durationSeconds: duration, subscribers: subscribers, scope: scope,
            rootClass: rootClass, clientPrefix: clientPrefix, ttlSeconds: ttl, asChangeSets: asChangeSets,
            property: property)
        let result = try common.execute { try PresenceBenchmark(configuration, settings: $0).run() }
        try common.finish(json: result.json, table: result.table, clean: result.isClean)
    }
}
