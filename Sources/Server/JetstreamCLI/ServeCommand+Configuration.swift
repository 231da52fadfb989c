import ArgumentParser
import Foundation
import Yams

extension ServeCommand {
    /// Every option as `(key, value)` in the order `--help` lists them: what `--print-config`
    /// prints and the keys a `--config` file may hold.
    var effectiveConfiguration: [(key: String, value: any Sendable)] {
        let serve: [(key: String, value: any Sendable)] = [
            ("host", host), ("port", port), ("data-dir", dataDir), ("database-url", redactedDatabaseURL),
            ("database-writers", databaseWriters), ("database-poll-interval", databasePollInterval),
            ("database-timeout", databaseTimeout),
            ("schema", schema ?? ""),
            ("heartbeat-interval", heartbeatInterval), ("history-limit", historyLimit),
            ("resume-buffer", resumeBuffer), ("snapshot-interval", snapshotInterval),
            ("max-presence-members", maxPresenceMembers), ("loops", loops),
            ("max-body-bytes", maxBodyBytes), ("max-header-bytes", maxHeaderBytes), ("max-fragments", maxFragments),
            ("max-objects", maxObjects), ("header-timeout", headerTimeout), ("idle-timeout", idleTimeout),
            ("min-body-rate", minBodyRate), ("max-connections", effectiveMaxConnections),
            ("max-buffered-body-bytes", maxBufferedBodyBytes), ("max-unsent-bytes", maxUnsentBytes),
            ("max-pending-bytes", maxPendingBytes), ("grace-period", gracePeriod), ("drain-delay", drainDelay),
            ("methods", methods.joined(separator: ",")), ("method-timeout", methodTimeout),
            ("idempotency-ttl", idempotencyTTL), ("access-log", accessLog), ("log-format", logFormat),
            ("log-level", logLevel),
        ]
        return serve + accessConfiguration
    }

    /// The database URL with any password replaced by `***` (printed configurations end up in
    /// tickets and logs).
    var redactedDatabaseURL: String {
        guard let url = databaseURL else { return "" }
        var text = url.replacing(#/(password\s*=\s*)('[^']*'|\S+)/#) { "\($0.output.1)***" }
        text = text.replacing(#/^(postgres(?:ql)?://[^:/@?]*):[^@/?]*@/#) { "\($0.output.1):***@" }
        return text.replacing(#/([?&]password=)[^&]*/#) { "\($0.output.1)***" }
    }

    /// The auth, CORS, proxy and limit options; a repeatable option is one comma-separated value
    /// (`trusted-proxy: "10.0.0.0/8, fd00::/8"`), as in its environment variable.
    private var accessConfiguration: [(key: String, value: any Sendable)] {
        let access = accessOptions
        let jwtSecretFile: String = access.jwtSecretFile ?? ""
        let jwtIssuer: String = access.jwtIssuer ?? ""
        let jwtAudience: String = access.jwtAudience ?? ""
        var rateBurst: any Sendable = ""
        if let burst = access.rateBurst { rateBurst = burst }
        func list(_ values: [String]) -> String { values.joined(separator: ",") }
        return [
            ("jwt-secret-file", jwtSecretFile), ("jwt-public-key", list(access.jwtPublicKey)),
            ("jwks-file", list(access.jwksFile)), ("jwt-issuer", jwtIssuer), ("jwt-audience", jwtAudience),
            ("anonymous-read", list(access.anonymousRead)), ("anonymous-write", list(access.anonymousWrite)),
            ("cors-origin", list(access.corsOrigin)), ("cors-credentials", access.corsCredentials),
            ("trusted-proxy", list(access.trustedProxy)), ("rate-limit", access.rateLimit), ("rate-burst", rateBurst),
            ("max-streams-per-client", access.maxStreamsPerClient), ("max-streams", access.maxStreams),
            ("max-scopes-per-stream", access.maxScopesPerStream),
            ("stream-max-age", access.streamMaxAge),
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
