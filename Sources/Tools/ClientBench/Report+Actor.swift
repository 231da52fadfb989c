import JetstreamModel

/// The `actor` section in the report: the observers' actor's time per `changeset` event with the
/// event read and applied to the confirmed state on it (before) and off it (after).
extension Report {
    mutating func checkActor() {
        guard let actor else { return }
        if actor.reconnects > 0 {
            failures.append("actor: \(actor.reconnects) stream reconnection(s): events were not all delivered live")
        }
        if actor.stateMismatches > 0 {
            failures.append("actor: \(actor.stateMismatches) shapes differ between the two clients or from the server")
        }
        failures += actor.failures.map { "actor: \($0)" }
    }

    func actorJSON(_ actor: ActorResult) -> JSONValue {
        func client(_ client: ActorClientResult) -> JSONValue {
            [
                "preparesEventsOffActor": .bool(client.preparesOffActor), "fetchMs": Measure.number(client.fetchMs),
                "events": Measure.number(client.events), "meanMicros": Measure.number(client.meanMicros),
                "p50Micros": Measure.number(client.p50Micros), "p99Micros": Measure.number(client.p99Micros),
                "maxMicros": Measure.number(client.maxMicros), "totalMs": Measure.number(client.totalMs),
                "fires": Measure.number(client.fires), "version": Measure.number(client.version),
            ]
        }
        return [
            "events": Measure.number(actor.events), "writers": Measure.number(actor.writers),
            "postSeconds": Measure.number(actor.postSeconds), "firstVersion": Measure.number(actor.firstVersion),
            "lastVersion": Measure.number(actor.lastVersion), "expectedFires": Measure.number(actor.expectedFires),
            "onActor": client(actor.onActor), "offActor": client(actor.offActor),
            "meanRatio": Measure.number(actor.meanRatio, 2), "p50Ratio": Measure.number(actor.p50Ratio, 2),
            "stateMismatches": Measure.number(actor.stateMismatches), "reconnects": Measure.number(actor.reconnects),
        ]
    }

    func actorMarkdown(_ actor: ActorResult) -> [String] {
        func row(_ name: String, _ client: ActorClientResult) -> String {
            "| \(name) | \(Measure.grouped(client.events)) | \(Measure.format(client.meanMicros)) | "
                + "\(Measure.format(client.p50Micros)) | \(Measure.format(client.p99Micros)) | "
                + "\(Measure.format(client.maxMicros)) | \(client.fires) (\(actor.expectedFires)) |"
        }
        return [
            "",
            "| observers' actor per `changeset` event, \(options.observers) observers | events | mean µs | p50 µs | p99 µs | max µs | observer fires (expected) |",
            "|---|---:|---:|---:|---:|---:|---|",
            row("parsing on the actor (`preparesEventsOffActor = false`, before)", actor.onActor),
            row("parsing off the actor (the default, after)", actor.offActor),
            "",
            "Before ÷ after: **\(Measure.format(actor.meanRatio, 2))×** (mean), \(Measure.format(actor.p50Ratio, 2))× (p50). "
                + "Writer: \(Measure.grouped(actor.events)) POSTs, \(actor.writers) in flight, "
                + "\(Measure.format(actor.postSeconds, 2)) s; both clients at version \(actor.lastVersion), "
                + "\(actor.stateMismatches) shapes differing.",
        ]
    }
}
