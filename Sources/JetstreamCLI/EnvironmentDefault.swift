import Foundation

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
