import ArgumentParser
import Foundation
import Yams

extension ServeCommand {
    /// Every option as `(key, value)` in the order `--help` lists them: what `--print-config`
    /// prints and the keys a `--config` file may hold.
    var effectiveConfiguration: [(key: String, value: any Sendable)] {
        [
            ("host", host), ("port", port), ("data-dir", dataDir), ("schema", schema ?? ""),
            ("heartbeat-interval", heartbeatInterval), ("history-limit", historyLimit),
            ("resume-buffer", resumeBuffer), ("snapshot-interval", snapshotInterval), ("loops", loops),
            ("max-body-bytes", maxBodyBytes), ("max-header-bytes", maxHeaderBytes), ("max-fragments", maxFragments),
            ("max-objects", maxObjects), ("header-timeout", headerTimeout), ("idle-timeout", idleTimeout),
            ("max-pending-bytes", maxPendingBytes), ("grace-period", gracePeriod), ("drain-delay", drainDelay),
            ("idempotency-ttl", idempotencyTTL), ("access-log", accessLog), ("log-format", logFormat),
            ("log-level", logLevel),
        ]
    }

    /// The effective configuration as a YAML document a `--config` file can hold as is.
    func effectiveConfigurationYAML() -> String {
        var text = "# jetstream serve: effective configuration"
        if let loaded = ConfigFile.loaded { text += " (file: \(loaded.path))" }
        text += "\n"
        for (key, value) in effectiveConfiguration {
            let scalar: String
            switch value {
            case let string as String:
                // Quoted so that '::', 'true' or '' stay strings.
                scalar = (try? Yams.dump(object: string).trimmingCharacters(in: .whitespacesAndNewlines)) ?? string
            default:
                scalar = "\(value)"
            }
            text += "\(key): \(scalar)\n"
        }
        return text
    }

    /// A `--config` file may only hold option names (a typo must not be silently ignored).
    func validateConfigFile() throws {
        guard let loaded = ConfigFile.loaded else { return }
        let known = Set(effectiveConfiguration.map(\.key))
        let unknown = loaded.values.keys.filter { !known.contains($0) }.sorted()
        guard unknown.isEmpty else {
            throw ValidationError(
                "\(loaded.path): unknown option\(unknown.count == 1 ? "" : "s") \(unknown.joined(separator: ", "))")
        }
    }
}
