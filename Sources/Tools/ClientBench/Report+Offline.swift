import JetstreamModel

/// The `offline` section in the report: the storage's size, starts from it, `saved()` per local
/// change, and the replay of sets made offline.
extension Report {
    mutating func checkOffline() {
        guard let offline else { return }
        failures += offline.failures.map { "offline: \($0)" }
    }

    func offlineJSON(_ offline: OfflineResult) -> JSONValue {
        func milliseconds(_ values: [Double]) -> JSONValue {
            [
                "runs": .array(values.map { Measure.number($0) }),
                "median": Measure.number(Measure.percentile(values, 0.5)),
            ]
        }
        func micros(_ values: [Double]) -> JSONValue {
            [
                "count": Measure.number(values.count), "p50": Measure.number(Measure.percentile(values, 0.5)),
                "p99": Measure.number(Measure.percentile(values, 0.99)), "mean": Measure.number(Measure.mean(values)),
                "max": Measure.number(values.max() ?? 0),
            ]
        }
        let replay = offline.replay
        var files = JSONObject()
        for (name, bytes) in offline.files.sorted(by: { $0.key < $1.key }) {
            files.appendUnchecked(key: name, value: Measure.number(bytes))
        }
        return [
            "objects": Measure.number(offline.objects), "storageBytes": Measure.number(offline.storageBytes),
            "bytesPerObject": Measure.number(offline.bytesPerObject, 1), "files": .object(files),
            "firstFetchMs": Measure.number(offline.firstFetchMs), "firstStopMs": Measure.number(offline.firstStopMs),
            "serverFetchMs": milliseconds(offline.serverFetchMs), "coldStartUpMs": milliseconds(offline.coldUpMs),
            "coldStartDownMs": milliseconds(offline.coldDownMs), "downStatus": .string(offline.downStatus),
            "savedMicros": micros(offline.savedMicros), "flushMicros": micros(offline.flushMicros),
            "replay": [
                "sets": Measure.number(replay.sets), "savedMs": Measure.number(replay.savedMs),
                "fetchMs": Measure.number(replay.fetchMs), "seconds": Measure.number(replay.seconds, 4),
                "setsPerSecond": Measure.number(replay.setsPerSecond, 0),
                "versionBefore": Measure.number(replay.versionBefore),
                "versionAfter": Measure.number(replay.versionAfter),
                "logged": Measure.number(replay.logged), "distinctKeys": Measure.number(replay.distinctKeys),
                "valueMismatches": Measure.number(replay.valueMismatches),
            ],
        ]
    }

    func offlineMarkdown(_ offline: OfflineResult) -> [String] {
        func runs(_ values: [Double]) -> String {
            "**\(Measure.format(Measure.percentile(values, 0.5))) ms** ("
                + values.map { Measure.format($0) }.joined(separator: ", ") + ")"
        }
        func micros(_ name: String, _ values: [Double]) -> String {
            "| \(name) | \(values.count) | \(Measure.format(Measure.percentile(values, 0.5))) | "
                + "\(Measure.format(Measure.percentile(values, 0.99))) | \(Measure.format(Measure.mean(values))) | "
                + "\(Measure.format(values.max() ?? 0)) |"
        }
        let replay = offline.replay
        let files = offline.files.sorted { $0.key < $1.key }.map { "\($0.key) \(Measure.grouped($0.value))" }
        return [
            "",
            "| storage (`Client(url:storage: .directory(…))`), \(Measure.grouped(offline.objects)) objects | figure |",
            "|---|---|",
            "| the scope's folder after a stop | **\(Measure.grouped(offline.storageBytes)) bytes** "
                + "(\(Measure.format(offline.bytesPerObject)) per object; \(files.joined(separator: ", "))) |",
            "| first fetch with storage (server's state, then the whole copy written); its stop | "
                + "\(Measure.format(offline.firstFetchMs)) ms; \(Measure.format(offline.firstStopMs)) ms |",
            "| `fetch` without storage (from the server), median (runs) | \(runs(offline.serverFetchMs)) |",
            "| `fetch` from storage, server up, median (runs) | \(runs(offline.coldUpMs)) |",
            "| `fetch` from storage, server down (`http://127.0.0.1:1`), median (runs) | "
                + "\(runs(offline.coldDownMs)); status `\(offline.downStatus)` at the return, then `reconnecting` |",
            "",
            "| a local change of one shape's `x` | changes | p50 µs | p99 µs | mean µs | max µs |",
            "|---|---:|---:|---:|---:|---:|",
            micros("the change, then `try await sync.saved()` (journal write, fsync)", offline.savedMicros),
            micros("the change, then `scope.flush()` only (no wait for the disk)", offline.flushMicros),
            "",
            "Replay: \(Measure.grouped(replay.sets)) change sets made with the server unreachable, saved "
                + "(\(Measure.format(replay.savedMs)) ms, with the stop); a stored client on the server's URL fetched "
                + "(\(Measure.format(replay.fetchMs)) ms) and had sent them all, live, after "
                + "**\(Measure.format(replay.seconds, 2)) s** (\(Measure.grouped(Int(replay.setsPerSecond.rounded()))) sets/s). "
                + "Server version \(replay.versionBefore) → \(replay.versionAfter), \(replay.logged) sets logged, "
                + "\(replay.distinctKeys) distinct keys.",
        ]
    }
}
