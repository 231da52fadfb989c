import Foundation
import Yams

/// The `--config FILE.yaml` layer of `jetstream serve`: a flat YAML mapping whose keys are the
/// long option names (`port: 8080`, `heartbeat-interval: 5`, `access-log: false`). Precedence is
/// flags > `JETSTREAM_*` environment > this file > built-in defaults; ``EnvironmentDefault``
/// consults it after the environment.
///
/// ```yaml
/// host: "::"
/// port: 8080
/// data-dir: /var/lib/jetstream
/// idempotency-ttl: 604800
/// ```
enum ConfigFile {
    /// The file named by `--config` (or `JETSTREAM_CONFIG`), loaded once; exits 78 (EX_CONFIG)
    /// with a message naming the problem when it cannot be read or is not a flat mapping.
    static let loaded: (path: String, values: [String: String])? = {
        guard let path = path(arguments: CommandLine.arguments) else { return nil }
        do {
            return (path, try values(yaml: String(contentsOfFile: path, encoding: .utf8)))
        } catch let error as ConfigFileError {
            fail("\(path): \(error.message)")
        } catch {
            fail("cannot read the configuration file \(path): \(error.localizedDescription)")
        }
    }()

    struct ConfigFileError: Error {
        let message: String
    }

    /// The value for an option, by its environment variable (`JETSTREAM_MAX_BODY_BYTES` → key
    /// `max-body-bytes`).
    static func value(forEnvironment name: String) -> String? {
        loaded?.values[key(forEnvironment: name)]
    }

    static func key(forEnvironment name: String) -> String {
        name.dropFirst("JETSTREAM_".count).lowercased().replacingOccurrences(of: "_", with: "-")
    }

    /// `--config PATH`, `--config=PATH`, else `JETSTREAM_CONFIG`.
    static func path(arguments: [String]) -> String? {
        for (index, argument) in arguments.enumerated() {
            if argument == "--config", index + 1 < arguments.count { return arguments[index + 1] }
            if argument.hasPrefix("--config=") { return String(argument.dropFirst("--config=".count)) }
        }
        return EnvironmentDefault.environment("JETSTREAM_CONFIG")
    }

    /// The scalars of a flat YAML mapping, as their text; an empty document is an empty mapping.
    static func values(yaml: String) throws(ConfigFileError) -> [String: String] {
        let node: Node?
        do {
            node = try Yams.compose(yaml: yaml)
        } catch {
            throw ConfigFileError(message: "not valid YAML: \(error)")
        }
        guard let node else { return [:] }
        guard let mapping = node.mapping else {
            throw ConfigFileError(message: "the configuration must be a mapping of option names to values")
        }
        var values: [String: String] = [:]
        for (key, value) in mapping {
            guard let name = key.scalar?.string else {
                throw ConfigFileError(message: "keys must be option names (line \(key.mark?.line ?? 0))")
            }
            guard let scalar = value.scalar else {
                throw ConfigFileError(message: "'\(name)' must be a single value, not a list or mapping")
            }
            values[name] = scalar.string
        }
        return values
    }

    static func fail(_ message: String) -> Never {
        FileHandle.standardError.write(Data("jetstream: \(message)\n".utf8))
        exit(78)
    }
}

/// Option defaults from `JETSTREAM_*` environment variables, then from the `--config` file
/// (``ConfigFile``), so every flag of `jetstream serve` can also be set from the environment or
/// the file (a flag on the command line wins, the environment beats the file).
///
/// ```swift
/// @Option var port: Int = EnvironmentDefault.value("JETSTREAM_PORT", 8080)
/// ```
enum EnvironmentDefault {
    static func environment(_ name: String) -> String? {
        guard let value = ProcessInfo.processInfo.environment[name], !value.isEmpty else { return nil }
        return value
    }

    static func string(_ name: String) -> String? {
        environment(name) ?? ConfigFile.value(forEnvironment: name).flatMap { $0.isEmpty ? nil : $0 }
    }

    static func value<T: LosslessStringConvertible>(_ name: String, _ fallback: T) -> T {
        if let text = environment(name) {
            guard let parsed = T(text) else {
                // A typo in a deployment's environment must not silently become the default.
                FileHandle.standardError.write(Data("jetstream: \(name)=\(text) is not a valid \(T.self)\n".utf8))
                exit(64)
            }
            return parsed
        }
        guard let text = ConfigFile.value(forEnvironment: name) else { return fallback }
        guard let parsed = T(text) else {
            ConfigFile.fail(
                "\(ConfigFile.loaded?.path ?? "config"): \(ConfigFile.key(forEnvironment: name)): \(text) is not a valid \(T.self)"
            )
        }
        return parsed
    }
}
