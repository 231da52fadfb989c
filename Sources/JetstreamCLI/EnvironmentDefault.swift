import Foundation

/// Option defaults from `JETSTREAM_*` environment variables, so every flag of `jetstream serve`
/// can also be set from the environment (a flag on the command line wins).
///
/// ```swift
/// @Option var port: Int = EnvironmentDefault.value("JETSTREAM_PORT", 8080)
/// ```
enum EnvironmentDefault {
    static func string(_ name: String) -> String? {
        guard let value = ProcessInfo.processInfo.environment[name], !value.isEmpty else { return nil }
        return value
    }

    static func value<T: LosslessStringConvertible>(_ name: String, _ fallback: T) -> T {
        guard let text = string(name) else { return fallback }
        guard let parsed = T(text) else {
            // A typo in a deployment's environment must not silently become the default.
            FileHandle.standardError.write(Data("jetstream: \(name)=\(text) is not a valid \(T.self)\n".utf8))
            exit(64)
        }
        return parsed
    }
}
